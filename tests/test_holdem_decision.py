"""MBBR's decision-time response on sets numbered as met (modeling/holdem/decision.py, what the
ACPC 3-player game plays): on the 3-player hold'em of one raise a round, the sampled values of
our actions equal an exact enumeration (every pair of the opponents' hole pairs by reach, every
river card, every continuation) within four standard errors at a river and a turn spot, and the
rollouts number no set; a completion of the board weighs the mass of the pairs it leaves; the bank
never books a deviation it cannot cover; seeded runs repeat."""

from __future__ import annotations

import numpy as np
import pytest
from holdem_support import RecordingAgent, lazy_twin, one_raise_3p, seeded_blueprint, small_spots

from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS, rank_cardset
from oppmodel.modeling.games.acpc.betting import ACTION_LETTERS, HandState, after, legal_actions
from oppmodel.modeling.holdem._decision_kernels import sample_pairs
from oppmodel.modeling.holdem._strength_kernels import board_values
from oppmodel.modeling.holdem.decision import MODEL, DecisionValues
from oppmodel.modeling.holdem.match import HoldemGame, PolicyAgent, play_holdem_match
from oppmodel.modeling.holdem.policy import Spot, live_holes
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior
from oppmodel.modeling.holdem.response import HoldemMBBR, HoldemMBBRAgent
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.mbbr.config import MBBRConfig

CONFIG = MBBRConfig(eta=4.0)
STANDARD_ERRORS = 4.0  # the sampled value's distance to the exact one, at most


@pytest.fixture(scope="module")
def setting(tmp_path_factory):
    """The compiled game's spots, its seeded blueprint, and a posterior on its lazy twin that
    has seen a few hands of two styles and the blueprint's seat."""
    spots = small_spots(one_raise_3p(tmp_path_factory.mktemp("game")))
    blueprint = seeded_blueprint(spots, 0)
    lazy = lazy_twin(spots, blueprint, capacity=64)
    posterior = HoldemPosterior(lazy, None, CONFIG)
    game = HoldemGame("holdem", spots.game.gamedef)
    seats = [
        RecordingAgent(name, holdem_policy(name, game.gamedef), 5 + k)
        for k, name in enumerate(["uniform", "maniac", "calling-station"])
    ]
    play_holdem_match(game, seats, game.deal_sequence(8, 11))
    for obs in (obs for hand in zip(*(s.seen for s in seats), strict=True) for obs in hand):
        posterior.observe(obs)
    return spots, blueprint, posterior


def _cards(text: str) -> list[int]:
    ranks, suits = "23456789TJQKA", "cdhs"
    return [4 * ranks.index(text[i]) + suits.index(text[i + 1]) for i in range(0, len(text), 2)]


def _exact(posterior: HoldemPosterior, blueprint_rows, spot: Spot, hole: list[int]) -> dict:
    """Q of each legal action by enumeration: both opponents' live pairs by reach (the rows read
    from the numbered sets), every card to come, every continuation (ours the blueprint's)."""
    spots, me, gamedef = posterior.spots, spot.position, spot.game
    board, state = spot.board, spot.betting
    live = live_holes([*hole, *board])
    bits = CARD_BITS[live[:, 0]] | CARD_BITS[live[:, 1]]
    opp = posterior.seats[me]
    reach = {q: np.ones(len(live)) for q in opp}
    hand = HandState(gamedef)
    for letter in state.betting.replace("/", ""):
        now = hand.state
        if now.player != me:
            sets = spots.infosets(now.betting, board, live)
            rows = posterior.models_profile(me)[now.player, sets]
            reach[now.player] = reach[now.player] * rows[:, ACTION_LETTERS.index(letter)]
        hand.apply(letter)
    disjoint = ((bits[:, None] & bits[None, :]) == 0).astype(float)
    need = sum(gamedef.num_board_cards) - len(board)
    to_come = [c for c in range(52) if c not in (*hole, *board)] if need else [None]
    totals = {a: 0.0 for a in legal_actions(gamedef, state)}
    mass = 0.0
    for card in to_come:
        full = (*board, card) if need else tuple(board)
        clear = (bits & (CARD_BITS[card] if need else 0)) == 0
        w = {q: reach[q] * clear for q in opp}
        joint = w[opp[0]][:, None] * w[opp[1]][None, :] * disjoint
        mass += joint.sum()
        walk = _Walk(posterior, blueprint_rows, me, hole, full, live, clear)
        for a in totals:
            totals[a] += walk.value(after(gamedef, state, a), w[opp[0]], w[opp[1]], disjoint)
    return {a: total / mass for a, total in totals.items()}


class _Walk:
    """The expectation below a state on a full board, the opponents' weights as vectors."""

    def __init__(self, posterior, blueprint_rows, me, hole, board, live, clear):
        self.posterior, self.rows, self.me = posterior, blueprint_rows, me
        self.board, self.clear, self.holes, self.live = board, clear, live[clear], live
        cards = int(np.bitwise_or.reduce(CARD_BITS[list(board)]))
        self.ranks = board_values(np.asarray(live), np.int64(cards))  # -1 where a card clashes
        self.ours = rank_cardset(int(CARD_BITS[hole[0]] | CARD_BITS[hole[1]]) | cards)
        self.hole = hole

    def value(self, state, w1, w2, disjoint) -> float:
        posterior, me = self.posterior, self.me
        if state.player < 0:
            return self._end(state, w1, w2, disjoint)
        spots = posterior.spots
        if state.player == me:
            row = self.rows(Spot(spots.sets.gamedef, self.board, state), self.hole)
            return sum(
                row[a] * self.value(after(spots.sets.gamedef, state, a), w1, w2, disjoint)
                for a in legal_actions(spots.sets.gamedef, state)
                if row[a] > 0
            )
        rows = np.zeros((len(self.clear), 3))
        sets = spots.infosets(state.betting, self.board, self.holes)
        rows[self.clear] = posterior.models_profile(me)[state.player, sets]
        total = 0.0
        for a in legal_actions(spots.sets.gamedef, state):
            first = state.player == posterior.seats[me][0]
            v1, v2 = (w1 * rows[:, a], w2) if first else (w1, w2 * rows[:, a])
            total += self.value(after(spots.sets.gamedef, state, a), v1, v2, disjoint)
        return total

    def _apart(self, w: np.ndarray) -> np.ndarray:
        """``disjoint @ w``: per pair, the weight of the pairs sharing no card with it (all,
        less those holding either of its cards, plus itself, counted twice)."""
        holes = self.live
        by_card = np.bincount(holes[:, 0], w, 52) + np.bincount(holes[:, 1], w, 52)
        return w.sum() - by_card[holes[:, 0]] - by_card[holes[:, 1]] + w

    def _end(self, state, w1, w2, disjoint) -> float:
        me, (q1, q2) = self.me, self.posterior.seats[self.me]
        pot, spent = float(sum(state.spent)), float(state.spent[me])
        live = [q for q in range(3) if not state.folded[q]]
        if me not in live or live == [me]:
            return (-spent if me not in live else pot - spent) * float(w1 @ self._apart(w2))
        if len(live) == 2:  # one opponent left: the other's pairs summed out first
            other, w, rest = (w1, self._apart(w2), q2) if q1 in live else (w2, self._apart(w1), q1)
            assert rest not in live
            ours, theirs = self.ours, self.ranks
            share = np.where(ours > theirs, pot, np.where(ours == theirs, pot / 2, 0.0)) - spent
            return float((other * w * share).sum())
        joint = w1[:, None] * w2[None, :] * disjoint
        r1, r2 = self.ranks[:, None], self.ranks[None, :]
        top = np.full(joint.shape, self.ours)
        if q1 in live:
            top = np.maximum(top, r1)
        if q2 in live:
            top = np.maximum(top, r2)
        count = 1 + (q1 in live) * (r1 == top) + (q2 in live) * (r2 == top)
        share = np.where(self.ours == top, pot / count, 0.0) - spent
        return float((joint * share).sum())


def _our_rows(spots: AbstractSpots, blueprint: np.ndarray):
    def rows(spot: Spot, hole: list[int]) -> np.ndarray:
        sets = spots.infosets(spot.betting.betting, spot.board, np.asarray([hole]))
        return blueprint[spot.position, sets[0]]

    return rows


@pytest.mark.parametrize(
    ("betting", "board", "hole", "boards", "per_board"),
    [
        ("rcc/rcc/ccrcc/cr", "Ks7h2d9cTs", "AhJd", 4, 1500),  # the river, to call, one behind
        ("rcc/rcc/rf", "Ks7h2d9c", "QhJd", 1000, 4),  # the turn: one opponent raised, one folded
    ],
)
def test_the_sampled_values_are_the_exact_enumeration(
    setting, betting, board, hole, boards, per_board
) -> None:
    spots, blueprint, posterior = setting
    gamedef = spots.game.gamedef
    spot = Spot.of(gamedef, [board[i : i + 2] for i in range(0, len(board), 2)], betting)
    cards = _cards(hole)
    numbered = posterior.sets.size
    estimate = DecisionValues(posterior, boards=boards, per_board=per_board, seed=3).values(
        spot, cards, MODEL
    )
    assert posterior.sets.size == numbered  # the rollouts number no set
    exact = _exact(posterior, _our_rows(spots, blueprint), spot, cards)
    means = estimate.means()  # by completion of the board: independent
    for a, want in exact.items():
        got = means[:, a].mean()
        error = means[:, a].std(ddof=1) / np.sqrt(len(means))
        assert abs(got - want) <= STANDARD_ERRORS * error + 1e-9, (a, got, want, error)
        assert error < 1.5  # chips: the check has teeth (the values span tens of chips)


class _Blueprint:
    """The seeded blueprint of the compiled game as a hold'em policy (the guard stays alive)."""

    name = "blueprint"

    def __init__(self, spots: AbstractSpots, blueprint: np.ndarray) -> None:
        self.spots, self.blueprint = spots, blueprint

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        sets = self.spots.infosets(spot.betting.betting, spot.board, holes)
        return self.blueprint[spot.position, sets]


class _Watched(HoldemMBBRAgent):
    """MBBR's seat keeping the bank after each of its decisions."""

    def __init__(self, name: str, model: HoldemMBBR, seed: int) -> None:
        super().__init__(name, model, seed)
        self.banks: list[float] = []
        self.actions: list[int] = []
        self.draws: list[tuple[int, int]] = []  # (round, samples drawn) of each decision

    def act(self, spot: Spot, hole) -> int:
        decisions = self.model.decisions
        assert decisions is not None
        drawn = decisions.drawn
        action = super().act(spot, hole)
        self.banks.append(self.model.bank)
        self.actions.append(action)
        self.draws.append((spot.round, decisions.drawn - drawn))
        return action


def _mbbr_match(setting, hands: int, budget: float) -> tuple[_Watched, np.ndarray]:
    """MBBR (the decision-time response, H = 2) against two copies of the blueprint."""
    spots, blueprint, _ = setting
    posterior = HoldemPosterior(lazy_twin(spots, blueprint, capacity=64), None, CONFIG)
    decisions = DecisionValues(posterior, boards=4, per_board=4, seed=7)
    config = MBBRConfig(eta=4.0, hands_default=2)
    model = HoldemMBBR(posterior, None, config, budget=budget, decisions=decisions)
    mbbr = _Watched("mbbr", model, 1)
    game = HoldemGame("holdem", spots.game.gamedef)
    seats = [mbbr] + [PolicyAgent(f"bp{k}", _Blueprint(spots, blueprint), 2 + k) for k in (0, 1)]
    return mbbr, play_holdem_match(game, seats, game.deal_sequence(hands, 5))


@pytest.fixture(scope="module")
def guarded(setting) -> _Watched:
    """MBBR's seat after 24 hands against two copies of the blueprint, 3 chips a hand of budget."""
    return _mbbr_match(setting, 24, budget=300.0)[0]


def test_the_bank_never_pays_for_a_deviation_it_cannot_cover(guarded) -> None:
    mbbr = guarded
    model = mbbr.model
    assert not model.ruled_out  # the guard is alive: every deviation is booked
    assert min(mbbr.banks) >= 0.0
    assert model.deviations > 0 and model.refused > 0  # the bank pays some and refuses some
    assert model.bank == pytest.approx(24 * model.budget_chips - model.booked, abs=1e-9)


def test_a_preflop_decision_draws_at_most_one_and_a_half_estimates(guarded) -> None:
    """The sample budget: while the guard lives, a preflop decision's loss estimate draws half
    the completions of its value estimate (4 x 4 samples here), a later one's all of them."""
    mbbr = guarded
    samples = 4 * 4
    preflop = [drawn for round_, drawn in mbbr.draws if round_ == 0]
    later = [drawn for round_, drawn in mbbr.draws if round_ > 0]
    assert max(preflop) == samples + samples // 2  # some preflop deviation was priced
    assert max(later) == 2 * samples


def test_seeded_runs_repeat_exactly(setting) -> None:
    first, chips = _mbbr_match(setting, 6, budget=300.0)
    again, chips_again = _mbbr_match(setting, 6, budget=300.0)
    assert first.model.deviations > 0
    assert first.actions == again.actions and first.banks == again.banks
    assert chips.tolist() == chips_again.tolist()


def test_the_tree_kept_between_hands_gives_a_fresh_trees_values(setting) -> None:
    """The betting tree is kept from hand to hand: after hands that number nodes and change the
    counts at others, and after a refit of the prior, its values are a fresh tree's bit for
    bit (the same completions, holes and uniforms)."""
    spots, blueprint, _ = setting
    posterior = HoldemPosterior(lazy_twin(spots, blueprint, capacity=64), None, CONFIG)
    game = HoldemGame("holdem", spots.game.gamedef)
    seats = [
        RecordingAgent(name, holdem_policy(name, game.gamedef), 9 + k)
        for k, name in enumerate(["maniac", "uniform", "calling-station"])
    ]
    play_holdem_match(game, seats, game.deal_sequence(12, 4))
    hands = [obs for hand in zip(*(s.seen for s in seats), strict=True) for obs in hand]
    kept = DecisionValues(posterior, boards=4, per_board=4, seed=2)
    spot = Spot.of(spots.game.gamedef, [], "r")
    hole = _cards("Td9d")

    def both() -> tuple[np.ndarray, np.ndarray]:
        kept.new_hand()
        fresh = DecisionValues(posterior, boards=4, per_board=4)
        fresh.rng.bit_generator.state = kept.rng.bit_generator.state
        return kept.values(spot, hole).values, fresh.values(spot, hole).values

    both()
    for obs in hands[:18]:  # hands seen from the opponents' seats 1 and 2: counts of position 0
        posterior.observe(obs)
    after_hands, fresh = both()
    np.testing.assert_array_equal(after_hands, fresh)
    _the_rows_are_the_posterior_means(kept, spot.position)
    posterior.refit()
    after_refit, fresh = both()
    np.testing.assert_array_equal(after_refit, fresh)
    _the_rows_are_the_posterior_means(kept, spot.position)


def _the_rows_are_the_posterior_means(values: DecisionValues, me: int) -> None:
    """Every opponent's node of ``me``'s tree has ``HoldemPosterior.mean_rows``' rows (the
    prior's of nodes not numbered are computed many at once), bit for bit."""
    tree = values._trees[me]
    table = tree.table(MODEL)
    opponents = [(k, s) for k, s in enumerate(tree.states) if s.player not in (-1, me)]
    numbered = [values.sets.numbered(s.betting) is not None for _, s in opponents]
    assert any(numbered) and not all(numbered)
    for k, state in opponents:
        expected = values.posterior.mean_rows(me, state)
        row0 = int(tree.nodes[k, 5])
        np.testing.assert_array_equal(table[row0 : row0 + len(expected)], expected)


def test_a_completions_weight_is_the_mass_of_the_pairs_it_leaves() -> None:
    rng = np.random.default_rng(4)
    live = live_holes([0, 5, 9, 13, 22, 30])
    bits = CARD_BITS[live[:, 0]] | CARD_BITS[live[:, 1]]
    w1, w2 = rng.random(len(live)) ** 4, rng.random(len(live)) ** 4
    rest = np.array([[40, 41], [7, 51], [2, 33]])
    boards = CARD_BITS[rest[:, 0]] | CARD_BITS[rest[:, 1]]
    first, second, mass = sample_pairs(live, bits, w1, w2, boards, 50, 1)
    disjoint = (bits[:, None] & bits[None, :]) == 0
    for b, board in enumerate(boards):
        clear = (bits & board) == 0
        assert mass[b] == pytest.approx((w1 * clear) @ disjoint @ (w2 * clear), rel=1e-12)
    assert not (bits[first] & bits[second]).any()  # the pairs share no card
    assert not (bits[first] & np.repeat(boards, 50)).any()  # nor a card with their completion
