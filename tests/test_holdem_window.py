"""The bounded fit of a long 3-player hold'em match (modeling/holdem/window.py): at a refit each
fit folds its classes beyond the window into its prior's parameters. With every card shown the
folded posterior is the replaying one through several refits; with no more classes than the
window it is the replaying one bit for bit; at a fold of hidden hands the posterior's parameters
and means do not move; and the classes kept stay within the window, the tables shrinking."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from holdem_support import RecordingAgent, lazy_twin, one_raise_3p, seeded_blueprint, small_spots

from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.holdem import window
from oppmodel.modeling.holdem.decision import MODEL, DecisionValues
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.holdem.policy import Spot
from oppmodel.modeling.holdem.posterior import AbstractSpots, HoldemPosterior, cards_of
from oppmodel.modeling.holdem.styles import holdem_policy
from oppmodel.modeling.holdem.window import fold_oldest
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

CONFIG = MBBRConfig(eta=4.0)
TOLERANCE = 1e-12  # the same sums in another order


@pytest.fixture(scope="module")
def spots(tmp_path_factory) -> AbstractSpots:
    return small_spots(one_raise_3p(tmp_path_factory.mktemp("game")))


def _hands(spots: AbstractSpots, names: list[str], hands: int, seed: int) -> list[LimitObservation]:
    """Seat 0's observations of a seeded match."""
    game = HoldemGame("holdem", spots.game.gamedef)
    seats = [
        RecordingAgent(name, holdem_policy(name, game.gamedef), seed + k)
        for k, name in enumerate(names)
    ]
    play_holdem_match(game, seats, game.deal_sequence(hands, seed))
    return seats[0].seen


def _pair(spots: AbstractSpots, window: int) -> tuple[HoldemPosterior, HoldemPosterior]:
    """The same lazy posterior replaying every class (no window) and folding beyond ``window``."""
    blueprint = seeded_blueprint(spots, 0)
    return tuple(  # type: ignore[return-value]
        HoldemPosterior(lazy_twin(spots, blueprint, 64), None, CONFIG, window=w, bound=None)
        for w in (None, window)
    )


def _run(posteriors, hands: list[LimitObservation], refresh: int) -> None:
    for k, obs in enumerate(hands, start=1):
        for posterior in posteriors:
            posterior.observe(obs)
            if k % refresh == 0:
                posterior.refit()


def _classes(posterior: HoldemPosterior) -> int:
    """The classes the fits of every position keep."""
    return sum(len(fit.state()[0]) for fit in posterior.fits)


def test_with_every_card_shown_the_folded_refits_are_the_replaying_ones(spots) -> None:
    # nobody folds: every hand goes to a showdown, every card shown, one row a class
    hands = _hands(spots, ["always-bet", "calling-station", "calling-station"], 40, seed=7)
    assert all(None not in obs.hole for obs in hands)
    replaying, folding = _pair(spots, window=6)
    _run((replaying, folding), hands, refresh=8)
    assert _classes(folding) <= 3 * (6 + 8) and _classes(replaying) == len(hands)
    assert folding.folded[0].sum() > 0  # the oldest hands' counts are in the prior's parameters
    for p in range(3):
        want, got = replaying.fits[p], folding.fits[p]
        assert np.allclose(got.alpha, want.alpha, rtol=0, atol=TOLERANCE)
        assert np.allclose(
            folding.models_profile(p), replaying.models_profile(p), rtol=0, atol=TOLERANCE
        )
        for d in range(2):  # the refitted prior's tilts, fitted to the same counts
            assert np.allclose(folding.thetas[p][d], replaying.thetas[p][d], rtol=0, atol=1e-9)
    assert folding.log_odds == pytest.approx(replaying.log_odds, rel=TOLERANCE)


def test_within_the_window_nothing_is_folded_bit_for_bit(spots) -> None:
    hands = _hands(spots, ["uniform", "maniac", "tight-passive"], 12, seed=3)
    replaying, folding = _pair(spots, window=len(hands) * 2)  # at most 2 classes a hand
    _run((replaying, folding), hands, refresh=4)
    assert not folding.folded[0].any()
    for want, got in zip(replaying.fits, folding.fits, strict=True):
        assert np.array_equal(got.alpha, want.alpha) and np.array_equal(got.profile, want.profile)


def test_a_fold_of_hidden_hands_keeps_the_posterior_and_bounds_the_classes(spots) -> None:
    hands = _hands(spots, ["uniform", "maniac", "tight-passive"], 30, seed=5)
    assert sum(None in obs.hole[1:] for obs in hands) > 10  # hidden cards: CVB0 responsibilities
    (posterior, _) = _pair(spots, window=1)
    _run((posterior,), hands, refresh=len(hands) + 1)
    fit = posterior.fits[0]
    alpha, means, size = fit.alpha.copy(), fit.profile.copy(), fit.nbytes()
    assert len(fit.state()[0]) > 8
    folded = fold_oldest(fit, 5)
    assert len(fit.state()[0]) == 5 and fit.nbytes() < size
    assert folded.sum() > 0 and np.all(folded >= 0)
    assert np.allclose(fit.alpha, alpha, rtol=0, atol=TOLERANCE)
    assert np.allclose(fit.profile, means, rtol=0, atol=TOLERANCE)
    fit.converge(max_sweeps=0)  # the kept classes recounted: with the folded, the same alpha
    assert np.allclose(fit.alpha, alpha, rtol=0, atol=TOLERANCE)
    posterior.observe(hands[0])  # met again after its fold: a new class
    assert 6 <= len(fit.state()[0]) <= 7


def _bounded(spots: AbstractSpots, window: int, bound: float) -> tuple[HoldemPosterior, ...]:
    """The same lazy posterior folding beyond ``window``, its numbering unbounded and bounded."""
    blueprint = seeded_blueprint(spots, 0)
    return tuple(
        HoldemPosterior(lazy_twin(spots, blueprint, 64), None, CONFIG, window=window, bound=b)
        for b in (None, bound)
    )


def _bound_on(monkeypatch, dropped: float) -> None:
    """Refits whose renumberings keep dropped nodes whole up to ``dropped`` times the sets kept
    (0: every one merged into the archive at once, as before session 52)."""
    bound = functools.partial(window.bound_numbering, dropped=dropped)
    monkeypatch.setattr(window, "bound_numbering", bound)


def _used(posterior: HoldemPosterior) -> int:
    """The sets of the nodes the fits' classes have moves at."""
    sets = posterior.sets
    at = {int(i) for fit in posterior.fits for i in fit.state()[1]["entries"] // 3}
    at = {i % posterior.capacity for i in at}
    used = 0
    for betting in sets.bettings:
        base, round_, _ = sets.node(betting)
        views = sets.views[round_]  # type: ignore[union-attr]
        used += views if at & set(range(base, base + views)) else 0
    return used


def test_a_renumbering_keeps_the_answers_at_the_sets_it_keeps(spots) -> None:
    hands = _hands(spots, ["uniform", "maniac", "tight-passive"], 60, seed=11)
    whole, bounded = _bounded(spots, window=2, bound=1.0)
    bounded.bound = None  # from the 36th hand on: folded counts at nodes no class uses by then
    for k, obs in enumerate(hands, start=1):
        whole.observe(obs)
        bounded.observe(obs)
        if k % 6 == 0:
            bounded.bound = 1.0 if k >= 36 else None
            whole.refit()
            bounded.refit()
            if bounded.sets.renumbered:
                break
    sets, every = bounded.sets, whole.sets
    assert sets.renumbered == 1 and sets.size < every.size
    assert bounded.capacity == sets.capacity < whole.capacity  # the arrays shrunk with it
    assert all(kept.bettings for row in bounded.dropped for kept in row)  # dropped folded counts
    gamedef = every.gamedef
    for p in range(3):
        want, got = whole.models_profile(p), bounded.models_profile(p)
        for betting in every.bettings:
            base, round_, q = every.node(betting)
            rows = slice(base, base + every.views[round_])  # type: ignore[union-attr]
            found = sets.numbered(betting)  # type: ignore[union-attr]
            if found is not None:  # kept: the same posterior
                kept = slice(found[0], found[0] + every.views[round_])  # type: ignore[union-attr]
                assert np.allclose(got[:, kept], want[:, rows], rtol=0, atol=TOLERANCE)
            elif q != p and not whole.folded[p][whole.seats[p].index(q), rows].any():
                # dropped, never counted: what a decision reads there is the same prior's mean
                state = HandState.from_betting(gamedef, betting).state
                mean = bounded.mean_rows(p, state)
                assert np.allclose(mean, want[q, rows], rtol=0, atol=TOLERANCE)
        for d in range(2):  # the tilts, the archived counts in their situations' fit
            assert np.allclose(bounded.thetas[p][d], whole.thetas[p][d], rtol=0, atol=1e-9)


def test_the_bound_holds_the_numbering_to_a_multiple_of_the_sets_used(spots, monkeypatch) -> None:
    hands = _hands(spots, ["uniform", "maniac", "tight-passive"], 60, seed=13)
    _bound_on(monkeypatch, 0.25)  # few nodes kept whole: the oldest merged into the archive
    whole, bounded = _bounded(spots, window=4, bound=1.5)
    for k, obs in enumerate(hands, start=1):
        whole.observe(obs)
        bounded.observe(obs)
        if k % 6 == 0:
            whole.refit()
            bounded.refit()
            assert bounded.sets.size <= 1.5 * _used(bounded)
            for row in bounded.dropped:  # the nodes kept whole, bounded by the sets kept
                assert all(kept.rows <= 0.25 * bounded.sets.size for kept in row)
    assert bounded.sets.renumbered > 1
    assert whole.sets.size > 1.5 * _used(whole)  # unbounded, it would not hold
    # the oldest kept merged into the archive: a row per situation and clipped blueprint row,
    # so never more than the game's sets of the opponent have (here, every row is distinct)
    archived = 0
    for row in bounded.archives:
        for archive in row:
            keys = np.column_stack([archive.situation, archive.log_base])
            assert len(np.unique(keys, axis=0)) == len(keys)
            assert len(keys) <= spots.game.num_infosets
            archived += len(keys)
    assert archived > 0


def _apart(whole: HoldemPosterior, bounded: HoldemPosterior) -> tuple[float, float]:
    """How far ``bounded``'s answers are from ``whole``'s: the posterior means at the sets both
    number (kept or numbered again), and the means a decision reads (``mean_rows``) at every
    node ``whole`` numbers and ``bounded`` does not (the largest difference of each)."""
    sets, every = bounded.sets, whole.sets
    numbered = unnumbered = 0.0
    for p in range(3):
        want, got = whole.models_profile(p), bounded.models_profile(p)
        for betting in every.bettings:
            base, round_, q = every.node(betting)
            views = every.views[round_]  # type: ignore[union-attr]
            found = sets.numbered(betting)  # type: ignore[union-attr]
            if found is not None:
                at = slice(found[0], found[0] + views)
                far = np.abs(got[:, at] - want[:, base : base + views]).max()
                numbered = max(numbered, float(far))
            elif q != p:
                state = HandState.from_betting(every.gamedef, betting).state
                far = np.abs(bounded.mean_rows(p, state) - want[q, base : base + views]).max()
                unnumbered = max(unnumbered, float(far))
    return numbered, unnumbered


def test_a_dropped_node_met_again_is_restored_exactly(spots, monkeypatch) -> None:
    """Renumberings at every refit drop nodes with folded counts that later hands meet again:
    kept whole, they are numbered again with their prior and counts, so the bounded model's
    answers stay the unbounded one's hand after hand; merged into the archive (the old way),
    they start from their situation's tilt and the two drift apart."""
    hands = _hands(spots, ["uniform", "maniac", "tight-passive"], 90, seed=17)
    gamedef = spots.game.gamedef
    spots_held = [  # a decision of each position
        (Spot.of(gamedef, [], ""), cards_of("Td9d")),
        (Spot.of(gamedef, [], "r"), cards_of("8h8c")),
        (Spot.of(gamedef, ["Ah", "7c", "2d"], "ccc/c"), cards_of("KsQs")),
    ]
    for dropped in (100.0, 0.0):  # (100: none merged into the archive in this small game)
        _bound_on(monkeypatch, dropped)
        whole, bounded = _bounded(spots, window=2, bound=1.0)
        met_again: set[str] = set()
        reads = 0  # rows of nodes kept whole the decisions' trees read
        # each model's decisions, the trees kept from refit to refit, seeded alike
        mine, theirs = (DecisionValues(m, boards=4, per_board=4, seed=2) for m in (bounded, whole))
        for k, obs in enumerate(hands, start=1):
            kept = {b for row in bounded.dropped for store in row for b in store.bettings}
            whole.observe(obs)
            bounded.observe(obs)
            met_again |= {b for b in kept if bounded.sets.numbered(b) is not None}  # type: ignore[union-attr]
            if k % 6 == 0:
                whole.refit()
                bounded.refit()
                if dropped and k % 18 == 0:  # a decision: the same values from each model
                    for spot, hole in spots_held:
                        me = spot.position
                        kept = {b for store in bounded.dropped[me] for b in store.bettings}
                        got, want = (d.values(spot, hole).values for d in (mine, theirs))
                        assert np.allclose(got, want, rtol=0, atol=1e-9)
                        tree = mine._trees[me]
                        rows, at = tree.table(MODEL), tree.nodes[:, 5]
                        for n, state in enumerate(tree.states):  # the rollouts' rows
                            if state.player not in (-1, me):
                                row = whole.mean_rows(me, state)
                                far = np.abs(rows[at[n] : at[n] + len(row)] - row).max()
                                assert far <= TOLERANCE
                                reads += state.betting in kept
                    mine.new_hand()
                    theirs.new_hand()
        apart = _apart(whole, bounded)
        if dropped:
            assert bounded.sets.renumbered > 3 and len(met_again) > 10 and reads > 10
            assert not any(len(a.counts) for row in bounded.archives for a in row)
            assert max(apart) <= TOLERANCE
            for p in range(3):
                for d in range(2):
                    assert np.allclose(bounded.thetas[p][d], whole.thetas[p][d], rtol=0, atol=1e-9)
            assert bounded.log_odds == pytest.approx(whole.log_odds, rel=TOLERANCE)
        else:  # none kept: the test can fail
            assert not met_again and max(apart) > 1e-3
