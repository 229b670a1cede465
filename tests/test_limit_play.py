"""Playing limit games (Leduc): the panel's styles from hand strength, the cfr agent, diluted
styles, and the match engine's kernel against an independent simulation through the game's
public API."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_limit_game import small_games

from oppmodel.clients.cli import main
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError, NotFoundError
from oppmodel.modeling.evaluation.limit import expected_values, nash_conv
from oppmodel.modeling.games.acpc.bundled import game_path, strategy_path
from oppmodel.modeling.games.acpc.compiler import compile_limit_game, limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.strategy import load_profile, save_profile, validate_profile
from oppmodel.modeling.observation import validate_limit_observation
from oppmodel.modeling.play.diluted import diluted_factory, diluted_profile, fixed_profile
from oppmodel.modeling.play.match import (
    FixedStrategyAgent,
    fixed_strategy_factory,
    limit_action,
    play_match,
    run_duplicate,
    sample_terminal,
)
from oppmodel.modeling.play.panel import (
    MIDDLE,
    NUTS,
    WORST,
    hand_classes,
    named_profile,
    panel_names,
)
from oppmodel.modeling.play.tournament import (
    AgentSpec,
    agent_factory,
    fixed_value,
    response_ceiling,
)

STYLES = ["always-bet", "calling-station", "tight-passive", "maniac", "bluffer", "bluffer:0.3"]


# --- the panel ------------------------------------------------------------------------------


def test_leduc_hand_classes() -> None:
    """Round 0: the top rank is the nuts, the bottom rank the worst. Round 1: a pair with the
    board is the nuts (and only it: an opponent may pair the board), the worst is an unpaired
    card below which no unpaired card is left."""
    for name, ranks in (("leduc2p", "QKA"), ("leduc3p", "JQKA")):
        game = limit_game(name)
        first, second = hand_classes(game)
        for w, view in enumerate(game.view_strings[0]):
            expected = {ranks[-1]: NUTS, ranks[0]: WORST}.get(view[0], MIDDLE)
            assert first[w] == expected, view
        for w, view in enumerate(game.view_strings[1]):
            hole, board = view[0], view[3]
            lowest_unpaired = next(r for r in ranks if r != board)
            expected = NUTS if hole == board else WORST if hole == lowest_unpaired else MIDDLE
            assert second[w] == expected, view


@pytest.mark.parametrize(
    ("name", "position", "infostate", "expected"),
    [
        ("always-raise", 1, "Qh:r", [0, 0, 1]),  # facing a raise, one raise left
        ("always-bet", 2, "Qh:rr", [0, 1, 0]),  # at the cap: call
        ("calling-station", 1, "Qh:r", [0, 1, 0]),
        ("calling-station", 0, "Ah:", [0, 1, 0]),
        ("tight-passive", 1, "Ah:r", [0, 1, 0]),
        ("tight-passive", 1, "Kh:r", [1, 0, 0]),
        ("tight-passive", 0, "Ah:", [0, 1, 0]),
        ("tight-passive", 1, "Kh/Ks:ccc/r", [0, 1, 0]),  # a pair with the board
        ("tight-passive", 1, "Ah/Ks:ccc/r", [1, 0, 0]),  # ace high is not the nuts
        ("maniac", 0, "Kh:", [0, 0.1, 0.9]),
        ("maniac", 2, "Qh:rr", [0.1, 0.9, 0]),
        ("bluffer", 0, "Jh:", [0, 0.25, 0.75]),
        ("bluffer", 0, "Jh/Qs:ccc/", [0, 0.25, 0.75]),  # J is the worst on a queen board
        ("bluffer", 0, "Kh/Qs:ccc/", [0, 1, 0]),
        ("bluffer", 1, "Qh/Qs:ccc/r", [0, 0, 1]),
        ("bluffer", 1, "Jh:r", [1, 0, 0]),
    ],
)
def test_leduc_styles_mean_what_they_mean_in_kuhn(name, position, infostate, expected) -> None:
    game = limit_game("leduc3p")
    row = named_profile(game, name)[position, game.infoset_from_string(position, infostate)]
    np.testing.assert_allclose(row, expected, atol=1e-15)


@settings(max_examples=15, deadline=None)
@given(small_games(), st.sampled_from(STYLES))
def test_styles_are_valid_profiles_of_any_game(text: str, name: str) -> None:
    game = compile_limit_game(parse_game_def(text))
    profile = named_profile(game, name)
    np.testing.assert_array_equal(validate_profile(game, profile), profile)


def test_styles_are_exploitable_and_cfr_is_the_bundled_strategy() -> None:
    game = limit_game("leduc2p")
    cfr = named_profile(game, "cfr")
    np.testing.assert_array_equal(cfr, load_profile(game, strategy_path("leduc2p")))
    assert nash_conv(game, cfr) < 1e-3
    for name in STYLES:
        assert nash_conv(game, named_profile(game, name)) > 0.5
    assert panel_names(game) == ["cfr", "uniform", *STYLES[:-1]]
    with pytest.raises(NotFoundError, match="unknown strategy 'n1' for leduc2p"):
        named_profile(game, "n1")


def test_diluted_styles_mix_with_the_bundled_strategy() -> None:
    game = limit_game("leduc3p")
    mixed = diluted_profile(game, "maniac@0.35")
    expected = 0.35 * named_profile(game, "maniac") + 0.65 * named_profile(game, "cfr")
    np.testing.assert_array_equal(mixed, expected)
    np.testing.assert_array_equal(fixed_profile(game, "maniac@0.35"), mixed)
    np.testing.assert_array_equal(fixed_profile(game, "bluffer"), named_profile(game, "bluffer"))
    with pytest.raises(InvalidArgumentError, match="adaptive agents play Kuhn only"):
        agent_factory(AgentSpec("exploiter"))(game, 0)
    with pytest.raises(InvalidArgumentError, match="adaptive agents play Kuhn only"):
        diluted_factory("tilter@0.5")(game, 0)


# --- the match engine -----------------------------------------------------------------------


def _view_string(game, deal: int, position: int, betting: str) -> str:
    """What ``position`` sees, written independently of the compiled views: its hole card, then
    the board card of each round begun."""
    cards = [game.deck[c] for c in game.deal_cards[deal]]
    n = game.num_players
    return "/".join([cards[position], *cards[n : n + betting.count("/")]])


def _simulate(game, profiles: list[np.ndarray], seeds: list[int], deals: np.ndarray):
    """Chips per seat of a match, played through the game's public API (betting strings,
    information-state strings, ``returns``) with each seat's own uniform stream."""
    n = game.num_players
    rngs = [np.random.default_rng(s) for s in seeds]
    chips = np.zeros(n)
    for h, d in enumerate(deals):
        betting = ""
        while (p := game.current_player(betting)) >= 0:
            seat = (p + h) % n
            infoset = game.infoset_from_string(p, f"{_view_string(game, d, p, betting)}:{betting}")
            action = limit_action(
                game, game.node(betting), profiles[seat][p, infoset], rngs[seat].random()
            )
            betting = game.child(betting, action)
        cards = [game.deck[c] for c in game.deal_cards[d]]
        payoff = game.returns(betting, cards[:n], ["", *cards[n:]])
        for p in range(n):
            chips[(p + h) % n] += payoff[p]
    return chips


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_kernel_equals_a_simulation_through_the_public_api(name: str) -> None:
    game = limit_game(name)
    names = ["maniac@0.5", "uniform", "bluffer"][: game.num_players]
    profiles = [fixed_profile(game, nm) for nm in names]
    seeds = [21, 22, 23][: game.num_players]
    deals = game.deal_sequence(400, seed=5)
    agents = [
        FixedStrategyAgent(nm, game, pr, s)
        for nm, pr, s in zip(names, profiles, seeds, strict=True)
    ]
    chips = play_match(game, agents, deals)
    np.testing.assert_allclose(chips, _simulate(game, profiles, seeds, deals), atol=1e-9)
    # the generators were advanced by exactly the uniforms used, as the simulation's were
    rngs_after = [a.rng.random() for a in agents]
    replay = [np.random.default_rng(s) for s in seeds]
    replay_agents = [
        FixedStrategyAgent(nm, game, pr, 0) for nm, pr in zip(names, profiles, strict=True)
    ]
    for agent, rng in zip(replay_agents, replay, strict=True):
        agent.rng = rng
    play_match(game, replay_agents, deals)
    assert [a.rng.random() for a in replay_agents] == rngs_after


class RecordingAgent(FixedStrategyAgent):
    """A fixed strategy that logs what it is asked and told (a subclass: the Python loop)."""

    def __init__(self, *args) -> None:
        super().__init__(*args)
        self.acts: list[tuple[int, int, str]] = []
        self.observations: list = []

    def act(self, position: int, private: int, history: str) -> int:
        self.acts.append((position, private, history))
        return super().act(position, private, history)

    def end_hand(self, obs) -> None:
        self.observations.append(obs)


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_python_loop_equals_the_kernel_and_shows_each_seat_what_it_saw(name: str) -> None:
    game = limit_game(name)
    n = game.num_players
    names = ["maniac", "calling-station@0.5", "bluffer"][:n]
    profiles = [fixed_profile(game, nm) for nm in names]
    deals = game.deal_sequence(300, seed=8)
    fixed = [FixedStrategyAgent(nm, game, profiles[i], 30 + i) for i, nm in enumerate(names)]
    recording = [RecordingAgent(nm, game, profiles[i], 30 + i) for i, nm in enumerate(names)]
    np.testing.assert_array_equal(
        play_match(game, recording, deals), play_match(game, fixed, deals)
    )
    for seat, agent in enumerate(recording):
        assert len(agent.observations) == len(deals)
        for h, obs in enumerate(agent.observations):
            validate_limit_observation(game, obs)
            assert obs.position == (seat - h) % n
            cards = [game.deck[c] for c in game.deal_cards[deals[h]]]
            assert obs.hole[obs.position] == cards[obs.position]
            assert obs.board == ("", *cards[n:])[: obs.betting.count("/") + 1]
        for position, view, betting in agent.acts:
            assert game.current_player(betting) == position
            rnd = betting.count("/")
            assert 0 <= view < len(game.view_strings[rnd])


def test_an_illegal_limit_action_is_reported() -> None:
    game = limit_game("leduc2p")

    class Folder(RecordingAgent):
        def act(self, position: int, private: int, history: str) -> int:
            return 0  # folding with nothing to call is not a legal action

    agents = [
        Folder("f", game, fixed_profile(game, "cfr"), 1),
        *[RecordingAgent("c", game, fixed_profile(game, "cfr"), 2)],
    ]
    with pytest.raises(IllegalActionError, match="agent f returned 0 after ''"):
        play_match(game, agents, game.deal_sequence(3, seed=1))


def test_sampled_hands_follow_the_reach_probabilities() -> None:
    """sample_terminal (the learning-cost benchmark's hands) reaches each terminal of a deal with
    the product of the profile's probabilities along its path."""
    game = limit_game("leduc2p")
    profile = fixed_profile(game, "maniac@0.5")
    tree, deal, draws = game.tree, 17, 40_000
    rng = np.random.default_rng(0)
    counts = np.bincount(
        [sample_terminal(game, profile, deal, rng) for _ in range(draws)],
        minlength=game.num_terminals,
    )
    exact = np.ones(game.num_terminals)
    for t, node in enumerate(np.flatnonzero(tree.node_terminal >= 0)):
        while (parent := tree.node_parent[node]) >= 0:
            p, r = tree.node_player[parent], tree.node_round[parent]
            infoset = tree.node_base[parent] + tree.deal_view[r, deal, p]
            exact[t] *= profile[p, infoset, tree.node_action[node]]
            node = parent
    assert exact.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(counts / draws, exact, atol=5 * 0.5 / np.sqrt(draws))


def test_deals_cover_hole_and_board_cards_uniformly() -> None:
    game = limit_game("leduc3p")
    deals = game.deal_sequence(168_000, seed=3)
    counts = np.bincount(deals, minlength=game.num_deals)
    assert counts.sum() == 168_000 and len(counts) == game.num_deals == 1680
    assert abs(counts.mean() - 100) < 1e-9 and counts.min() > 50 and counts.max() < 150
    cards = game.deal_cards[deals]  # hole cards of 3 positions, then the board: all distinct
    assert all(len(set(row)) == 4 for row in cards[:1000].tolist())


def test_duplicate_leduc_series_is_seeded_and_zero_sum() -> None:
    game = limit_game("leduc3p")
    names = ["cfr", "maniac@0.35", "tight-passive"]
    factories = [fixed_strategy_factory(nm, fixed_profile(game, nm)) for nm in names]

    def series(seed):
        return run_duplicate(game, names, factories, hands=300, duplicates=3, seed=seed)

    a, b = series(4), series(4)
    assert a == b and a != series(5)
    np.testing.assert_allclose(np.sum([r.per_duplicate for r in a.agents], axis=0), 0, atol=1e-9)
    # identical deterministic agents win exactly nothing: every seating plays the same cards
    station = [fixed_strategy_factory("cs", fixed_profile(game, "calling-station"))] * 3
    same = run_duplicate(game, ["a", "b", "c"], station, hands=100, duplicates=2, seed=2)
    for r in same.agents:
        assert r.per_duplicate == pytest.approx((0.0, 0.0), abs=1e-9)


def test_ceiling_bounds_every_fixed_strategy_in_leduc() -> None:
    game = limit_game("leduc3p")
    cfr, maniac = fixed_profile(game, "cfr"), fixed_profile(game, "maniac@0.35")
    ceiling = response_ceiling(game, cfr, maniac)
    for name in ("cfr", "calling-station", "maniac"):
        assert fixed_value(game, fixed_profile(game, name), cfr, maniac) <= ceiling + 1e-9
    assert ceiling > fixed_value(game, cfr, cfr, maniac) > 0


# --- the commands ---------------------------------------------------------------------------


def _cli_json(capsys, *argv: str) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_eval_a_leduc_profile_by_name_and_by_file(capsys, tmp_path) -> None:
    game = limit_game("leduc3p")
    doc = _cli_json(capsys, "eval", "--game", "leduc3p", "--profile", "maniac@0.35")
    assert doc["game"] == "leduc3p" and len(doc["positions"]) == 3
    values = expected_values(game, fixed_profile(game, "maniac@0.35"))
    assert [e["value"] for e in doc["positions"]] == pytest.approx(values, abs=1e-12)
    assert doc["nash_conv"] == pytest.approx(nash_conv(game, fixed_profile(game, "maniac@0.35")))
    # the uniform profile's values are OpenSpiel's for its leduc_poker (-5/64, 5/64)
    doc = _cli_json(capsys, "eval", "--game", "leduc2p", "--profile", "uniform")
    assert [e["value_exact"] for e in doc["positions"]] == ["-5/64", "5/64"]
    two = limit_game("leduc2p")
    path = tmp_path / "bluffer.json"
    save_profile(two, named_profile(two, "bluffer"), path)
    by_file = _cli_json(capsys, "eval", "--game", "leduc2p", "--profile", str(path))
    by_name = _cli_json(capsys, "eval", "--game", "leduc2p", "--profile", "bluffer")
    assert by_file["positions"] == by_name["positions"]
    game_file = str(game_path("leduc2p"))  # a game file works as well as a short name
    assert (
        _cli_json(capsys, "eval", "--game", game_file, "--profile", "bluffer")["positions"]
        == (by_name["positions"])
    )
    assert main(["eval", "--game", "leduc2p", "--profile", "bluffer"]) == 0
    assert "nash_conv" in capsys.readouterr().out


def test_eval_errors_name_what_is_wrong(capsys, tmp_path) -> None:
    assert main(["eval", "--game", "leduc3p", "--profile", "n1"]) == 2
    assert "unknown strategy 'n1' for leduc3p" in capsys.readouterr().err
    assert main(["eval", "--game", "nowhere.game", "--profile", "cfr"]) == 2
    assert "no such file" in capsys.readouterr().err
    path = tmp_path / "half.json"
    path.write_text(json.dumps({"num_players": 2, "position": 0, "strategy": {"Qh:": [0, 1, 0]}}))
    assert main(["eval", "--game", "leduc2p", "--profile", str(path)]) == 2
    assert "strategy: missing" in capsys.readouterr().err


def test_match_leduc3p_fixed_agents(capsys) -> None:
    argv = ["match", "--game", "leduc3p", "--agents", "cfr,maniac@0.35,cfr", "--hands", "200"]
    a = _cli_json(capsys, *argv, "--duplicates", "3", "--seed", "3")
    assert a == _cli_json(capsys, *argv, "--duplicates", "3", "--seed", "3")
    assert (a["game"], a["seatings"], a["mbbr"]) == ("leduc3p", 6, None)
    assert {r["name"] for r in a["ranking"]} == {"cfr", "cfr#2", "maniac@0.35"}
    assert sum(r["milli_antes_per_hand"] for r in a["ranking"]) == pytest.approx(0.0, abs=1e-9)
    assert main(["match", "--game", "leduc3p", "--agents", "cfr,cfr"]) == 2
    assert "leduc3p needs 3 agents" in capsys.readouterr().err
