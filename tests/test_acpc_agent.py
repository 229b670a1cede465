"""The project's ACPC agent against a scripted fake dealer, and its strategies."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from acpc_support import GAME, GAME_FILE, SOCKET_TIMEOUT, AgentThread, run_dealer

from oppmodel.clients.acpc.agent import (
    Decision,
    ProfilePolicy,
    SeatHand,
    make_policy,
    play_match,
    policy_names,
)
from oppmodel.clients.acpc.convert import kuhn_for, logged_limit_observation
from oppmodel.clients.acpc.log import parse_log
from oppmodel.clients.acpc.net import LineSocket
from oppmodel.clients.cli import main
from oppmodel.clients.commands.acpc_script_cmd import script_text
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game_of
from oppmodel.modeling.games.acpc.matchstate import MatchState


class Recorder:
    """A policy that calls (or whatever ``choice`` says) and records what it is shown."""

    def __init__(self, choice: str = "c") -> None:
        self.choice = choice
        self.decisions: list[Decision] = []
        self.hands: list[SeatHand] = []

    def act(self, decision: Decision) -> str:
        self.decisions.append(decision)
        return self.choice

    def observe(self, hand: SeatHand) -> None:
        self.hands.append(hand)


def fake_dealer(script: list[str]) -> tuple[int, dict, threading.Thread]:
    """A one-seat server: reads VERSION, then for each script line either sends it or (for
    ``"<read>"``) waits for one reply line; finally checks nothing else arrives and closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    seen: dict = {"replies": []}

    def run() -> None:
        conn, _ = listener.accept()
        listener.close()
        lines = LineSocket(conn)
        seen["version"] = lines.readline(SOCKET_TIMEOUT)
        for item in script:
            if item == "<read>":
                seen["replies"].append(lines.readline(SOCKET_TIMEOUT))
            else:
                lines.send(item)
        try:
            seen["extra"] = lines.readline(0.2)
        except TimeoutError:
            seen["extra"] = None
        lines.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return listener.getsockname()[1], seen, thread


def test_the_agent_answers_only_when_it_is_to_act_and_ignores_the_rest() -> None:
    port, seen, thread = fake_dealer(
        [
            "# a comment from the dealer\r\n",
            "; another\r\n",
            "some junk\r\n",
            "MATCHSTATE:1:0::|Qs|\r\n",  # position 0 to act, not us
            "MATCHSTATE:1:0:r:|Qs|\r\n",  # our turn, facing a bet
            "<read>",
            "MATCHSTATE:1:0:rc:|Qs|\r\n",  # our own call echoed back: position 2 to act
            "MATCHSTATE:1:0:rcf:|Qs|\r\n",  # final: position 2 folded; a showdown of 0 and 1
            "MATCHSTATE:1:0:rcf:Ks|Qs|\r\n",
            "MATCHSTATE:1:0:rcf:Ks|Qs|\r\n",  # the same final state again: observed once
            "MATCHSTATE:2:1::||Js\r\n",  # next hand, position 2: not our turn
            "MATCHSTATE:2:1:cc:||Js\r\n",
            "<read>",
            "MATCHSTATE:2:1:ccc:Ks|Qs|Js\r\n",
        ]
    )
    policy = Recorder()
    sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
    result = play_match(GAME, sock, policy, read_timeout=SOCKET_TIMEOUT)
    thread.join(SOCKET_TIMEOUT)
    assert seen["version"] == "VERSION:2.0.0\n"
    assert seen["replies"] == ["MATCHSTATE:1:0:r:|Qs|:c\r\n", "MATCHSTATE:2:1:cc:||Js:c\r\n"]
    assert seen["extra"] is None
    assert [d.valid_actions() for d in policy.decisions] == [["f", "c"], ["c", "r"]]
    assert [(d.position, d.hole) for d in policy.decisions] == [(1, "Qs"), (2, "Js")]
    # "rcf" with the cards hidden is not a valid final showdown state: counted as ignored
    assert policy.hands == [
        SeatHand(0, 1, "rcf", ("Ks", "Qs", ""), -2.0, ("",), "MATCHSTATE:1:0:rcf:Ks|Qs|"),
        SeatHand(1, 2, "ccc", ("Ks", "Qs", "Js"), -1.0, ("",), "MATCHSTATE:2:1:ccc:Ks|Qs|Js"),
    ]
    assert (result.hands, result.actions, result.ignored_lines, result.total) == (2, 2, 2, -3.0)


def test_an_invalid_choice_of_the_policy_becomes_a_call(capsys: pytest.CaptureFixture) -> None:
    port, seen, thread = fake_dealer(["MATCHSTATE:0:0::Ks||\r\n", "<read>"])
    sock = socket.create_connection(("127.0.0.1", port), timeout=SOCKET_TIMEOUT)
    play_match(GAME, sock, Recorder(choice="f"), read_timeout=SOCKET_TIMEOUT)
    thread.join(SOCKET_TIMEOUT)
    assert seen["replies"] == ["MATCHSTATE:0:0::Ks||:c\r\n"]
    assert "policy chose invalid 'f'" in capsys.readouterr().err


def test_policies_are_the_cores_profiles_and_unknown_names_are_refused() -> None:
    names = policy_names()
    assert {"mbbr", "n1", "n2", "n3", "uniform", "example"} <= set(names)
    with pytest.raises(InvalidArgumentError, match="unknown agent 'nope'; known: mbbr, n1"):
        make_policy("nope", GAME, 0)


def test_a_profile_policy_plays_its_profiles_action_frequencies() -> None:
    kuhn = kuhn_for(GAME)
    profile = np.full((3, kuhn.num_infosets, 2), 0.5)
    infoset = kuhn.infoset_index(1, 2, "p")  # position 1 holding K after a check
    profile[1, infoset] = [0.2, 0.8]
    policy = ProfilePolicy(GAME, profile, seed=3)
    state = MatchState(1, 0, "c", ("", "Ks", ""))
    decision = Decision(GAME, state, HandState.from_betting(GAME, "c"), str(state))
    counts = Counter(policy.act(decision) for _ in range(4000))
    assert set(counts) == {"c", "r"}
    assert abs(counts["r"] / 4000 - 0.8) < 0.03  # 4.7 standard deviations
    first, second = ProfilePolicy(GAME, profile, seed=3), ProfilePolicy(GAME, profile, seed=3)
    assert [first.act(decision) for _ in range(50)] == [second.act(decision) for _ in range(50)]


def test_n1_never_opens_as_the_first_player_in_a_real_match(tmp_path: Path) -> None:
    captured, _ = run_dealer(
        tmp_path,
        hands=120,
        clients=lambda ports: [
            AgentThread(p, make_policy("n1", GAME, seed)) for seed, p in enumerate(ports)
        ],
        quiet=True,
    )
    assert captured.result.status == 0
    hands = parse_log(captured.log).hands
    # N1: position 0 never bets (a41 = 0) and nobody ever calls with the Jack
    assert not any(h.betting.startswith("r") for h in hands)
    for h in hands:
        state = HandState(GAME)
        for action in h.betting:
            if state.facing_bet() and h.hole[state.current] == "Js":
                assert action == "f"
            state.apply(action)


def test_the_wrapper_script_plays_a_seat_with_the_reference_calling_convention(
    tmp_path: Path,
) -> None:
    script = tmp_path / "n3.sh"
    script.write_text(script_text(gamefile=GAME_FILE, agent="n3", seed=5, python=sys.executable))
    script.chmod(0o755)
    processes = []

    def start(ports: tuple[int, ...]) -> list:
        processes.append(
            subprocess.Popen(
                [str(script), "127.0.0.1", str(ports[0])],
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        return [AgentThread(p, make_policy("uniform", GAME, 0)) for p in ports[1:]]

    # the dealer waits LOADED_START_MS for the script's seat: its fresh interpreter took over 60 s
    # to connect in a clean clone at load 30-38 (the limit this test once set)
    captured, _ = run_dealer(tmp_path, hands=30, clients=start, quiet=True)
    (process,) = processes
    _, err = process.communicate(timeout=60)
    assert captured.result.status == 0, captured.stderr
    assert process.returncode == 0
    total = parse_log(captured.log).score.totals[0]
    assert err.startswith(f"acpc-agent n3: 30 hands, {total:+g} chips")


@pytest.mark.parametrize("name", ["n1.sh", "sub/n1.sh"])
def test_the_script_command_prints_a_command_line_the_shell_runs(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`run it as ...` names the script so that a shell in the same folder finds it: a bare
    name is looked up on PATH, never in the current folder."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "no-programs").mkdir()
    assert main(["acpc-agent-script", name, "kuhn3p", "--agent", "n1"]) == 0
    shown = re.fullmatch(r"wrote \S+: run it as `(.+) HOST PORT`\n", capsys.readouterr().err)
    assert shown is not None
    found = subprocess.run(
        [shutil.which("sh") or "sh", "-c", f"command -v {shown[1]}"],
        cwd=tmp_path,
        env={"PATH": str(tmp_path / "no-programs")},  # a PATH without the current folder
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert found.returncode == 0, shown[1]
    assert (tmp_path / found.stdout.strip()).resolve() == (tmp_path / name).resolve()


def test_the_in_process_mbbr_agent_learns_from_every_hand_of_a_real_match(tmp_path: Path) -> None:
    policies = [make_policy("mbbr", GAME, 11), make_policy("n1", GAME, 1)]
    policies.append(make_policy("always-bet", GAME, 2))
    hands = 130  # past H = 100: the last hands are played by the response

    def start(ports: tuple[int, ...]) -> list[AgentThread]:
        return [AgentThread(p, policy) for p, policy in zip(ports, policies, strict=True)]

    # hand 101 is the first best response: on a fresh clone numba compiles it then, which took over
    # the default 5 s reply limit on a loaded 2-core machine; this test is about learning, not time
    captured, agents = run_dealer(
        tmp_path, hands=hands, clients=start, quiet=True, t_response_ms=120_000
    )
    assert captured.result.status == 0
    model = policies[0].model
    assert model.hands_observed == hands
    # the model is exactly the one built from the same hands replayed offline
    log = parse_log(captured.log)
    replayed = make_policy("mbbr", GAME, 11).model
    compiled = limit_game_of(GAME)
    for hand in log.hands:
        replayed.observe(logged_limit_observation(compiled, hand, hand.names.index("Alice")))
    for position in range(3):
        for opponent in range(3):
            if opponent != position:
                want, spread = replayed.opponent_model(position, opponent)
                got, got_spread = model.opponent_model(position, opponent)
                assert np.array_equal(got, want) and got_spread == spread
    assert agents[0].result.total == log.score.totals[0]
