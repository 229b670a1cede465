"""Win rates in the unit the field states them in (issue 29 item 4): milli-antes per hand in ante
games (every bundled game: the numbers are milli-chips, unchanged), milli-big-blinds per hand with
blinds (1/2 blinds: half the milli-chips), named in every table, tally and JSON key."""

from __future__ import annotations

import argparse
import json
import threading
from pathlib import Path

import numpy as np
import pytest
from acpc_support import AgentThread, run_dealer

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.log import parse_log
from oppmodel.clients.cli import main
from oppmodel.clients.commands import tournament_cmd
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import uniform_profile
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.units import ante_unit
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import observe_limit_hand
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.modeling.play.match import (
    agent_seed,
    deck_seed,
    fixed_strategy_factory,
    play_match,
    run_duplicate,
    sample_terminal,
    seatings,
)

# Leduc's cards and rounds, with blinds 1/2 (the small blind acts first) instead of antes
BLINDS_1_2 = """GAMEDEF
limit
numPlayers = 2
numRounds = 2
blind = 2 1
raiseSize = 2 4
firstPlayer = 2 1
maxRaises = 2 2
numSuits = 2
numRanks = 3
numHoleCards = 1
numBoardCards = 0 1
END GAMEDEF
"""
STYLES = ("maniac", "calling-station")


def blinds_game() -> LimitGame:
    return compile_limit_game(parse_game_def(BLINDS_1_2), "blinds")


def _rules(blind: str, betting: str = "limit", raise_size: str = "raiseSize = 2 4\n") -> str:
    return (
        BLINDS_1_2.replace("limit", betting)
        .replace("blind = 2 1", f"blind = {blind}")
        .replace("raiseSize = 2 4\n", raise_size)
    )


def test_every_bundled_game_and_kuhn_rate_in_milli_antes_of_one_chip() -> None:
    milli_antes = ante_unit(1)
    assert (milli_antes.label, milli_antes.name, milli_antes.key, milli_antes.chips) == (
        "mA/h",
        "milli-antes per hand",
        "milli_antes_per_hand",
        1,
    )
    for name in BUNDLED_GAMES:
        assert read_game_def(name).rate_unit == limit_game(name).rate_unit == milli_antes
    for n in (2, 3, 4):
        assert kuhn_game(n).rate_unit == milli_antes


@pytest.mark.parametrize(
    ("rules", "label", "key", "chips"),
    [
        (_rules("2 1"), "mbb/h", "mbb_per_hand", 2),
        (_rules("1 2 0").replace("numPlayers = 2", "numPlayers = 3"), "mbb/h", "mbb_per_hand", 2),
        (_rules("3 3"), "mA/h", "milli_antes_per_hand", 3),
        (_rules("0 0"), "msb/h", "milli_small_bets_per_hand", 2),
        (_rules("0 0", "nolimit", ""), "mc/h", "milli_chips_per_hand", 1),
    ],
)
def test_the_unit_follows_the_blinds(rules: str, label: str, key: str, chips: int) -> None:
    unit = parse_game_def(rules).rate_unit
    assert (unit.label, unit.key, unit.chips) == (label, key, chips)
    assert unit.rate(chips * 3, hands=4) == 750.0  # 3/4 of a unit per hand


@pytest.mark.parametrize(("name", "per_unit"), [("blinds", 2), ("kuhn3p", 1)])
def test_the_safety_budget_is_in_the_games_unit(name: str, per_unit: int) -> None:
    """B is stated as win rates are: with blinds 1/2, B mbb/h puts B x 2 / 1000 chips a hand into
    every bankroll (B x 1 / 1000 in Kuhn: unchanged). In the default phase nothing is spent, so
    after T hands each bank holds exactly T of them."""
    game = blinds_game() if name == "blinds" else limit_game("kuhn3p")
    uniform = uniform_profile(game)
    budget, hands = 3.0, 12
    config = MBBRConfig(safety_budget=budget, hands_default=100)
    model = build_model(game, config, default_strategy=uniform, prior_mean=uniform)
    rng = np.random.default_rng(4)
    for t in range(hands):
        deal = int(rng.integers(game.num_deals))
        terminal = sample_terminal(game, uniform, deal, rng)
        model.observe(observe_limit_hand(game, t % game.num_players, deal, terminal))
    chips = budget * per_unit / 1000
    np.testing.assert_allclose(model._safety.bank, hands * chips, rtol=1e-12)


@pytest.mark.parametrize("name", ["blinds", "kuhn3p"])
def test_a_duplicate_series_reports_the_chips_won_in_the_games_unit(name: str) -> None:
    game = blinds_game() if name == "blinds" else limit_game("kuhn3p")
    agents = ("maniac", "calling-station", "n3")[: game.num_players]
    factories = [fixed_strategy_factory(a, fixed_profile(game, a)) for a in agents]
    hands, seed = 50, 5
    result = run_duplicate(game, agents, factories, hands=hands, duplicates=1, seed=seed)
    # the chips each agent won over the seatings, played again from the same seeds
    chips = np.zeros(game.num_players)
    deals = game.deal_sequence(hands, deck_seed(seed, 0))
    orders = seatings(game.num_players)
    for j, order in enumerate(orders):
        seated = [factories[i](game, agent_seed(seed, 0, j, i)) for i in order]
        for s, won in enumerate(play_match(game, seated, deals)):
            chips[order[s]] += won
    milli_chips = 1000 * chips / (hands * len(orders))
    assert np.any(milli_chips != 0)
    per_unit = 2 if name == "blinds" else 1  # the big blind; Kuhn's ante: unchanged numbers
    assert [r.rate for r in result.agents] == pytest.approx(milli_chips / per_unit, abs=1e-9)
    assert result.unit == game.rate_unit


def test_match_names_the_unit_in_its_table_and_json(tmp_path: Path, capsys) -> None:
    path = tmp_path / "blinds.game"
    path.write_text(BLINDS_1_2)
    argv = ["match", "--game", str(path), "--agents", ",".join(STYLES), "--hands", "40"]
    assert main([*argv, "--duplicates", "2", "--seed", "3", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    game = blinds_game()
    factories = [fixed_strategy_factory(a, fixed_profile(game, a)) for a in STYLES]
    series = run_duplicate(game, STYLES, factories, hands=40, duplicates=2, seed=3)
    assert doc["unit"] == "milli-big-blinds per hand"
    assert {r["name"]: r["mbb_per_hand"] for r in doc["ranking"]} == {
        r.name: pytest.approx(r.rate) for r in series.agents
    }
    assert main([*argv, "--duplicates", "2", "--seed", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["rank", "agent", "mbb/h", "std", "err"]
    assert lines[-1] == (
        "mbb/h: milli-big-blinds per hand (1000 x chips won per hand / the big blind of 2 chips)"
    )


def test_a_tournament_and_an_agents_tally_through_the_dealer_in_milli_big_blinds(
    tmp_path: Path, capsys
) -> None:
    path = tmp_path / "blinds.game"
    path.write_text(BLINDS_1_2)
    hands = 20
    parser = argparse.ArgumentParser()
    tournament_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            *("tournament", "--game", str(path), "--hands", str(hands), "--json"),
            *(f"--agent={s}=builtin:{s}" for s in STYLES),
            *("--out", str(tmp_path / "logs")),
        ]
    )
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unit"] == "milli-big-blinds per hand"
    for match in report["matches"]:
        score = parse_log(Path(match["log"]).read_text()).score
        for name, total in zip(score.names, score.totals, strict=True):
            assert match["mbb_per_hand"][name] == pytest.approx(1000 * total / hands / 2)
    # one seat's own tally: the acpc-agent command against a dealer
    gamedef = read_game_def(path)
    codes: list[int] = []

    def start(ports: tuple[int, ...]) -> list:
        argv = ["acpc-agent", str(path), "127.0.0.1", str(ports[0]), "--agent", STYLES[0]]
        command = threading.Thread(target=lambda: codes.append(main([*argv, "--json"])))
        command.start()
        return [command, AgentThread(ports[1], make_policy(STYLES[1], gamedef, 1), game=gamedef)]

    captured, _ = run_dealer(
        tmp_path, hands=hands, game=gamedef, names=STYLES, clients=start, quiet=True
    )
    assert codes == [0] and captured.result.status == 0
    tally = json.loads(capsys.readouterr().out)
    total = parse_log(captured.log).score.totals[0]
    assert tally["total"] == total and total != 0
    assert tally["mbb_per_hand"] == pytest.approx(1000 * total / hands / 2)
    assert tally["unit"] == "milli-big-blinds per hand"


def test_a_solve_on_first_use_stops_within_a_milli_unit_of_a_game_without_blinds() -> None:
    # no blinds: the unit is the small bet (2 chips), so the bound is 0.002 chips, not 0
    game = compile_limit_game(parse_game_def(_rules("0 0")), "no-blinds")
    _, summary = solved.solve(game, show_progress=False)
    assert summary["nash_conv_bound"] == pytest.approx(solved.NASH_CONV_BOUND * 2)
    assert summary["nash_conv"] <= summary["nash_conv_bound"]
    assert summary["iterations"] < solved.MAX_ITERATIONS
