"""The project's dealer over real loopback TCP: deals, traffic, outputs and bad clients.

Expected behaviour is the reference dealer's (project_acpc_server 1.0.42, protocol 2.0.0).
"""

from __future__ import annotations

import argparse
import io
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from acpc_support import (
    DATA,
    GAME,
    GAME_FILE,
    AgentThread,
    ScriptedClient,
    SeatsInOneThread,
    run_dealer,
)

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.dealer import DealerConfig, MatchDealer
from oppmodel.clients.acpc.log import check_log, format_number, parse_log, read_log, seat_totals
from oppmodel.clients.commands import dealer_cmd
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.server.app import free_ports

STAMP = r"\d+\.\d{6}"


def project_agents(policies: tuple[str, ...] = ("n1", "n3", "uniform")):
    def start(ports: tuple[int, ...]) -> list[AgentThread]:
        return [
            AgentThread(port, make_policy(name, GAME, seed))
            for seed, (name, port) in enumerate(zip(policies, ports, strict=True))
        ]

    return start


def scripted(*clients: ScriptedClient | dict):
    """Start one scripted client per seat; a dict gives ScriptedClient keyword arguments."""

    def start(ports: tuple[int, ...]) -> list[ScriptedClient]:
        made = []
        for port, spec in zip(ports, clients, strict=True):
            kwargs = spec if isinstance(spec, dict) else {}
            made.append(ScriptedClient(port, **kwargs).start())
        return made

    return start


REFERENCE_LOG = DATA / "kuhn3p-seed42-example-players.log"
REFERENCE_BETTING = [h.betting for h in read_log(REFERENCE_LOG).hands]


def replay_reference(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
    """Play the action the reference match's player took at this point (as example_player)."""
    return [f"{line}:{REFERENCE_BETTING[state.hand][len(state.betting)]}\n"]


def test_oppmodel_dealer_with_seed_42_reproduces_the_reference_log_byte_for_byte(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # same command line as the reference run, with clients replaying the reference players'
    # actions: the deals, rotation, payoffs, log and SCORE must all come out identical
    monkeypatch.chdir(tmp_path)
    (tmp_path / "kuhn.limit.3p.game").write_text(GAME_FILE.read_text())
    ports = free_ports(3)
    parser = argparse.ArgumentParser()
    dealer_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            *("dealer", "kuhn3p_seed42", "kuhn.limit.3p.game", "3000", "42"),
            *("Alice", "Bob", "Carol", "-q", "-p", ",".join(map(str, ports))),
            *("--start_timeout", "10000"),
        ]
    )
    clients = SeatsInOneThread(tuple(ports), replay_reference)
    assert args.func(args) == 0
    clients.join()
    assert (tmp_path / "kuhn3p_seed42.log").read_text() == REFERENCE_LOG.read_text()
    out = capsys.readouterr()
    assert out.out.splitlines() == [" ".join(map(str, ports)), "SCORE:-108|66|42:Alice|Bob|Carol"]
    assert out.err.splitlines() == [
        "# name/game/hands/seed kuhn3p_seed42 kuhn.limit.3p.game 3000 42",
        "#--t_response 600000",
        "#--t_hand 600000",
        "#--t_per_hand 7000",
        "SCORE:-108|66|42:Alice|Bob|Carol",
    ]


CAPTURED_TRAFFIC = """\
TO 1 at 1795640679.738432 MATCHSTATE:0:0::Ks||
TO 2 at 1795640679.738459 MATCHSTATE:1:0::|As|
TO 3 at 1795640679.738475 MATCHSTATE:2:0::||Js
FROM 1 at 1795640679.738528 MATCHSTATE:0:0::Ks||:c
TO 1 at 1795640679.738548 MATCHSTATE:0:0:c:Ks||
FROM 2 at 1795640679.738595 MATCHSTATE:1:0:c:|As|:c
FROM 3 at 1795640679.738669 MATCHSTATE:2:0:cc:||Js:r
FROM 1 at 1795640679.738737 MATCHSTATE:0:0:ccr:Ks||:c
FROM 2 at 1795640679.738795 MATCHSTATE:1:0:ccrc:|As|:c
TO 1 at 1795640679.738868 MATCHSTATE:0:0:ccrcc:Ks|As|Js
TO 1 at 1795640679.738919 MATCHSTATE:2:1::||Qs
FROM 3 at 1795640679.776018 MATCHSTATE:0:137:ccr:As||:f
TO 1 at 1795640679.776096 MATCHSTATE:1:137:ccrfc:|Js|Ks
TO 3 at 1795640679.776121 MATCHSTATE:0:137:ccrfc:As|Js|Ks
TO 3 at 1795640679.807179 MATCHSTATE:0:260:rff:Js||
"""


def test_the_traffic_contains_the_captured_reference_traffic_in_order(tmp_path: Path) -> None:
    captured, _ = run_dealer(
        tmp_path, hands=261, clients=scripted(*[{"on_act": replay_reference}] * 3)
    )
    assert captured.result.status == 0
    ours = [
        re.sub(f" at {STAMP} ", " ", line.rstrip("\r"))
        for line in captured.stderr.splitlines()
        if line.startswith(("TO ", "FROM "))
    ]
    expected = [re.sub(f" at {STAMP} ", " ", line) for line in CAPTURED_TRAFFIC.splitlines()]
    position = 0
    for line in expected:  # a subsequence: the capture shows some of the lines
        position = ours.index(line, position) + 1


def expected_messages(hand_record, number: int, shift: int) -> list[tuple[int, str]]:
    """(seat, line) of every message the reference dealer sends in one hand, in order."""
    state = HandState(GAME)
    sent = []
    for step in range(len(hand_record.betting) + 1):
        for seat in range(3):
            position = (seat - shift) % 3
            view = MatchState(
                position, number, state.betting, state.visible_hole(hand_record.hole, position)
            )
            sent.append((seat + 1, f"{view}"))
        if step < len(hand_record.betting):
            state.apply(hand_record.betting[step])
    return sent


def test_a_full_match_of_project_agents_produces_the_reference_traffic_and_outputs(
    tmp_path: Path,
) -> None:
    hands = 101
    captured, agents = run_dealer(tmp_path, hands=hands, clients=project_agents())
    assert captured.result.status == 0
    log = parse_log(captured.log)
    assert check_log(GAME, log) == [] and len(log.hands) == hands
    lines = captured.stderr.split("\n")
    assert lines[:4] == captured.log.splitlines()[:4]
    assert re.fullmatch(f"STARTED at {STAMP}", lines[4])
    sent = [
        (int(m[1]), m[2])
        for m in re.finditer(rf"^TO (\d) at {STAMP} (MATCHSTATE\S*)\r$", captured.stderr, re.M)
    ]
    expected = [msg for h in log.hands for msg in expected_messages(h, h.hand, h.hand % 3)]
    assert sent == expected
    replies = re.findall(rf"^FROM (\d) at {STAMP} (MATCHSTATE\S*:[fcr])\r$", captured.stderr, re.M)
    assert len(replies) == sum(len(h.betting) for h in log.hands)
    seconds = re.findall(
        r"^Seconds cumulatively spent in match for seat (\d): \d+$", captured.stderr, re.M
    )
    assert seconds == ["0", "1", "2"] * 2  # after hands 0 and 100
    assert re.search(f"^FINISHED at {STAMP}$", captured.stderr, re.M)
    assert lines[-2] == captured.log.splitlines()[-1] and lines[-2].startswith("SCORE:")
    assert captured.stdout.splitlines()[1] == lines[-2]
    assert "WARNING" not in captured.stderr
    # each agent's own tally (from what it saw) equals its seat's SCORE total
    assert [a.result.total for a in agents] == list(log.score.totals)
    assert all(a.result.hands == hands and a.result.ignored_lines == 0 for a in agents)
    # seeded agents and a seeded dealer: the whole match is repeatable
    (tmp_path / "again").mkdir()
    again, _ = run_dealer(tmp_path / "again", hands=hands, clients=project_agents())
    assert again.log == captured.log


def test_fixed_seats_keep_every_player_in_its_position(tmp_path: Path) -> None:
    captured, _ = run_dealer(tmp_path, hands=6, clients=scripted({}, {}, {}), fixed_seats=True)
    hands = parse_log(captured.log).hands
    assert {h.names for h in hands} == {("Alice", "Bob", "Carol")}
    assert all(h.betting == "ccc" for h in hands)


def decision_script(*per_decision: list[str] | None):
    """on_act sending, per decision, the given lines (a line starting with ':' is appended to the
    state); None or past the end: a plain call."""

    def on_act(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
        replies = per_decision[decision] if decision < len(per_decision) else None
        if replies is None:
            return [line + ":c\r\n"]
        return [line + r if r.startswith((":", "\n")) else r for r in replies]

    return on_act


def test_bad_replies_get_the_reference_warnings_and_become_calls(tmp_path: Path) -> None:
    seat1 = decision_script(
        ["# thinking\n", "garbage\n", "MATCHSTATE:0:9::Ks||:r\n", "\n"],  # last: no action
        [":f\n"],  # fold with nothing to call
        [":x\n"],  # unknown letter
        [":R\r\n"],  # upper-case raise: valid
        [":r\n"],
    )
    seat2 = decision_script(None, None, None, [":k\n"], [":r\n"])  # k is a call; no re-raise
    seat3 = decision_script(*[[":K\n"]] * 5)
    captured, clients = run_dealer(
        tmp_path,
        hands=5,
        clients=scripted({"on_act": seat1}, {"on_act": seat2}, {"on_act": seat3}),
        fixed_seats=True,
        quiet=True,
    )
    assert all(c.error is None for c in clients)
    assert captured.result.status == 0
    bettings = [h.betting for h in parse_log(captured.log).hands]
    assert bettings == ["ccc", "ccc", "ccc", "rcc", "rcc"]
    warnings = [line for line in captured.stderr.splitlines() if line.startswith("WARNING")]
    assert warnings == [
        "WARNING: bad state format in response",
        "WARNING: ignoring un-requested response",
        "WARNING: bad action format in response, changed to call",
        "WARNING: invalid action, changed to call",
        "WARNING: invalid action, changed to call",
        "WARNING: invalid action, changed to call",
    ]
    # -q: only the header, the warnings and the SCORE line
    assert len(captured.stderr.splitlines()) == 4 + len(warnings) + 1


def test_replies_to_states_that_asked_for_none_are_ignored_as_unrequested(tmp_path: Path) -> None:
    captured, _ = run_dealer(
        tmp_path, hands=20, clients=scripted({"answer_everything": True}, {}, {}), quiet=True
    )
    assert captured.result.status == 0
    assert "WARNING: ignoring un-requested response" in captured.stderr
    assert len(parse_log(captured.log).hands) == 20
    assert captured.stdout.splitlines()[-1].startswith("SCORE:")


def silent_from_hand(first_silent_hand: int):
    def on_act(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
        return [] if state.hand >= first_silent_hand else [line + ":c\n"]

    return on_act


def test_a_silent_seat_aborts_the_match_and_the_log_keeps_the_finished_hands(
    tmp_path: Path,
) -> None:
    captured, _ = run_dealer(
        tmp_path,
        hands=10,
        clients=scripted({}, {"on_act": silent_from_hand(2)}, {}),
        t_response_ms=300,
        fixed_seats=True,
        quiet=True,
    )
    assert captured.result.status == 1 and captured.result.hands_played == 2
    errors = captured.stderr.splitlines()[4:]
    assert errors[0] == "ERROR: could not get action from seat 2"
    waited = re.fullmatch(r"(\d+\.\d{6}) seconds spent waiting; timeout 0\.300000", errors[1])
    assert waited and float(waited[1]) >= 0.3
    assert not captured.stdout.splitlines()[1:]  # only the ports line: no SCORE
    log = parse_log(captured.log)
    assert [h.hand for h in log.hands] == [0, 1] and log.score is None and log.header is not None


def test_a_slow_reply_that_overruns_the_hand_budget_aborts(tmp_path: Path) -> None:
    def slow(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
        time.sleep(0.25)
        return [line + ":c\n"]

    captured, _ = run_dealer(
        tmp_path, hands=3, clients=scripted({"on_act": slow}, {}, {}), t_hand_ms=100, quiet=True
    )
    assert captured.result.status == 1 and captured.result.hands_played == 0
    assert "ERROR: seat 1 ran out of time" in captured.stderr.splitlines()


@pytest.mark.parametrize("garbage_first", [False, True])
def test_each_non_comment_line_is_charged_from_the_same_send_time(
    tmp_path: Path, garbage_first: bool
) -> None:
    def slow(line: str, state: MatchState, hand: HandState, decision: int) -> list[str]:
        time.sleep(1.0)
        return ["# comments are free\n"] + ["garbage\n"] * garbage_first + [line + ":c\n"]

    # one hand, a 1.9 s budget: one charge of the 1 s wait fits with 0.9 s to spare for a loaded
    # machine's delays (a 250 ms budget for a 150 ms wait ran out at load 40-55), and the same
    # wait charged twice (at least 2 s, whatever the load) does not
    captured, _ = run_dealer(
        tmp_path,
        hands=1,
        clients=scripted({"on_act": slow}, {}, {}),
        t_per_hand_ms=1900,
        quiet=True,
    )
    if garbage_first:
        assert captured.result.status == 1
        assert captured.stderr.splitlines()[-1] == "ERROR: seat 1 ran out of time"
    else:
        assert captured.result.status == 0


def test_a_seat_that_hangs_up_aborts_the_match(tmp_path: Path) -> None:
    captured, _ = run_dealer(
        tmp_path, hands=3, clients=scripted({"close_after_version": True}, {}, {}), quiet=True
    )
    assert captured.result.status == 1
    assert re.search(
        r"^ERROR: could not (get action from|send state to) seat 1$", captured.stderr, re.M
    )


@pytest.mark.parametrize("version", ["HELLO\n", "# VERSION:2.0.0\n"])
def test_a_bad_version_line_aborts(tmp_path: Path, version: str) -> None:
    captured, _ = run_dealer(tmp_path, hands=3, clients=scripted({}, {"version": version}, {}))
    assert captured.result.status == 1
    assert captured.stderr.splitlines()[-1] == f"ERROR: invalid version string {version.strip()}"


def test_a_seat_that_never_sends_its_version_can_be_given_up_on(tmp_path: Path) -> None:
    # the reference waits forever; ours gives up after version_timeout_ms (10 s by default)
    mute = {"version": ""}
    captured, _ = run_dealer(
        tmp_path, hands=3, clients=scripted(mute, {}, {}), version_timeout_ms=200
    )
    assert captured.result.status == 1
    assert (
        "ERROR: could not read version string from seat 1: none within 200 ms"
        in captured.stderr.splitlines()
    )


def test_another_protocol_version_only_warns(tmp_path: Path) -> None:
    captured, _ = run_dealer(
        tmp_path, hands=3, clients=scripted({}, {}, {"version": "VERSION:2.1.0\r\n"}), quiet=True
    )
    assert captured.result.status == 0
    assert "ERROR: this server is currently using version 2.0.0" in captured.stderr.splitlines()


def test_the_start_timeout_gives_up_on_seats_that_never_connect(tmp_path: Path) -> None:
    started = time.monotonic()
    captured, _ = run_dealer(tmp_path, hands=3, start_timeout_ms=200)
    assert captured.result.status == 1
    assert time.monotonic() - started < 3
    assert "ERROR: seat 1 did not connect" in captured.stderr


class EchoSeat:
    """An in-memory seat (no socket) that replays the reference players' actions."""

    def __init__(self) -> None:
        self.last = "VERSION:2.0.0\r\n"

    def send(self, text: str) -> bool:
        self.last = text
        return True

    def readline(self, timeout: float | None) -> str:
        if not self.last.startswith("MATCHSTATE:"):
            return self.last
        state = self.last.rstrip("\r\n")
        hand, betting = state.split(":")[2:4]
        return f"{state}:{REFERENCE_BETTING[int(hand)][len(betting)]}\n"

    def close(self) -> None:
        pass


def test_pre_connected_seats_play_the_same_match_as_sockets(tmp_path: Path) -> None:
    dealer = MatchDealer(
        DealerConfig(
            match="kuhn3p_seed42",
            game_file="kuhn.limit.3p.game",
            game=GAME,
            hands=300,
            seed=42,
            names=("Alice", "Bob", "Carol"),
            quiet=True,
            log_path=tmp_path / "m.log",
        ),
        stdout=io.StringIO(),
        stderr=io.StringIO(),
    )
    assert dealer.run([EchoSeat() for _ in range(3)]).status == 0
    ours = (tmp_path / "m.log").read_text().splitlines()
    reference = REFERENCE_LOG.read_text().splitlines()
    assert ours[0] == reference[0].replace(" 3000 ", " 300 ")
    assert ours[1:-1] == reference[1:304]  # time limits and the first 300 hands
    names = ("Alice", "Bob", "Carol")
    totals = seat_totals(read_log(REFERENCE_LOG).hands[:300], names)
    assert ours[-1] == f"SCORE:{'|'.join(map(format_number, totals))}:Alice|Bob|Carol"


def _dealer_args(*extra: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    dealer_cmd.register(parser.add_subparsers())
    return parser.parse_args(["dealer", "m", "kuhn3p", "1", "42", "a", "b", "c", *extra])


def test_the_version_wait_is_bounded_by_default_and_zero_restores_the_reference() -> None:
    assert dealer_cmd.dealer_config(_dealer_args()).version_timeout_ms == 10_000
    assert dealer_cmd.dealer_config(_dealer_args("--t_version", "250")).version_timeout_ms == 250
    assert dealer_cmd.dealer_config(_dealer_args("--t_version", "0")).version_timeout_ms is None
    assert DealerConfig("m", "g", GAME, 1, 42, ("a", "b", "c")).version_timeout_ms == 10_000


def test_the_command_gives_up_on_a_client_that_connects_and_stays_silent(tmp_path: Path) -> None:
    """Real TCP clients that connect and never send their VERSION line: the reference would wait
    forever; ``oppmodel dealer`` aborts the match after --t_version."""
    argv = ["dealer", "m", "kuhn3p", "5", "42", "a", "b", "c", "-q", "--t_version", "300"]
    dealer = subprocess.Popen(
        [sys.executable, "-m", "oppmodel.clients.cli", *argv],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    silent = []
    try:
        ports = [int(p) for p in dealer.stdout.readline().split()]
        silent = [socket.create_connection(("127.0.0.1", p), timeout=10) for p in ports]
        _, err = dealer.communicate(timeout=60)
    finally:
        for sock in silent:
            sock.close()
        dealer.kill()
        dealer.wait()
    assert dealer.returncode == 1
    assert err.splitlines()[-1] == (
        "ERROR: could not read version string from seat 1: none within 300 ms"
    )
    assert "SCORE" not in err
