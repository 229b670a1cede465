"""The match engine: rotation, what each seat sees, duplicate cards, exact expectations, seeds."""

from __future__ import annotations

import numpy as np
import pytest

from oppmodel.clients.commands._games import resolve_game
from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.observation import observe_limit_hand, validate_limit_observation
from oppmodel.modeling.play import match
from oppmodel.modeling.play.match import (
    FixedStrategyAgent,
    fixed_strategy_factory,
    play_match,
    run_duplicate,
    seatings,
)
from oppmodel.modeling.play.panel import named_profile


def kuhn_game(n: int):
    """n-player Kuhn: the bundled game file, compiled."""
    return limit_game(f"kuhn{n}p")


class RecordingAgent(FixedStrategyAgent):
    """A fixed strategy that logs every call (and, being a subclass, takes the Python loop)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.acts: list[tuple[int, int, str]] = []  # this hand's decisions so far
        self.observations = []
        self.acts_per_hand = []
        self.seat = None
        self.table = None

    def begin_match(self, game, seat: int, names) -> None:
        super().begin_match(game, seat, names)
        self.seat, self.table = seat, names

    def act(self, position: int, view: int, betting: str) -> int:
        self.acts.append((position, view, betting))
        return super().act(position, view, betting)

    def end_hand(self, obs) -> None:
        self.observations.append(obs)
        self.acts_per_hand.append(self.acts)
        self.acts = []


def _agents(game, names, cls=FixedStrategyAgent, seeds=(11, 12, 13, 14)):
    return [cls(nm, game, named_profile(game, nm), seeds[i]) for i, nm in enumerate(names)]


@pytest.mark.parametrize("n", [2, 3, 4])
def test_rotation_and_what_each_seat_sees(n: int) -> None:
    game = kuhn_game(n)
    names = ("maniac", "uniform", "bluffer:0.5", "calling-station")[:n]
    agents = _agents(game, names, RecordingAgent)
    hands = 60
    deals = game.deal_sequence(hands, seed=3)
    play_match(game, agents, deals)
    for seat, agent in enumerate(agents):
        assert agent.seat == seat and agent.table == names  # everyone learns who sits where
        assert len(agent.observations) == hands
        for h, obs in enumerate(agent.observations):
            assert obs.position == (seat - h) % n
            terminal = int(game.tree.node_terminal[game.node(obs.betting)])
            assert obs == observe_limit_hand(game, obs.position, int(deals[h]), terminal)
            validate_limit_observation(game, obs)
        # every decision was asked in this seat's position, with its own card, on the hand's path
        for h, acts in enumerate(agent.acts_per_hand):
            obs = agent.observations[h]
            for position, view, betting in acts:
                assert position == obs.position == game.current_player(betting)
                assert game.view_strings[0][view] == obs.hole[position]
                assert obs.betting.startswith(betting)
            mine = [
                k
                for k in range(len(obs.betting))
                if game.current_player(obs.betting[:k]) == obs.position
            ]
            assert len(acts) == len(mine)


@pytest.mark.parametrize("chunk", [7, 1 << 16])
@pytest.mark.parametrize("n", [2, 3, 4])
def test_kernel_and_python_loop_agree(n: int, chunk: int, monkeypatch) -> None:
    monkeypatch.setattr(match, "FIXED_CHUNK_HANDS", chunk)
    game = kuhn_game(n)
    names = ["maniac", "uniform", "bluffer:0.5", "always-bet"][:n]
    deals = game.deal_sequence(500, seed=5)
    fast_agents = _agents(game, names)
    slow_agents = _agents(game, names, RecordingAgent)
    fast = play_match(game, fast_agents, deals)
    slow = play_match(game, slow_agents, deals)
    np.testing.assert_array_equal(fast, slow)
    assert fast.sum() == 0.0
    # both paths leave every generator where the Python loop would have
    for a, b in zip(fast_agents, slow_agents, strict=True):
        assert a.rng.bit_generator.state == b.rng.bit_generator.state


@pytest.mark.parametrize(
    ("name", "names", "hands", "most"),
    [
        ("kuhn3p", ["maniac", "n2", "bluffer"], 300_000, 3.0),
        # a Leduc 3p seat risks at most 13 chips a hand (ante, 2 x 2 and 2 x 4 raises)
        ("leduc3p", ["maniac", "cfr", "calling-station"], 200_000, 13.0),
    ],
)
def test_chips_per_hand_converge_to_the_exact_value(name, names, hands, most) -> None:
    """Seat s plays position (s - h) mod 3, so its expectation is the mean of its three EVs."""
    game = resolve_game(name)
    profiles = [named_profile(game, nm) for nm in names]
    expected = np.zeros(3)
    for h in range(3):
        composed = np.stack([profiles[(p + h) % 3][p] for p in range(3)])
        ev = expected_values(game, composed)
        for p in range(3):
            expected[(p + h) % 3] += ev[p] / 3
    chips = play_match(game, _agents(game, names), game.deal_sequence(hands, seed=9))
    # per-hand chips are bounded by ``most`` in magnitude, so 5 * most / sqrt(hands) is safe
    np.testing.assert_allclose(chips / hands, expected, atol=5 * most / np.sqrt(hands))


def test_duplicate_seatings_share_the_cards() -> None:
    game = kuhn_game(3)
    log = []

    def factory(game, seed):
        agent = RecordingAgent("uniform", game, named_profile(game, "uniform"), seed)
        log.append(agent)
        return agent

    run_duplicate(game, ["a", "b", "c"], [factory] * 3, hands=30, duplicates=2, seed=1)
    assert len(log) == 2 * 6 * 3
    decks = []
    for m in range(12):
        agents = log[3 * m : 3 * m + 3]
        # cards by position in each hand, from seat 0's point of view plus its opponents'
        deck = [
            tuple(
                next(a.observations[h].hole[p] for a in agents if a.observations[h].position == p)
                for p in range(3)
            )
            for h in range(30)
        ]
        decks.append(deck)
    assert all(deck == decks[0] for deck in decks[:6])
    assert all(deck == decks[6] for deck in decks[6:])
    assert decks[0] != decks[6]
    assert len({a.rng.bit_generator.state["state"]["state"] for a in log}) == len(log)


def test_seatings_put_every_agent_in_every_seat() -> None:
    orders = seatings(3)
    assert len(orders) == 6 == len(set(orders))
    for agent in range(3):
        assert sorted(order.index(agent) for order in orders) == [0, 0, 1, 1, 2, 2]


def _series(seed: int, duplicates: int = 3):
    game = kuhn_game(3)
    names = ["n1", "maniac", "tight-passive"]
    factories = [fixed_strategy_factory(nm, named_profile(game, nm)) for nm in names]
    return run_duplicate(game, names, factories, hands=500, duplicates=duplicates, seed=seed)


def test_results_are_seeded_zero_sum_and_ranked() -> None:
    a, b, c = _series(7), _series(7), _series(8)
    assert a == b
    assert a != c
    totals = np.sum([r.per_duplicate for r in a.agents], axis=0)
    np.testing.assert_allclose(totals, 0.0, atol=1e-9)
    for r in a.agents:
        assert r.rate == pytest.approx(np.mean(r.per_duplicate))
        assert r.standard_error == pytest.approx(np.std(r.per_duplicate, ddof=1) / np.sqrt(3))
    ranking = a.ranking()
    assert [r.rate for r in ranking] == sorted((r.rate for r in a.agents), reverse=True)
    assert ranking[0].name == "n1" and ranking[-1].name == "maniac"
    assert _series(7, duplicates=1).agents[0].standard_error is None


def test_duplicates_cancel_the_luck_of_the_cards() -> None:
    """Identical agents in every seat win exactly nothing over the six seatings of a duplicate."""
    game = kuhn_game(3)
    factory = fixed_strategy_factory("always-bet", named_profile(game, "always-bet"))
    result = run_duplicate(game, ["a", "b", "c"], [factory] * 3, hands=200, duplicates=2, seed=4)
    for r in result.agents:
        assert r.per_duplicate == pytest.approx((0.0, 0.0), abs=1e-9)


def test_argument_errors_name_the_field() -> None:
    game = kuhn_game(3)
    factory = fixed_strategy_factory("uniform", named_profile(game, "uniform"))
    cases = [
        (dict(hands=0, duplicates=1, seed=0), "hands"),
        (dict(hands=10, duplicates=0, seed=0), "duplicates"),
        (dict(hands=10, duplicates=1, seed=-1), "seed"),
    ]
    for kwargs, field in cases:
        with pytest.raises(InvalidArgumentError) as err:
            run_duplicate(game, ["a", "b", "c"], [factory] * 3, **kwargs)
        assert err.value.field == field
    with pytest.raises(InvalidArgumentError) as err:
        run_duplicate(game, ["a", "b"], [factory] * 2, hands=10, duplicates=1, seed=0)
    assert err.value.field == "agents"
    with pytest.raises(InvalidArgumentError) as err:
        play_match(game, [*_agents(game, ["n1", "n2"]), object()], game.deal_sequence(1, 0))
    assert err.value.field == "agents[2]"


@pytest.mark.parametrize("bad", [3, -1, 1.0, "1", None])
def test_an_illegal_action_is_reported(bad) -> None:
    game = kuhn_game(3)

    class Broken(RecordingAgent):
        def act(self, position, view, betting):
            return bad

    agents = _agents(game, ["uniform"] * 3, Broken)
    with pytest.raises(IllegalActionError) as err:
        play_match(game, agents, game.deal_sequence(1, seed=0))
    assert err.value.field == "action"
