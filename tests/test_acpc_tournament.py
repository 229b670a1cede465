"""Duplicate tournaments: project agents and an external agent executable through the dealer."""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from acpc_support import DATA, GAME, GAME_FILE

from oppmodel.clients.acpc.deal import CardDealer
from oppmodel.clients.acpc.log import check_log, read_log
from oppmodel.clients.acpc.tournament import (
    AgentSpec,
    MatchRecord,
    TournamentConfig,
    summarize,
)
from oppmodel.clients.commands import tournament_cmd
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def

EXTERNAL = f"{sys.executable} {Path(__file__).resolve().parent / 'acpc_external_agent.py'}"


def run_cli(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    tournament_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["tournament", *argv])
    return args.func(args)


def test_a_tournament_with_an_external_agent_gives_the_table_json_and_logs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hands = 40
    status = run_cli(
        [
            *("--agent", "n1=builtin:n1", "--agent", "uni=builtin:uniform"),
            *("--agent", f"ext={EXTERNAL}"),
            *("--hands", str(hands), "--duplicates", "1", "--seed", "42"),
            *("--out", str(tmp_path), "--json"),
        ]
    )
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["agent"] for r in report["results"]] == ["n1", "uni", "ext"]
    assert all(r["hands"] == 6 * hands for r in report["results"])
    assert abs(sum(r["milli_antes_per_hand"] for r in report["results"])) < 1e-9  # zero-sum
    matches = report["matches"]
    assert len(matches) == 6
    assert {tuple(m["seating"]) for m in matches} == {
        ("n1", "uni", "ext"),
        ("n1", "ext", "uni"),
        ("uni", "n1", "ext"),
        ("uni", "ext", "n1"),
        ("ext", "n1", "uni"),
        ("ext", "uni", "n1"),
    }
    reference = read_log(DATA / "kuhn3p-seed42-example-players.log").hands[:hands]
    for match in matches:
        log = read_log(match["log"])
        assert check_log(GAME, log) == [] and len(log.hands) == hands
        # duplicate: every seating gets the seed-42 cards
        assert [h.hole for h in log.hands] == [h.hole for h in reference]
        assert log.score.names == tuple(match["seating"])
        per_hand = {
            name: 1000 * total / hands
            for name, total in zip(log.score.names, log.score.totals, strict=True)
        }
        assert per_hand == pytest.approx(match["milli_antes_per_hand"])
        # the external agent really played: it bets its Ace when it can, otherwise calls
        for hand in log.hands:
            state = HandState(GAME)
            for action in hand.betting:
                if hand.names[state.current] == "ext":
                    can_raise = "r" not in state.betting
                    expected = "r" if hand.hole[state.current] == "As" and can_raise else "c"
                    assert action == expected
                state.apply(action)
        assert (
            tmp_path
            / (Path(match["log"]).stem + f".seat{match['seating'].index('ext') + 1}.ext.err")
        ).exists()
    # the duplicate estimate: each duplicate hand averaged over the 6 seatings
    x = {name: np.zeros(hands) for name in ("n1", "uni", "ext")}
    for match in matches:
        for hand in read_log(match["log"]).hands:
            for name, value in zip(hand.names, hand.payoffs, strict=True):
                x[name][hand.hand] += value / 6
    for result in report["results"]:
        values = x[result["agent"]]
        assert result["milli_antes_per_hand"] == pytest.approx(1000 * values.mean())
        assert result["standard_error"] == pytest.approx(
            1000 * values.std(ddof=1) / math.sqrt(hands)
        )


def test_the_text_table_lists_agents_and_every_match(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_cli(
        [
            *("--agent", "a=builtin:n1", "--agent", "b=builtin:n3"),
            *("--agent", "c=builtin:always-bet"),
            *("--hands", "10", "--duplicates", "2", "--seed", "7", "--out", str(tmp_path)),
        ]
    )
    assert status == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "2 duplicate sets x 6 seatings x 10 hands, card seeds 7..8"
    assert out[2].split() == ["agent", "mA/h", "s.e.", "hands"]
    assert [line.split()[0] for line in out[3:6]] == ["a", "b", "c"]
    assert [line.split()[-1] for line in out[3:6]] == ["120"] * 3
    assert out[7] == "per match (mA/h):"
    assert len(out[9:21]) == 12 and out[9].split()[:4] == ["0", "a", "b", "c"]
    assert out[-1] == f"logs in {tmp_path}/"
    assert len(list(tmp_path.glob("*.log"))) == 12


def aborted_with_a_third_agent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], code: str, *options: str
) -> str:
    """Play n1, n3 and an external agent running the Python ``code``; the stderr of the
    tournament, which must have aborted its first match."""
    status = run_cli(
        [
            *("--agent", "a=builtin:n1", "--agent", "b=builtin:n3"),
            *("--agent", f'c={sys.executable} -c "{code}"'),
            *("--hands", "5", "--out", str(tmp_path), *options),
        ]
    )
    assert status == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "match dup0-seating012 aborted after 0 hands" in err
    return err


def test_a_failing_external_agent_fails_the_tournament_with_a_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # exits at once without connecting, saying why on its stderr
    err = aborted_with_a_third_agent(tmp_path, capsys, "import sys; sys.exit('no strategy file')")
    seat_errors = tmp_path / "dup0-seating012.seat3.c.err"  # the failed seat's, not the dealer's
    assert f"seat 3 agent c exited with status 1 (its stderr: {seat_errors})" in err
    assert seat_errors.read_text().strip() == "no strategy file"


def test_a_running_agent_that_never_connects_aborts_the_match_after_the_start_timeout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    alive_and_silent = "import time; time.sleep(60)"
    err = aborted_with_a_third_agent(tmp_path, capsys, alive_and_silent, "--start_timeout", "300")
    assert "seat 3 did not connect within --start_timeout 300 ms" in err


@pytest.mark.parametrize(
    ("agents", "field", "message"),
    [
        (["a=builtin:n1", "b=builtin:n1"], "agent", "the game has 3 players, got 2"),
        (["a=builtin:n1", "a=builtin:n3", "c=builtin:n1"], "agent", "names must be distinct"),
        (["a=builtin:n1", "b=builtin:nope", "c=builtin:n1"], "agent", "unknown agent 'nope'"),
    ],
)
def test_bad_tournaments_are_refused(
    agents: list[str], field: str, message: str, tmp_path: Path
) -> None:
    config = TournamentConfig(
        game=GAME,
        game_file=GAME_FILE.name,
        agents=tuple(AgentSpec.parse(a) for a in agents),
        hands=10,
        duplicates=1,
        seed=0,
        out_dir=tmp_path,
    )
    with pytest.raises(InvalidArgumentError, match=message) as info:
        config.validate()
    assert info.value.field == field


@pytest.mark.parametrize("text", ["noequals", "=cmd", "a=", "a|b=cmd", "a b=cmd"])
def test_agent_specs_must_be_name_equals_command(text: str) -> None:
    with pytest.raises(InvalidArgumentError):
        AgentSpec.parse(text)


def test_summary_is_the_mean_and_standard_error_of_the_duplicate_hands(tmp_path: Path) -> None:
    agents = tuple(AgentSpec(n, "builtin:n1") for n in ("a", "b", "c"))
    config = TournamentConfig(
        game=GAME, game_file="g", agents=agents, hands=2, duplicates=2, seed=0, out_dir=tmp_path
    )
    rng = np.random.default_rng(0)
    records = []
    for dup in range(2):
        for seating in config.seatings():
            pay = rng.integers(-2, 5, size=(3, 2)).astype(float)
            names = tuple(agents[i].name for i in seating)
            records.append(MatchRecord(dup, names, tmp_path, dict(zip(names, pay, strict=True))))
    summary = summarize(config, records)
    for s in summary:
        samples = [
            sum(r.payoffs[s.name][h] for r in records if r.duplicate == d) / 6
            for d in range(2)
            for h in range(2)
        ]
        mean = sum(samples) / 4
        sd = math.sqrt(sum((v - mean) ** 2 for v in samples) / 3)
        assert s.rate == pytest.approx(1000 * mean)
        assert s.standard_error == pytest.approx(1000 * sd / 2)
        assert s.hands == 24


LEDUC3P_LOG = DATA / "leduc3p-seed42-example-players.log"


def test_a_leduc3p_tournament_of_cfr_agents_deals_every_seating_the_same_cards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hands = 12
    status = run_cli(
        [
            *("--game", "leduc3p", "--agent", "cfr1=builtin:cfr", "--agent", "cfr2=builtin:cfr"),
            *("--agent", "ex=builtin:example"),
            *("--hands", str(hands), "--seed", "42", "--out", str(tmp_path), "--json"),
        ]
    )
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert report["game_file"] == "leduc.limit.3p.game"
    assert [r["agent"] for r in report["results"]] == ["cfr1", "cfr2", "ex"]
    assert abs(sum(r["milli_antes_per_hand"] for r in report["results"])) < 1e-9  # zero-sum
    game = read_game_def("leduc3p")
    reference = read_log(LEDUC3P_LOG).hands[:hands]
    dealer = CardDealer(game, 42)
    boards = [dealer.deal().board for _ in range(hands)]
    assert len(report["matches"]) == 6
    for match in report["matches"]:
        log = read_log(match["log"])
        assert check_log(game, log) == [] and len(log.hands) == hands
        # duplicate: every seating gets the seed-42 cards of the reference log, board included
        for ours, theirs, board in zip(log.hands, reference, boards, strict=True):
            assert ours.hole == theirs.hole
            assert ours.board == board[1 : len(ours.board) + 1]
        totals = dict(zip(log.score.names, log.score.totals, strict=True))
        assert {n: 1000 * t / hands for n, t in totals.items()} == pytest.approx(
            match["milli_antes_per_hand"]
        )
    assert any("/" in h.betting for m in report["matches"] for h in read_log(m["log"]).hands)


def test_a_leduc2p_tournament_plays_both_seatings(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    status = run_cli(
        [
            *("--game", "leduc2p", "--agent", "cfr=builtin:cfr", "--agent", "ex=builtin:example"),
            *("--hands", "20", "--duplicates", "2", "--out", str(tmp_path), "--json"),
        ]
    )
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert [(m["duplicate"], m["seating"]) for m in report["matches"]] == [
        (0, ["cfr", "ex"]),
        (0, ["ex", "cfr"]),
        (1, ["cfr", "ex"]),
        (1, ["ex", "cfr"]),
    ]
    results = {r["agent"]: r for r in report["results"]}
    assert results["cfr"]["milli_antes_per_hand"] == pytest.approx(
        -results["ex"]["milli_antes_per_hand"]
    )
    assert all(r["hands"] == 2 * 2 * 20 for r in report["results"])
    game = read_game_def("leduc2p")
    assert all(check_log(game, read_log(m["log"])) == [] for m in report["matches"])


def test_mbbr_plays_a_limit_game_as_the_help_says(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    epilog = " ".join(tournament_cmd.EPILOG.split())
    assert "mbbr, uniform, the styles and cfr" in epilog and "play every limit game" in epilog
    status = run_cli(
        [
            *("--game", "leduc2p", "--agent", "m=builtin:mbbr", "--agent", "c=builtin:cfr"),
            *("--hands", "3", "--out", str(tmp_path), "--json"),
        ]
    )
    assert status == 0
    report = json.loads(capsys.readouterr().out)
    assert [r["hands"] for r in report["results"]] == [6, 6]
