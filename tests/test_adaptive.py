"""Adaptive opponents: their payoff bookkeeping, how and when they change, seeds, the CLI names."""

from __future__ import annotations

import json

import numpy as np
import pytest

from oppmodel.clients.cli import main as cli_main
from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.observation import observe_limit_cards, observe_limit_hand
from oppmodel.modeling.play.adaptive import (
    FrequencyExploiter,
    LateSwitcher,
    SwitchingAgent,
    TiltingAgent,
    adaptive_factory,
    adaptive_names,
    is_adaptive,
    own_payoff,
)
from oppmodel.modeling.play.match import (
    FixedStrategyAgent,
    play_match,
    run_duplicate,
)
from oppmodel.modeling.play.panel import named_profile


def kuhn_game(n: int):
    """n-player Kuhn: the bundled game file, compiled."""
    return limit_game(f"kuhn{n}p")


def observe_hand(game, position: int, betting: str, cards: list[int]):
    """What ``position`` sees of a hand dealt ``cards`` (ranks, 0 = the lowest)."""
    hole = tuple(game.deck[c] for c in cards)
    return observe_limit_cards(game, position, betting, hole, ("",))


def bet(agent, position: int, infostate: str) -> float:
    """The agent's P(bet) at a Kuhn information state ("Js:cr"): a raise into an unopened pot,
    a call facing a bet."""
    game = agent.game
    card, betting = infostate.split(":")
    node = game.node(betting)
    row = agent.row(position, node, game.view_strings[0].index(card))
    return float(row[1] if agent.facing(node) else row[2])


def _fixed(name: str):
    def build(game, seed):
        return FixedStrategyAgent(name, game, named_profile(game, name), seed)

    return build


@pytest.mark.parametrize("n", [2, 3, 4])
def test_own_payoff_equals_the_game_returns_for_every_hand(n: int) -> None:
    game = kuhn_game(n)
    tree = game.tree
    for t in range(game.num_terminals):
        for d in range(game.num_deals):
            returns = tree.share[tree.terminal_class[t], d] * tree.terminal_pot[t]
            returns = returns - tree.terminal_spent[t]
            for p in range(n):
                assert own_payoff(game, observe_limit_hand(game, p, d, t)) == returns[p]


def _unopened_bet(agent, game, hand_count: int) -> list[float]:
    out = []
    for h in range(hand_count):
        out.append(bet(agent, 0, "Qs:"))
        obs = observe_hand(game, 0, "ccc", [1, 0, 2])
        agent.end_hand(obs)
        assert agent.hands_played == h + 1
    return out


def test_switcher_changes_style_every_period() -> None:
    game = kuhn_game(3)
    agent = SwitchingAgent("s", game, 0, styles=("always-bet", "tight-passive"), period=3)
    assert _unopened_bet(agent, game, 9) == [1, 1, 1, 0, 0, 0, 1, 1, 1]
    assert agent.current_style == "tight-passive"


def test_switcher_plays_each_styles_profile() -> None:
    game = kuhn_game(3)
    agent = SwitchingAgent("s", game, 0, styles=("bluffer", "n2"), period=1)
    for style in ("bluffer", "n2", "bluffer"):
        profile = named_profile(game, style)
        for p in range(3):
            for i in game.infosets(p):
                node = int(game.infoset_node[p][i])
                view = int(game.infoset_view[p][i])
                np.testing.assert_array_equal(agent.row(p, node, view), profile[p, i])
        agent.end_hand(observe_hand(game, 0, "ccc", [0, 1, 2]))


def test_exploiter_counts_opponents_actions_only() -> None:
    game = kuhn_game(3)
    agent = FrequencyExploiter("e", game, 0)
    assert agent.fold_rate == agent.open_rate == 0.5  # the Beta(1, 1) prior
    # We (position 0) bet, both opponents fold: two folds to a bet.
    agent.end_hand(observe_hand(game, 0, "rff", [0, 1, 2]))
    assert (agent.folds, agent.calls, agent.opens, agent.checks) == (2, 0, 0, 0)
    # We check, position 1 opens, position 2 calls, we fold (our own action is not counted).
    agent.end_hand(observe_hand(game, 0, "crcf", [0, 1, 2]))
    assert (agent.folds, agent.calls, agent.opens, agent.checks) == (2, 1, 1, 0)
    # From position 2: position 0 checks, position 1 checks, we check.
    agent.end_hand(observe_hand(game, 2, "ccc", [0, 1, 2]))
    assert (agent.folds, agent.calls, agent.opens, agent.checks) == (2, 1, 1, 2)
    f, g = 3 / 5, 2 / 5
    assert agent.fold_rate == pytest.approx(f) and agent.open_rate == pytest.approx(g)
    assert bet(agent, 0, "Js:") == pytest.approx(f**2)  # bluff with J
    assert bet(agent, 1, "As:c") == 1.0  # always bets the ace
    assert bet(agent, 1, "Ks:r") == pytest.approx(g)  # K calls as often as they open
    assert bet(agent, 1, "Qs:r") == pytest.approx(g**2)
    assert bet(agent, 1, "Js:r") == 0.0  # J never calls


def test_exploiter_bluffs_more_against_folders() -> None:
    game = kuhn_game(3)
    result = run_duplicate(
        game,
        ["exploiter", "tight-passive", "tight-passive#2"],
        [adaptive_factory("exploiter"), *[_fixed("tight-passive")] * 2],
        hands=400,
        duplicates=1,
        seed=5,
    )
    assert result.agents[0].rate > 0  # tight-passive folds all but aces: bluffing pays
    agent = FrequencyExploiter("e", game, 1)
    play_match(
        game,
        [agent, _fixed("tight-passive")(game, 2), _fixed("tight-passive")(game, 3)],
        game.deal_sequence(400, seed=1),
    )
    assert agent.fold_rate > 0.6 and bet(agent, 0, "Js:") > 0.36


def test_tilter_tilts_after_losses_and_calms_down() -> None:
    game = kuhn_game(3)
    agent = TiltingAgent("t", game, 0, window=5, threshold=4.0, tilt=3)
    calm = named_profile(game, "n1")
    assert bet(agent, 0, "As:") == calm[0, game.infoset_from_string(0, "As:"), 2]
    losing = observe_hand(game, 0, "rcc", [0, 1, 2])  # we bet the jack and both call: -2
    assert own_payoff(game, losing) == -2.0
    agent.end_hand(losing)
    assert agent.tilt_left == 0
    agent.end_hand(losing)  # -4 over the window: tilt
    assert agent.tilt_left == 3
    assert bet(agent, 0, "Js:") == pytest.approx(0.9)
    for _ in range(3):
        agent.end_hand(observe_hand(game, 0, "ccc", [3, 1, 2]))
    assert agent.tilt_left == 0
    assert bet(agent, 0, "Js:") == calm[0, game.infoset_from_string(0, "Js:"), 2]


@pytest.mark.parametrize("name", ["switcher", "switcher:7", "exploiter", "tilter"])
def test_same_seed_same_play(name: str) -> None:
    game = kuhn_game(3)
    deals = game.deal_sequence(300, seed=4)

    def play(seed: int) -> tuple[list[int], np.ndarray]:
        agent = adaptive_factory(name)(game, seed)
        actions = []
        act = agent.act

        def recording_act(position: int, view: int, betting: str) -> int:
            actions.append(act(position, view, betting))
            return actions[-1]

        agent.act = recording_act
        agents = [agent, _fixed("maniac")(game, 1), _fixed("uniform")(game, 2)]
        return actions, play_match(game, agents, deals)

    (actions, chips), (again, chips_again) = play(9), play(9)
    assert actions == again and np.array_equal(chips, chips_again)
    assert play(10)[0] != actions
    assert chips.sum() == pytest.approx(0.0)


def test_names_and_errors() -> None:
    assert adaptive_names() == ["switcher", "exploiter", "tilter", "late-switcher"]
    assert is_adaptive("Switcher:40") and not is_adaptive("maniac")
    game = kuhn_game(3)
    assert adaptive_factory("switcher:40")(game, 0).period == 40
    for bad in ("switcher:0", "switcher:x", "exploiter:3", "late-switcher:5", "nobody"):
        with pytest.raises(NotFoundError):
            adaptive_factory(bad)
    with pytest.raises(InvalidArgumentError) as err:
        SwitchingAgent("s", game, 0, period=0)
    assert err.value.field == "period"
    with pytest.raises(InvalidArgumentError) as err:
        TiltingAgent("t", game, 0, threshold=-1.0)
    assert err.value.field == "threshold"
    with pytest.raises(InvalidArgumentError) as err:
        LateSwitcher("l", game, 0, earliest=20, latest=10)
    assert err.value.field == "latest"
    with pytest.raises(InvalidArgumentError, match="Kuhn only") as err:
        adaptive_factory("exploiter")(limit_game("leduc2p"), 0)
    assert err.value.field == "agents"


def test_the_late_switcher_plays_a_maniac_until_its_drawn_hand_then_tight_passive() -> None:
    """The switch hand is drawn per seed from [1000, 2000]; before it every decision is the
    maniac's 0.9, from it on the tight-passive rule's (bet never, call with the ace only)."""
    game = kuhn_game(3)
    hands = {adaptive_factory("late-switcher")(game, seed).switch_hand for seed in range(40)}
    assert min(hands) >= 1000 and max(hands) <= 2000 and len(hands) > 30
    agent = adaptive_factory("late-switcher")(game, 7)
    assert agent.switch_hand == LateSwitcher("x", game, 7).switch_hand  # seeded
    obs = observe_hand(game, 0, "ccc", [0, 1, 2])
    for _ in range(agent.switch_hand):
        assert agent.current_style == "maniac"
        assert bet(agent, 1, "As:cr") == bet(agent, 0, "Js:") == 0.9
        agent.end_hand(obs)
    assert agent.current_style == "tight-passive"
    assert bet(agent, 0, "As:") == 0.0 and bet(agent, 1, "As:r") == 1.0
    assert bet(agent, 1, "Ks:r") == 0.0


def test_adaptive_names_work_in_the_match_cli(capsys) -> None:
    argv = ["match", "--agents", "switcher:20,exploiter,tilter", "--hands", "60"]
    assert cli_main([*argv, "--duplicates", "2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    names = sorted(r["name"] for r in doc["ranking"])
    assert names == ["exploiter", "switcher:20", "tilter"]
    assert sum(r["milli_antes_per_hand"] for r in doc["ranking"]) == pytest.approx(0.0, abs=1e-9)
