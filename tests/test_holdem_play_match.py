"""Hold'em played: the sampled match engine (modeling/holdem/match.py, through run_duplicate and
`oppmodel match`) and the hold'em styles in `acpc-agent` against the project's dealer over
loopback TCP, in both ACPC hold'em games."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import pytest
from acpc_support import DATA, AgentThread, run_dealer

from oppmodel.clients.acpc.agent import make_policy, policy_names
from oppmodel.clients.acpc.log import check_log, parse_log
from oppmodel.clients.cli import main
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import AbstractionConfig
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig, abstract_game
from oppmodel.modeling.games.acpc.strategy import save_profile
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match
from oppmodel.modeling.holdem.strength import warm_up
from oppmodel.modeling.holdem.styles import policy_factory
from oppmodel.modeling.play.match import run_duplicate
from oppmodel.modeling.solve.mccfr import MCCFRConfig, MCCFRSolver

HOLDEM2P_FILE = DATA / "holdem.limit.2p.reverse_blinds.game"
HOLDEM3P_FILE = DATA / "holdem.limit.3p.game"
HOLDEM2P = read_game_def(HOLDEM2P_FILE)
HOLDEM3P = read_game_def(HOLDEM3P_FILE)


def series(gamedef, names, *, hands=40, duplicates=2, seed=3):
    game = HoldemGame("holdem", gamedef)
    factories = [policy_factory(name, gamedef) for name in names]
    return run_duplicate(game, names, factories, hands=hands, duplicates=duplicates, seed=seed)


def test_the_same_style_in_every_seat_of_a_duplicate_wins_nothing():
    # every seating plays the same cards: a deterministic style meets its own play exactly
    result = series(HOLDEM2P, ["tight-passive", "tight-passive"])
    assert [r.per_duplicate for r in result.agents] == [(0.0, 0.0)] * 2


def test_a_series_is_seeded_zero_sum_and_in_mbb_per_hand():
    names = ["maniac", "calling-station", "bluffer"]
    first = series(HOLDEM3P, names)
    again = series(HOLDEM3P, names)
    assert first == again and first.unit.label == "mbb/h"
    assert sum(r.rate for r in first.agents) == pytest.approx(0.0, abs=1e-9)
    assert series(HOLDEM3P, names, seed=4) != first


def cards_of(deal: list[int]) -> list[str]:
    return ["23456789TJQKA"[c // 4] + "cdhs"[c % 4] for c in deal]


def test_the_engine_deals_whole_hands_and_pays_what_the_rules_pay():
    # always-raise (seat 0) against calling-station: the betting is fixed, every hand a showdown
    game = HoldemGame("holdem", HOLDEM2P)
    deals = game.deal_sequence(25, seed=8)
    assert deals.shape == (25, 9) and all(len(set(row)) == 9 for row in deals.tolist())
    raiser = policy_factory("always-raise", HOLDEM2P)(game, 1)
    station = policy_factory("calling-station", HOLDEM2P)(game, 2)
    chips = play_holdem_match(game, [raiser, station], deals)
    expected = np.zeros(2)
    for h, deal in enumerate(deals.tolist()):
        hand = HandState(HOLDEM2P)
        while not hand.finished:  # seat 0 is position h % 2
            raises = (hand.current + h) % 2 == 0 and hand.is_valid("r")
            hand.apply("r" if raises else "c")
        cards = cards_of(deal)
        hole = (cards[0] + cards[1], cards[2] + cards[3])
        payoffs = hand.payoffs(hole, ("", "".join(cards[4:7]), cards[7], cards[8]))
        for p in range(2):
            expected[(p + h) % 2] += payoffs[p]
    np.testing.assert_array_equal(chips, expected)


def test_an_illegal_action_names_the_agent():
    class Raiser(PolicyAgent):
        def act(self, spot, hole):
            return 2  # a raise, even past the cap

    game = HoldemGame("holdem", HOLDEM2P)
    agents = [Raiser("raiser", policy_factory("uniform", HOLDEM2P)(game, 0).policy, 0)] * 2
    with pytest.raises(IllegalActionError, match="agent raiser returned 2 after 'rrr'"):
        play_holdem_match(game, agents, game.deal_sequence(1, 1))


def test_oppmodel_match_plays_holdem_and_refuses_what_it_cannot(capsys):
    argv = ["match", "--game", str(HOLDEM2P_FILE), "--hands", "30", "--duplicates", "2"]
    assert main([*argv, "--agents", "maniac,tight-passive", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["unit"] == "milli-big-blinds per hand" and doc["seatings"] == 2
    assert {r["name"] for r in doc["ranking"]} == {"maniac", "tight-passive"}
    assert main([*argv, "--agents", "mbbr,maniac"]) == 2
    assert "oppmodel match: error: agents: unknown hold'em agent 'mbbr'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("gamedef", "names"),
    [
        (HOLDEM2P, ("always-raise", "tight-passive")),
        (HOLDEM2P, ("cfr", "maniac")),  # the bundled blueprint
        (HOLDEM3P, ("bluffer", "maniac", "uniform")),
        (HOLDEM3P, ("cfr", "maniac", "calling-station")),  # the bundled 3-player blueprint
    ],
)
def test_styles_play_a_match_with_the_dealer_paying_what_they_count(tmp_path, gamedef, names):
    policies = [make_policy(name, gamedef, seed) for seed, name in enumerate(names)]
    seats = ("Alice", "Bob", "Carol")[: len(names)]
    hands = 30

    def start(ports):
        return [
            AgentThread(port, policy, game=gamedef)
            for port, policy in zip(ports, policies, strict=True)
        ]

    captured, agents = run_dealer(tmp_path, hands=hands, game=gamedef, clients=start, names=seats)
    assert captured.result.status == 0, captured.stderr
    assert "WARNING" not in captured.stderr  # no invalid action, no unparsed reply
    log = parse_log(captured.log)
    assert check_log(gamedef, log) == [] and len(log.hands) == hands
    # each agent's own count of its chips (from what it saw) is the dealer's SCORE for its seat
    assert [a.result.total for a in agents] == list(log.score.totals)
    assert all(a.result.hands == hands and a.result.ignored_lines == 0 for a in agents)
    assert any("/" in hand.betting for hand in log.hands)  # hands reach the flop
    if names[0] == "always-raise":  # it raised at every decision where a raise was legal
        for hand in log.hands:
            state = HandState(gamedef)
            for action in hand.betting.replace("/", ""):
                if hand.names[state.current] == "Alice":
                    assert action == ("r" if state.is_valid("r") else "c"), hand
                state.apply(action)


def test_the_agent_names_the_holdem_agents():
    assert "tight-passive" in policy_names(HOLDEM2P) and "mbbr" not in policy_names(HOLDEM2P)
    with pytest.raises(InvalidArgumentError, match="agent: unknown hold'em agent 'n1'"):
        make_policy("n1", HOLDEM3P, 0)


def test_the_acpc_agent_command_plays_holdem(tmp_path):
    # the preflop table in the run's cache folder (the agents inherit it): each agent computing
    # it before it connects took longer than the dealer's start timeout at load 40
    warm_up()
    processes = []

    def start(ports):
        for port, name in zip(ports, ("maniac", "calling-station"), strict=True):
            argv = [sys.executable, "-m", "oppmodel.clients.cli", "acpc-agent", str(HOLDEM2P_FILE)]
            processes.append(
                subprocess.Popen(
                    [*argv, "127.0.0.1", str(port), "--agent", name, "--json"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        return []

    captured, _ = run_dealer(tmp_path, hands=20, game=HOLDEM2P, clients=start, names=("A", "B"))
    outs = [p.communicate(timeout=300) for p in processes]
    assert captured.result.status == 0, captured.stderr
    tallies = [json.loads(out) for out, _ in outs]
    assert [t["total"] for t in tallies] == list(parse_log(captured.log).score.totals)
    assert [t["agent"] for t in tallies] == ["maniac", "calling-station"]


def test_a_blueprint_file_plays_in_a_holdem_match(tmp_path, capsys):
    cards = AbstractionConfig(buckets=(3, 3, 3, 3), samples=50, rollouts=4, seed=1)
    config = AbstractGameConfig(cards, 30, 2)  # a small sample of deals: a few seconds
    game = abstract_game("holdem2p", config)
    solver = MCCFRSolver(game, MCCFRConfig(seed=1))
    solver.run(2_000)
    path = tmp_path / "bp.json"
    save_profile(game, solver.average_profile(), path, solver={"abstract_game": asdict(config)})
    argv = ["match", "--game", "holdem2p", "--hands", "20", "--duplicates", "2", "--json"]
    assert main([*argv, "--agents", f"{path},maniac"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in doc["ranking"]} == {str(path), "maniac"}
    capsys.readouterr()
    assert main([*argv, "--agents", "cfr,maniac"]) == 0  # the bundled blueprint
    deep = tmp_path / "deep3p.game"  # hold'em rules no blueprint is bundled for
    deep.write_text(HOLDEM3P.to_text().replace("maxRaises = 3 4 4 4", "maxRaises = 4 4 4 4"))
    argv[2] = str(deep)  # the error says how to solve this game's
    assert main([*argv, "--agents", "cfr,maniac,maniac"]) == 2
    assert f"oppmodel solve {deep} --out blueprint.json" in capsys.readouterr().err
