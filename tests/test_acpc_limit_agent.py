"""The project's ACPC agent on multi-round limit games (Leduc): information sets from MATCHSTATE,
the bundled ``cfr`` strategy, strategy files, real matches over loopback TCP."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from acpc_support import DATA, AgentThread, run_dealer

from oppmodel.clients.acpc.agent import (
    Decision,
    LimitModelPolicy,
    LimitStrategyPolicy,
    SeatHand,
    make_policy,
    policy_names,
    strategy_policy,
)
from oppmodel.clients.acpc.deal import CardDealer
from oppmodel.clients.acpc.log import check_log, parse_log
from oppmodel.clients.commands import acpc_agent_cmd
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.bundled import strategy_path
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game, limit_game_of
from oppmodel.modeling.games.acpc.gamedef import parse_game_def, read_game_def
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.games.acpc.strategy import load_profile, random_profile, save_profile
from oppmodel.modeling.observation import observe_limit_hand

LEDUC2P = read_game_def(DATA / "leduc.limit.2p.game")
LEDUC3P = read_game_def(DATA / "leduc.limit.3p.game")
# two hole cards and a two-card board: the view must put each group in deck order
TWO_CARDS = parse_game_def(
    "GAMEDEF\nlimit\nnumPlayers = 2\nnumRounds = 2\nblind = 1 1\nraiseSize = 2 4\n"
    "firstPlayer = 1 1\nmaxRaises = 1 1\nnumSuits = 2\nnumRanks = 3\nnumHoleCards = 2\n"
    "numBoardCards = 0 2\nEND GAMEDEF\n"
)


@pytest.mark.parametrize("rules", [LEDUC2P, LEDUC3P, TWO_CARDS], ids=["leduc2p", "leduc3p", "2x2"])
def test_the_information_set_of_a_seats_view_is_the_compiled_one_for_every_deal(rules) -> None:
    game = compile_limit_game(rules)
    tree, h, n = game.tree, rules.num_hole_cards, rules.num_players
    board_at = n * h
    nodes = {}  # (round, player) -> one decision node
    for node in range(game.num_nodes):
        key = (int(tree.node_round[node]), int(tree.node_player[node]))
        if key[1] >= 0:
            nodes.setdefault(key, node)
    for d, row in enumerate(game.deal_cards):
        cards = [game.deck[c] for c in row]
        for (r, p), node in nodes.items():
            hole = "".join(reversed(cards[p * h : (p + 1) * h]))  # any order will do
            board = ["", "".join(reversed(cards[board_at:]))][: r + 1]
            key = game.infostate(hole, board, game.bettings[node])
            expected = tree.node_base[node] + tree.deal_view[r, d, p]
            assert game.infoset_from_string(p, key) == expected


def test_cfr_plays_the_bundled_strategy_at_the_seats_information_set() -> None:
    game = limit_game("leduc2p")
    profile = load_profile(game, strategy_path("leduc2p"))
    key = "Ks/Ah:crc/cr"  # position 0 holds the king, the board is an ace, facing a raise
    want = profile[0, game.infoset_from_string(0, key)]
    assert 0.3 < want.max() < 0.7  # a mixed row, so frequencies show
    state = MatchState(0, 7, "crc/cr", ("Ks", ""), ("", "Ah"))
    decision = Decision(LEDUC2P, state, HandState.from_betting(LEDUC2P, "crc/cr"), str(state))
    policy = make_policy("cfr", LEDUC2P, 3)
    counts = Counter(policy.act(decision) for _ in range(4000))
    for action, p in zip("fcr", want, strict=True):
        # within 4.5 standard deviations (and never an action of probability 0)
        assert abs(counts[action] / 4000 - p) <= 4.5 * np.sqrt(p * (1 - p) / 4000)
    first, second = make_policy("cfr", LEDUC2P, 5), make_policy("cfr", LEDUC2P, 5)
    assert [first.act(decision) for _ in range(50)] == [second.act(decision) for _ in range(50)]


def test_agent_names_depend_on_the_game_and_unknown_ones_are_refused() -> None:
    leduc = policy_names(LEDUC3P)
    assert leduc[:3] == ["mbbr", "cfr", "uniform"]
    assert {"maniac", "bluffer", "example"} <= set(leduc) and "n1" not in leduc
    assert isinstance(make_policy("mbbr", LEDUC3P, 0), LimitModelPolicy)  # the limit model
    assert {"mbbr", "n1", "maniac", "example"} <= set(policy_names(read_game_def("kuhn3p")))
    with pytest.raises(InvalidArgumentError, match="unknown agent 'n1'; known: mbbr, cfr"):
        make_policy("n1", LEDUC3P, 0)
    with pytest.raises(InvalidArgumentError, match="unknown agent 'nobody'; known: mbbr, n1"):
        make_policy("nobody", read_game_def("kuhn3p"), 0)
    with pytest.raises(InvalidArgumentError, match="bluff probability"):
        make_policy("bluffer:2", LEDUC3P, 0)


def test_styles_play_leduc_by_their_rules_in_a_real_match(tmp_path: Path) -> None:
    agents = ("always-bet", "calling-station", "maniac@0.35")

    def start(ports: tuple[int, ...]) -> list[AgentThread]:
        return [
            AgentThread(port, make_policy(name, LEDUC3P, seed), game=LEDUC3P)
            for seed, (name, port) in enumerate(zip(agents, ports, strict=True))
        ]

    captured, _ = run_dealer(
        tmp_path, hands=30, game=LEDUC3P, names=("raiser", "station", "diluted"), clients=start
    )
    assert captured.result.status == 0, captured.stderr
    log = parse_log(captured.log)
    assert check_log(LEDUC3P, log) == []
    played = Counter()
    for hand in log.hands:
        state = HandState(LEDUC3P)
        for action in hand.betting.replace("/", ""):
            name = hand.names[state.current]
            if name == "raiser":  # raises whenever it may, else calls
                assert action == ("r" if state.is_valid("r") else "c")
            elif name == "station":  # never raises, never folds
                assert action == "c"
            played[name, action] += 1
            state.apply(action)
    assert played["diluted", "r"] and played["raiser", "r"] and played["station", "c"]
    # the diluted maniac is the profile 0.35 maniac + 0.65 cfr, played at its information sets
    game = limit_game_of(LEDUC3P)
    diluted = make_policy("maniac@0.35", LEDUC3P, 0).profile
    maniac = make_policy("maniac", LEDUC3P, 0).profile
    cfr = make_policy("cfr", LEDUC3P, 0).profile
    assert np.allclose(diluted, 0.35 * maniac + 0.65 * cfr)
    assert diluted.shape == (3, game.num_infosets, 3)


def pure_profile(game, seed: int) -> np.ndarray:
    """A random pure profile (one legal action per information set)."""
    mixed = random_profile(game, np.random.default_rng(seed))
    return np.eye(3)[mixed.argmax(axis=2)] * game.legal_mask


class Remembering(LimitStrategyPolicy):
    """A fixed strategy that keeps every finished hand it is told about."""

    def __init__(self, game, profile: np.ndarray, seed: int) -> None:
        super().__init__(game, profile, seed)
        self.seen: list[SeatHand] = []

    def observe(self, hand: SeatHand) -> None:
        self.seen.append(hand)


def test_pure_strategies_act_as_their_information_sets_say_in_a_real_match(
    tmp_path: Path,
) -> None:
    game = limit_game_of(LEDUC3P)
    profiles = [pure_profile(game, seed) for seed in range(3)]
    policies = [Remembering(game, profile, 0) for profile in profiles]
    hands = 60

    def start(ports: tuple[int, ...]) -> list[AgentThread]:
        return [
            AgentThread(port, policy, game=LEDUC3P)
            for port, policy in zip(ports, policies, strict=True)
        ]

    captured, agents = run_dealer(tmp_path, hands=hands, game=LEDUC3P, clients=start, quiet=True)
    assert captured.result.status == 0, captured.stderr
    log = parse_log(captured.log)
    assert check_log(LEDUC3P, log) == [] and len(log.hands) == hands
    seat_of = {"Alice": 0, "Bob": 1, "Carol": 2}
    rounds_seen = set()
    for hand in log.hands:
        state = HandState(LEDUC3P)
        for action in hand.betting:
            if action == "/":
                continue
            p = state.current
            rounds_seen.add(state.round)
            # the key written out by hand: hole card, then the board once round 2 began
            view = hand.hole[p] + ("/" + hand.board[0] if state.round else "")
            row = game.infoset_from_string(p, f"{view}:{state.betting}")
            chosen = profiles[seat_of[hand.names[p]]][p, row]
            assert action == "fcr"[int(chosen.argmax())], (hand, state.betting)
            state.apply(action)
    assert rounds_seen == {0, 1}
    # each agent's own tally (from what it saw, board included) equals its seat's SCORE
    assert [a.result.total for a in agents] == list(log.score.totals)
    assert all(a.result.hands == hands and a.result.ignored_lines == 0 for a in agents)
    # what each seat was told of a hand is the core's observation of that deal and terminal
    dealer = CardDealer(LEDUC3P, 42)
    for hand in log.hands:
        deal = dealer.deal()
        d = game.deal_index(deal.hole, deal.board)
        terminal = int(game.tree.node_terminal[game.node(hand.betting)])
        for policy, name in zip(policies, ("Alice", "Bob", "Carol"), strict=True):
            seen = policy.seen[hand.hand]
            assert seen.hand == hand.hand and seen.position == hand.names.index(name)
            want = observe_limit_hand(game, seen.position, d, terminal)
            assert seen.limit_observation() == want


def test_the_command_plays_a_strategy_file_and_cfr_in_a_leduc_match(tmp_path: Path) -> None:
    game = limit_game("leduc2p")
    strategy = tmp_path / "pure.json"
    save_profile(game, pure_profile(game, 9), strategy)
    processes = []

    def start(ports: tuple[int, ...]) -> list:
        argv = [sys.executable, "-m", "oppmodel.clients.cli", "acpc-agent", "leduc2p"]
        processes.append(
            subprocess.Popen(
                [*argv, "127.0.0.1", str(ports[0]), "--strategy", str(strategy), "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        cfr = make_policy("cfr", LEDUC2P, 4)
        return [AgentThread(ports[1], cfr, game=LEDUC2P)]

    # a fresh interpreter starting under load can take seconds to connect
    captured, _ = run_dealer(
        tmp_path,
        hands=40,
        game=LEDUC2P,
        names=("file", "cfr"),
        clients=start,
        quiet=True,
    )
    (process,) = processes
    out, err = process.communicate(timeout=60)
    assert captured.result.status == 0, captured.stderr + err
    tally = json.loads(out)
    log = parse_log(captured.log)
    assert tally["agent"] == f"strategy {strategy}"
    assert tally["hands"] == 40 and tally["total"] == log.score.totals[0]
    pure = strategy_policy(LEDUC2P, strategy, 0)
    for hand in log.hands:  # the file's pure choices, wherever "file" sat
        state = HandState(LEDUC2P)
        for action in hand.betting.replace("/", ""):
            if hand.names[state.current] == "file":
                p = state.current
                board = ("", *hand.board)[: state.round + 1]
                seen = MatchState(p, hand.hand, state.betting, hand.hole, board)
                row = pure.infoset(Decision(LEDUC2P, seen, state, str(seen)))
                assert action == "fcr"[int(pure.profile[p, row].argmax())]
            state.apply(action)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--agent", "n1"], "unknown agent 'n1'; known: mbbr, cfr"),
        (["--in-process", "--agent", "cfr"], "play mbbr only"),
        (["--strategy", "x.json", "--agent", "cfr"], "drop --agent"),
    ],
)
def test_the_command_refuses_what_it_cannot_play_in_leduc(extra: list[str], message: str) -> None:
    parser = argparse.ArgumentParser()
    acpc_agent_cmd.add_arguments(parser)
    args = parser.parse_args(["leduc3p", "127.0.0.1", "1", *extra])
    with pytest.raises(InvalidArgumentError, match=message):
        acpc_agent_cmd.run(args)


def test_the_decision_budget_shares_half_the_hand_time_among_a_seats_most_decisions() -> None:
    most = acpc_agent_cmd.most_decisions_per_hand
    assert [most(limit_game(g).gamedef) for g in ("kuhn3p", "leduc2p", "leduc3p")] == [2, 4, 6]
    # 3-player Leduc: check, then call two raises, in both rounds
    assert acpc_agent_cmd.default_decision_budget_ms(limit_game("leduc3p").gamedef) == 7000 / 2 / 6
    # by the rules alone, where the tree does not compile: 3-player hold'em, 3 actions preflop
    # and 4 in each later round; 2-player hold'em as its compiled abstract game's tree says
    assert [most(read_game_def(g)) for g in ("holdem2p", "holdem3p")] == [12, 15]


def test_the_service_decisions_times_are_summed_up_in_ms() -> None:
    seconds = [0.002] * 98 + [0.040, 0.900]  # numpy's linear percentile: 99% is 0.99 of the way
    got = acpc_agent_cmd.latency_ms(seconds)
    assert got == pytest.approx({"p50": 2.0, "p99": 40.0 + 0.01 * 860.0, "max": 900.0})
    assert acpc_agent_cmd.latency_ms([]) is None
