"""The hold'em opponent posterior over the abstraction (modeling/holdem/posterior.py): a hand's
update against an exact enumeration of the opponent's hole pairs, bucketed one hand at a time by
the card abstraction; a shown hand's exact counts; the fit's invariants over played hands; bad
observations refused by field."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from holdem_support import RecordingAgent, betting_moves, seeded_blueprint, small_spots

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES, BOARD_SIZES, HOLE_INDEX
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.holdem.policy import CARD_NAMES, Uniform
from oppmodel.modeling.holdem.posterior import NO_DEAL, AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.holdem.sets import distinct_rows
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.observation import LimitObservation


@pytest.fixture(scope="module")
def spots() -> AbstractSpots:
    return small_spots()


def _moves_by_hand(spots: AbstractSpots, obs: LimitObservation, hole: str) -> list[tuple[int, int]]:
    """The opponent's (information set, action) in ``obs`` holding ``hole``: each round's bucket
    from ``CardAbstraction.bucket`` on that hand alone, the set from its string."""
    game, q = spots.game, 1 - obs.position
    boards = [cards_of(b) for b in obs.board]
    out = []
    for before, r, mover, a in betting_moves(game.gamedef, obs.betting):
        if mover != q:
            continue
        board = [CARD_NAMES[c] for b in boards for c in b][: BOARD_SIZES[r]]
        bucket = spots.cards.bucket([hole[:2], hole[2:]], board)
        key = f"{bucket}:{before}"
        out.append((game.infoset_from_string(q, key), a))
    return out


def _enumerated(spots: AbstractSpots, obs: LimitObservation, alpha: np.ndarray) -> np.ndarray:
    """(num_infosets, 3) the expected counts one hidden hand adds, by enumeration: every hole
    pair the opponent may hold, weighed by the product of the Dirichlet means (``alpha``) of its
    moves, normalised."""
    dead = {c for text in (obs.hole[obs.position], *obs.board) for c in cards_of(text)}
    mean = alpha / alpha.sum(axis=1, keepdims=True)
    weights, paths = [], []
    for a, b in itertools.combinations(range(52), 2):
        if a in dead or b in dead:
            continue
        moves = _moves_by_hand(spots, obs, CARD_NAMES[a] + CARD_NAMES[b])
        weights.append(np.prod([mean[i, x] for i, x in moves]))
        paths.append(moves)
    out = np.zeros_like(alpha)
    for w, moves in zip(weights, paths, strict=True):
        for i, x in moves:
            out[i, x] += w / sum(weights)
    return out


# we hold AsKd at position 0; the opponent (position 1) folds on the flop, then on the turn
FOLD_FLOP = LimitObservation(0, "rc/rrrf", ("AsKd", None), ("", "2c7h9s"))
FOLD_TURN = LimitObservation(0, "rrc/cc/rf", ("QhQs", None), ("", "3d4d5d", "Tc"))


def _two_hidden_hands_enumerated(
    spots: AbstractSpots, posterior: HoldemPosterior, alpha0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Checks the fit's counts against the enumeration after FOLD_FLOP (observed already) and
    then FOLD_TURN, under the prior ``alpha0``; returns the second hand's counts and the first's
    recounted. The second hand is weighed by the means after the first, and the first again by
    the means after the second with its own contribution left out (the fit's CVB0 step)."""
    first = _enumerated(spots, FOLD_FLOP, alpha0)
    assert np.allclose(posterior.fits[0].expected[0], first, rtol=0, atol=1e-12)
    posterior.observe(FOLD_TURN)
    second = _enumerated(spots, FOLD_TURN, alpha0 + first)
    first_again = _enumerated(spots, FOLD_FLOP, alpha0 + second)
    assert np.allclose(posterior.fits[0].expected[0], second + first_again, rtol=0, atol=1e-12)
    return second, first_again


def test_a_folded_hands_update_equals_the_enumeration_of_the_opponents_hole_pairs(spots) -> None:
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 0), MBBRConfig(eta=4.0))
    alpha0 = posterior.fits[0].alpha0[0].copy()
    [evidence] = posterior.observe(FOLD_FLOP)
    assert evidence.weights.sum() == 1081  # 52 - 2 ours - 3 on the board, choose 2
    assert len(evidence.rows) == len({tuple(r) for r in evidence.entries.tolist()}) < 100
    second, first_again = _two_hidden_hands_enumerated(spots, posterior, alpha0)
    means = posterior.models_profile(0)[1]
    alpha = alpha0 + second + first_again
    rows = spots.game.infosets(1)
    assert np.allclose(means[rows], (alpha / alpha.sum(axis=1, keepdims=True))[rows], atol=1e-12)
    assert np.array_equal(posterior.fits[1].expected, np.zeros_like(posterior.fits[1].expected))


def test_a_flop_whose_few_draws_all_hit_a_live_pair_still_buckets_it(spots) -> None:
    """The tests' abstraction draws 4 completions a flop; on AcKsTh each of them holds the 4s
    or the 6c, which left 4s6c no value (bucket -1, as if it held a board card) and the hand's
    evidence refused as impossible. Such a pair now gets more draws, so it has a bucket."""
    board = tuple(cards_of("AcKsTh"))
    buckets = spots.cards.range_buckets(board)
    live = ~np.isin(ALL_HOLES, board).any(axis=1)
    assert (buckets[live] >= 0).all() and (buckets[~live] == -1).all()
    assert (
        spots.cards.bucket(["4s", "6c"], ["Ac", "Ks", "Th"]) == buckets[HOLE_INDEX[11, 16]]
    )  # 4s 6c
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 0))
    [evidence] = posterior.observe(LimitObservation(0, "rc/rrrf", ("QdQh", None), ("", "AcKsTh")))
    assert evidence.weights.sum() == 1081


def test_after_a_refit_the_update_equals_the_enumeration_under_the_tilted_prior(spots) -> None:
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 0), MBBRConfig(eta=4.0))
    before = posterior.fits[0].alpha0[0].copy()
    posterior.observe(FOLD_FLOP)
    posterior.refit()
    alpha0 = posterior.fits[0].alpha0[0].copy()
    assert np.abs(alpha0 - before).max() > 0.1  # the tilt moved the prior
    assert np.allclose(alpha0.sum(axis=1), before.sum(axis=1), rtol=0, atol=1e-9)  # eta kept
    # one hidden hand, its own count left out: weighed by the tilted prior alone
    _two_hidden_hands_enumerated(spots, posterior, alpha0)


def test_a_shown_hand_adds_exactly_its_actions_counts(spots) -> None:
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 1))
    obs = LimitObservation(1, "crc/cc/cc/cc", ("AsAc", "2h3h"), ("", "2c7h9s", "Td", "Jd"))
    [evidence] = posterior.observe(obs)
    assert evidence.rows.shape[0] == 1 and evidence.revealed == (True,)
    counts = np.zeros_like(posterior.fits[1].expected[0])
    for i, a in _moves_by_hand(spots, obs, "AsAc"):
        counts[i, a] += 1.0
    assert np.array_equal(posterior.fits[1].expected[0], counts)
    assert counts.sum() == 4  # the opponent (position 0) raised preflop, checked after


@pytest.mark.parametrize("seed", [3, 4])
def test_over_played_hands_counts_stay_non_negative_and_sum_to_the_moves_seen(
    spots, seed: int
) -> None:
    game = HoldemGame("holdem2p", spots.game.gamedef)
    agents = [
        RecordingAgent("uniform", Uniform(), seed),
        RecordingAgent("uniform", Uniform(), seed + 10),
    ]
    play_holdem_match(game, agents, game.deal_sequence(40, seed))
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, seed))
    moves = [0, 0]
    for obs in agents[0].seen:
        moves[obs.position] += posterior.observe(obs)[0].rows.shape[1]
    for p, fit in enumerate(posterior.fits):
        assert (fit.expected >= -1e-12).all()
        assert fit.expected.sum() == pytest.approx(moves[p], abs=1e-9)
        legal = spots.game.legal_mask[1 - p]
        assert (fit.expected[0][~legal] == 0).all()
        means = posterior.models_profile(p)[1 - p][spots.game.infosets(1 - p)]
        assert np.allclose(means.sum(axis=1), 1.0) and (means > 0).any()


def test_merged_rows_fit_as_one_row_per_hole_pair(spots) -> None:
    """Each hole pair its own row of weight 1 (the evidence before rows merged) and the merged
    evidence give the same fixed point, the same likelihoods, over a played stream."""
    game = HoldemGame("holdem2p", spots.game.gamedef)
    agents = [RecordingAgent("uniform", Uniform(), 5), RecordingAgent("uniform", Uniform(), 15)]
    play_holdem_match(game, agents, game.deal_sequence(40, 5))
    blueprint = seeded_blueprint(spots, 5)
    merged, expanded = HoldemPosterior(spots, blueprint), HoldemPosterior(spots, blueprint)
    rows = weights = 0
    for obs in agents[0].seen:
        p = obs.position
        [evidence] = merged.observe(obs)
        rows, weights = rows + len(evidence.rows), weights + int(evidence.weights.sum())
        each = np.repeat(np.arange(len(evidence.rows)), evidence.weights)
        one_a_pair = Evidence(
            NO_DEAL, evidence.rows[each], evidence.revealed, evidence.entries[each], 1 + 0 * each
        )
        expanded.fits[p].observe(obs, one_a_pair)
        for profile in (merged.models_profile(p), blueprint):
            assert hand_likelihood(evidence.rows, evidence.weights, p, profile) == pytest.approx(
                hand_likelihood(one_a_pair.rows, 1 + 0 * each, p, profile), 1e-12
            )
    assert weights > 10 * rows  # merging is worth it
    for p in range(2):
        keys, state = merged.fits[p].state()  # the weights are kept, and restored
        fresh = HoldemPosterior(spots, blueprint)
        fresh.fits[p].restore(keys, state)
        fresh.fits[p].converge(max_sweeps=1)
        merged.fits[p].converge(max_sweeps=1)
        assert np.array_equal(fresh.models_profile(p), merged.models_profile(p))
        assert "log_weights" in state and "log_weights" not in expanded.fits[p].state()[1]
        merged.fits[p].converge()
        expanded.fits[p].converge()
        assert np.allclose(merged.models_profile(p), expanded.models_profile(p), rtol=0, atol=1e-6)


def test_distinct_rows_are_numpys_unique_rows_in_its_order() -> None:
    rng = np.random.default_rng(8)
    tables = [rng.integers(0, high, (k, width)) for k, width, high in [(1081, 4, 3), (50, 7, 2)]]
    tables += [rng.integers(-5, 5, (1, 3)), np.zeros((6, 0), dtype=np.int64)]
    for table in tables:
        _, first, label, counts = np.unique(
            table, axis=0, return_index=True, return_inverse=True, return_counts=True
        )
        got = distinct_rows(table)
        assert [x.tolist() for x in got] == [
            first.tolist(),
            label.ravel().tolist(),
            counts.tolist(),
        ]


@pytest.mark.parametrize(
    ("obs", "field"),
    [
        (LimitObservation(0, "rc/rrrf", ("AsKd", None), ("", "2c7h9s", "Td")), "board"),
        (LimitObservation(0, "rc/rrrf", ("AsKd", "QcQd"), ("", "2c7h9s")), "hole[1]"),
        (LimitObservation(0, "rc/rrrf", ("AsAs", None), ("", "2c7h9s")), "hole[0]"),
        (LimitObservation(0, "rc/rrrf", ("AsKd", None), ("", "2c7h9x")), "board[1]"),
    ],
)
def test_an_impossible_observation_is_refused_by_field_and_changes_nothing(
    spots, obs: LimitObservation, field: str
) -> None:
    posterior = HoldemPosterior(spots, seeded_blueprint(spots, 2))
    with pytest.raises(InvalidArgumentError, match=field.replace("[", r"\[")):
        posterior.observe(obs)
    assert posterior.hands == 0 and not posterior.fits[0].expected.any()
