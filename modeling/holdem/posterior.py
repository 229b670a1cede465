"""MBBR's posterior in 2- and 3-player limit hold'em: a Dirichlet per (our position, opponent,
abstract information set of the opponent), fitted from hands of the real game.

The posterior lives on the abstract game of a blueprint
(:func:`~oppmodel.modeling.games.acpc.holdem_abstract.abstract_game`): the opponent's strategy
is a row per (view, exact betting), the rows the blueprint's strategy file keys. Its prior is
MBBR's informed prior around the blueprint (:func:`~oppmodel.modeling.mbbr.priors.prior_alpha`,
``eta`` times the blueprint's rows clipped to ``[epsilon, 1 - epsilon]``), and its fit is MBBR's
own, unchanged: :class:`~oppmodel.modeling.mbbr.dirichlet.DirichletPosterior` (CVB0; one exact
conjugate count when nothing is hidden).

What is new is the evidence of a hand. The abstract game's chance is a sample of deals, so a real
hand is in it only by accident, and :func:`~oppmodel.modeling.mbbr.evidence.hand_evidence`
(which finds the sample's deals that agree with what we saw) does not apply. Here the evidence
is built from the real cards: every hole pair the opponent may hold given what we saw (none of
our cards, none of the board's dealt so far: :func:`~oppmodel.modeling.holdem.policy.live_holes`;
the one pair it showed at a showdown) is an assignment, equally likely before the actions, and
its moves are at the information sets the card abstraction gives that pair on the hand's boards
(:meth:`~oppmodel.modeling.games.acpc.abstraction.CardAbstraction.range_buckets`, a whole range
in one pass per board). That is the :class:`~oppmodel.modeling.mbbr.evidence.Evidence` the fit
reads, so the expectation step over hidden cards is the limit games' own: each pair's
responsibility is the product of the model's probabilities of the opponent's moves at its
information sets, normalised over the pairs (a pair's cards do not change the chance of the
board: every pair is dealt alike). Pairs at the same information sets all along are one row
weighted by their number, which is exact (their responsibilities are equal, and add up): a hand
folded on the river is some 70 rows, not 1,225.

In 3 players the assignments are the hole pairs both opponents may hold together (no card in
common): a row of the hand is one row of each opponent's, weighted by how many of their pairs
share no card (:func:`_disjoint_pairs`, an exact count). With both opponents hidden these rows are
every pairing of the two opponents' rows (up to 15,000 a hand, 150 KB of tables a hand on the
ACPC game against its blueprint: 455 MB in 3,000 hands), so a hand whose joint rows would be more
than ``JOINT_ROWS`` is stored as one class per opponent (:class:`HandEvidence`): each opponent's
rows weighted by the joint pairs they are part of. That is exact where one opponent's cards are
shown (one row) and for each opponent's own range before the actions; what it leaves out is how
the actions of one hidden opponent, through the cards its likely holdings remove, shift the
other's (a card removal of two cards in 47). The guard's likelihood of the hand
(:attr:`HoldemPosterior.log_odds`) stays the joint's, exactly. Measured in experiments/RESULTS.md
("The 3-player posterior's memory bound").

The information sets are numbered by :mod:`oppmodel.modeling.holdem.sets`: all of a compiled
abstract game's, or, where the betting tree does not compile (the ACPC 3-player game: 23.9
million public nodes), each node's as a hand first reaches it (``AbstractSpots(None, ...,
sets=LazySets(...))``). The posterior's arrays then grow with the numbering (:meth:`HoldemPosterior.
observe`), and a set numbered after a refit gets the tilt of its situation, as the compiled
game's unreached sets have it.

The prior's mean is refitted on demand (:meth:`HoldemPosterior.refit`): the blueprint tilted per
betting situation and node toward what the opponent did (:mod:`~oppmodel.modeling.holdem.tilt`).
"""

from __future__ import annotations

import copy
from typing import NamedTuple, cast

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES, HOLE_INDEX, CardAbstraction
from oppmodel.modeling.games.acpc.betting import (
    ACTION_LETTERS,
    CALL,
    NUM_ACTIONS,
    ROUND_SEPARATOR,
    BettingState,
)
from oppmodel.modeling.games.acpc.flop_table import BoardTable
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.holdem_abstract import AbstractGameConfig
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.holdem import window
from oppmodel.modeling.holdem.blueprint import range_views
from oppmodel.modeling.holdem.policy import DECK_SIZE, live_holes
from oppmodel.modeling.holdem.sets import CompiledSets, LazySets, distinct_rows, situation
from oppmodel.modeling.holdem.strength import hole_rows
from oppmodel.modeling.holdem.tilt import Archive, Dropped, TiltMap, fit_tilt, tilted_rows
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence, hand_likelihood
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.observation import LimitObservation

REFIT_SWEEPS = 2  # steps over the hidden hands after a refit of the prior (incremental EM goes on)
# the most joint rows a hand with two hidden opponents is stored as; above, a class per opponent
JOINT_ROWS = 512
NO_DEAL = -1  # ``Evidence.deal`` of a real hand: no deal of the abstract game's sample holds it


class AbstractSpots:
    """Where real cards and bettings meet the abstract game: the information set a hole pair is
    at after a betting, for a whole range at once."""

    def __init__(
        self,
        game: LimitGame | None,
        config: AbstractGameConfig,
        cards: CardAbstraction,
        flops: tuple[BoardTable, ...] = (),
        *,
        sets: LazySets | None = None,
    ) -> None:
        """``game``: the compiled abstract game, or None with ``sets``, its sets numbered as met;
        ``flops``: the boards' buckets computed ahead (a blueprint's ``flops``: the flops', the
        turns' where saved), read instead of bucketing a new board (10-60 ms of CPU a flop)."""
        if cards.config != config.abstraction:
            raise InvalidArgumentError("cards", "is not the abstraction of the abstract game")
        if (game is None) == (sets is None):
            raise InvalidArgumentError("game", "needs the compiled game or lazy sets, not both")
        self._game = game
        self.sets: CompiledSets | LazySets = sets or CompiledSets(cast(LimitGame, game))
        self.config = config
        self.cards = cards
        self.flops = flops
        self._moves: dict[str, tuple[tuple[int, int, int, int], ...]] = {}
        self._moves_numbering = self.sets.renumbered

    def views(self, board: tuple[int, ...], round_: int, holes: np.ndarray) -> np.ndarray:
        """(k,) the view in ``round_`` of each hole pair ((k, 2) card integers) on ``board``
        (card integers, at least the cards dealt by that round); InvalidArgumentError if a pair
        holds a board card."""
        return range_views(self.config, self.cards, self.flops, board, round_, hole_rows(holes))

    @property
    def game(self) -> LimitGame:
        """The compiled abstract game (InvalidArgumentError if the sets are numbered as met)."""
        if self._game is None:
            raise InvalidArgumentError("game", "not compiled: its sets are numbered as met")
        return self._game

    def infosets(self, betting: str, board: tuple[int, ...], holes: np.ndarray) -> np.ndarray:
        """(k,) the information set of the player to act after ``betting`` holding each pair."""
        base, round_, _ = self.sets.node(betting)
        return base + self.views(board, round_, holes)

    def moves(self, betting: str) -> tuple[tuple[int, int, int, int], ...]:
        """Every move of a betting: (the first set of the node before it, its round, the mover,
        the action code); kept per betting (a match meets the same bettings over and over) until
        the numbering drops nodes (:meth:`LazySets.renumber`), which also bounds what is kept."""
        if self._moves_numbering != self.sets.renumbered:
            self._moves.clear()
            self._moves_numbering = self.sets.renumbered
        found = self._moves.get(betting)
        if found is None:
            out = []
            for k, letter in enumerate(betting):
                if letter != ROUND_SEPARATOR:
                    out.append((*self.sets.node(betting[:k]), ACTION_LETTERS.index(letter)))
            found = self._moves[betting] = tuple(out)
        return found


def cards_of(text: str) -> list[int]:
    """The card integers of an ACPC card text (``"AsKh"``)."""
    return [card_index(text[i : i + 2]) for i in range(0, len(text), 2)]


def holdem_evidence(spots: AbstractSpots, obs: LimitObservation) -> HandEvidence:
    """The evidence of a validated observation of real cards (see the module's text), 2 or 3
    players: rows of the opponents' information sets over the hole pairs they may hold together,
    its moves as (offset - 1, information set, action), weighted by their number of pairs (two
    hidden opponents' pairs never share a card); factored per opponent when two hidden
    opponents' joint rows would be more than ``JOINT_ROWS`` (:class:`HandEvidence`)."""
    n, p = spots.sets.num_players, obs.position
    ours = obs.hole[p]
    assert ours is not None  # validated: our own cards are always there
    board = tuple(c for text in obs.board for c in cards_of(text))
    shown = {q: cards_of(text) for q, text in enumerate(obs.hole) if text is not None}
    live = live_holes([c for cards in shown.values() for c in cards] + list(board))
    parts = []
    for d in range(1, n):
        q = (p + d) % n
        holes = np.array([shown[q]], dtype=np.int64) if q in shown else live
        parts.append(_opponent_classes(spots, obs.betting, board, q, d - 1, holes))
    revealed = tuple((p + d) % n in shown for d in range(1, n))
    width = spots.sets.capacity
    if n == 2:
        return HandEvidence([_evidence(parts[0][0], parts[0][2], revealed, width)], None)
    (rows_1, members_1, _), (rows_2, members_2, _) = parts
    joint = _disjoint_pairs(members_1, members_2)
    if joint.size > JOINT_ROWS:  # each opponent's rows weighted by their joint pairs
        marginals = (joint.sum(axis=1), joint.sum(axis=0))
        factors = [
            _evidence(rows[w > 0], w[w > 0], revealed, width)
            for rows, w in zip((rows_1, rows_2), marginals, strict=True)
        ]
        return HandEvidence(factors, joint)
    a, b = np.nonzero(joint)
    rows = np.concatenate([rows_1[a], rows_2[b]], axis=1)
    return HandEvidence([_evidence(rows, joint[a, b], revealed, width)], None)


def _evidence(
    rows: np.ndarray, weights: np.ndarray, revealed: tuple[bool, ...], width: int
) -> Evidence:
    """The ``Evidence`` of ``rows`` (m, L, 3) weighted ``weights``, on sets numbered up to
    ``width``."""
    entries = (rows[:, :, 0] * width + rows[:, :, 1]) * NUM_ACTIONS + rows[:, :, 2]
    return Evidence(NO_DEAL, rows, revealed, entries, weights)


class HandEvidence(NamedTuple):
    """A hand's evidence as the fit stores it: one :class:`Evidence` whose rows are whole
    assignments of the hidden cards (exact), or, where two hidden opponents' rows pair up into
    more than ``JOINT_ROWS``, one per opponent (offset order), each row weighted by the pairs of
    both opponents it is part of (``joint`` counted, so each opponent's own prior range is
    exact): the fit then treats the two opponents' cards as independent given the hand, which
    misses only how one opponent's likely holdings remove cards from the other's."""

    parts: list[Evidence]
    joint: np.ndarray | None  # (m1, m2) the joint pairs of the factors' rows, None if one part

    def likelihood(self, p: int, profile: np.ndarray) -> float:
        """``hand_likelihood`` of the hand seen from ``p`` (exact with factors too: their rows'
        probabilities paired through ``joint``)."""
        if self.joint is None:
            return hand_likelihood(self.parts[0].rows, self.parts[0].weights, p, profile)
        first, second = (_row_probabilities(part.rows, p, profile) for part in self.parts)
        rows = [self.joint.sum(axis=1 - d) > 0 for d in (0, 1)]
        return float(first @ self.joint[np.ix_(*rows)] @ second)


def _row_probabilities(rows: np.ndarray, p: int, profile: np.ndarray) -> np.ndarray:
    """(m,) the probability of each row's moves, each opponent playing its row of ``profile``."""
    seats = (p + 1 + rows[:, :, 0]) % profile.shape[0]
    return profile[seats, rows[:, :, 1], rows[:, :, 2]].prod(axis=1)


def _opponent_classes(
    spots: AbstractSpots,
    betting: str,
    board: tuple[int, ...],
    q: int,
    offset: int,
    holes: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Position ``q``'s moves over the hole pairs ``holes`` ((k, 2) cards) it may hold: the
    distinct rows of its moves as (offset, information set, action), (m, L, 3), in the order of
    their entries; which pairs each row stands for, (m, 1326) 0/1 over ``ALL_HOLES``; and how
    many."""
    moves = [(base, r, a) for base, r, mover, a in spots.moves(betting) if mover == q]
    views = {r: spots.views(board, r, holes) for r in {r for _, r, _ in moves}}
    rows = np.zeros((len(holes), len(moves), 3), dtype=np.int64)
    rows[:, :, 0] = offset
    for j, (base, r, a) in enumerate(moves):
        rows[:, j, 1] = base + views[r]
        rows[:, j, 2] = a
    entries = rows[:, :, 1] * NUM_ACTIONS + rows[:, :, 2]
    first, label, counts = distinct_rows(entries)
    members = np.zeros((len(first), len(ALL_HOLES)))
    members[label, HOLE_INDEX[holes[:, 0], holes[:, 1]]] = 1.0
    return rows[first], members, counts


def _disjoint_pairs(members_1: np.ndarray, members_2: np.ndarray) -> np.ndarray:
    """(m1, m2) int64: how many pairs of hole pairs, one of each row's of the first opponent
    (``members_1``: :func:`_opponent_classes`') and one of each of the second's, share no card:
    all pairs less those sharing a card, counted card by card (a pair sharing both cards is one
    hole pair in both rows, counted twice)."""
    sizes = np.outer(members_1.sum(axis=1), members_2.sum(axis=1))
    by_card = (members_1 @ _HOLE_CARDS) @ (members_2 @ _HOLE_CARDS).T
    same = members_1 @ members_2.T
    return np.rint(sizes - by_card + same).astype(np.int64)  # integers below 2^53: exact


_HOLE_CARDS = np.zeros((len(ALL_HOLES), DECK_SIZE))  # (1326, 52): each pair's two cards
_HOLE_CARDS[np.arange(len(ALL_HOLES))[:, None], ALL_HOLES] = 1.0


class HoldemPosterior:
    """Per position of ours, the Dirichlet posterior over the opponents' abstract strategies
    (see the module's text); 2 or 3 players."""

    def __init__(
        self,
        spots: AbstractSpots,
        blueprint: np.ndarray | None,
        config: MBBRConfig | None = None,
        *,
        window: int | None = None,
        bound: float | None = window.BOUND,
    ) -> None:
        """``blueprint``: (n, num_infosets, 3) the compiled abstract game's profile the prior is
        around (:func:`abstract_profile`), or None where the sets are numbered as met (their
        numbering reads the blueprint's rows); ``config``: MBBR's, of which ``epsilon`` and
        ``eta`` are read (the informed prior); ``window``: the classes a fit keeps at a refit,
        the older folded (:mod:`~oppmodel.modeling.holdem.window`; None: every class kept, as
        :meth:`detached` needs); ``bound``: with a window and sets numbered as met, a refit
        renumbers the sets when more than ``bound`` times those the kept classes use are numbered
        (:meth:`refit`; None: never)."""
        sets = spots.sets
        n = sets.num_players
        if n not in (2, 3):
            raise InvalidArgumentError("game", "hold'em opponent models are 2- or 3-player")
        config = config or MBBRConfig()
        config.validate()
        self.spots, self.sets = spots, sets
        self.eta, self.epsilon = config.eta, config.epsilon
        self.capacity = sets.capacity
        if blueprint is None:  # every row padding until numbered (``_sync``)
            self.size = 0
            blueprint = np.zeros((n, sets.capacity, NUM_ACTIONS))
            blueprint[:, :, CALL] = 1.0
            alpha = blueprint.copy()
        else:
            self.size = sets.size
            alpha = prior_alpha(
                spots.game, blueprint, epsilon=config.epsilon, eta=config.eta, prior=Prior.INFORMED
            )
        self.blueprint = blueprint
        self.base = alpha / config.eta  # the clipped blueprint rows the tilt multiplies
        # per position of ours, its opponents' positions by offset (``Evidence``'s order)
        self.seats = [[(p + d) % n for d in range(1, n)] for p in range(n)]
        self._tilts: dict[int, tuple[int, TiltMap]] = {}  # position -> (sets numbered, its map)
        # per position of ours and opponent, the situations' tilt of the last refit (None: none)
        self.thetas: list[list[np.ndarray | None]] = [[None] * (n - 1) for _ in range(n)]
        self.fits = [
            DirichletPosterior(alpha[seats], blueprint.copy(), seats) for seats in self.seats
        ]
        self.window = window
        if bound is not None and bound < 1.0:
            raise InvalidArgumentError("bound", f"must be 1 or more (times the sets used): {bound}")
        self.bound = bound if window is not None and sets.numbered_as_met else None
        # per position of ours and opponent, dropped nodes' folded counts (bound_numbering)
        self.dropped = [[Dropped.empty() for _ in range(n - 1)] for _ in range(n)]
        self.archives = [[Archive.empty() for _ in range(n - 1)] for _ in range(n)]
        self.folded = [np.zeros_like(fit.alpha0) for fit in self.fits]  # per p, in alpha0 too
        self.hands = 0
        # log of the likelihood ratio, the models' predictions against the blueprint's, of the
        # opponent's moves in every hand so far (each hand's prediction made before it)
        self.log_odds = 0.0
        self._sync()

    def observe(self, obs: LimitObservation) -> list[Evidence]:
        """Add a finished hand seen from ``obs.position`` (InvalidArgumentError /
        IllegalActionError naming the field, nothing changed, if the dealer could not have shown
        it); returns its evidence as stored (:attr:`HandEvidence.parts`)."""
        self.sets.validate(obs)
        evidence = holdem_evidence(self.spots, obs)
        self._sync()  # the sets the hand numbered (the evidence's indices are the numbering's)
        p = obs.position
        model = evidence.likelihood(p, self.models_profile(p))
        blueprint = evidence.likelihood(p, self.blueprint)
        with np.errstate(divide="ignore"):
            self.log_odds += np.log(model) - np.log(blueprint)
        if evidence.joint is None:
            self.fits[p].observe(obs, evidence.parts[0])
        else:  # a class per opponent
            for d, part in enumerate(evidence.parts, start=1):
                self.fits[p].observe((obs, d), part)
        self.hands += 1
        return evidence.parts

    def refit(self, sweeps: int = REFIT_SWEEPS) -> None:
        """Fold each fit's classes beyond ``window`` (:func:`fold_oldest`), renumber the sets if
        too many are numbered (:func:`bound_numbering`), fit each position's tilted prior
        (:func:`fit_tilt`) to the expected counts now (folded, dropped ones too), make it the
        Dirichlets' prior mean (concentration ``eta``; plus the folded counts), and step the
        fit ``sweeps`` times over the hands with hidden cards under it."""
        self._sync()
        if self.window is not None:
            for p, fit in enumerate(self.fits):
                self.folded[p] += window.fold_oldest(fit, self.window)
            if self.bound is not None:
                window.bound_numbering(self, self.bound)
                self._tilts.clear()  # made again over the numbering now
        alpha0: list[np.ndarray] = []
        thetas: list[list[np.ndarray | None]] = []
        for p, fit in enumerate(self.fits):
            counts = fit.expected + self.folded[p]
            tilts = [
                fit_tilt(self._tilt(q), self.base[q], counts[d], archive=self.archives[p][d],
                         dropped=self.dropped[p][d])
                for d, q in enumerate(self.seats[p])
            ]  # fmt: skip
            for dropped, tilt in zip(self.dropped[p], tilts, strict=True):
                dropped.delta = tilt.dropped  # the nodes kept whole: their own tilts
            alpha0.append(np.stack([self.eta * tilt.mean for tilt in tilts]) + self.folded[p])
            thetas.append([tilt.theta for tilt in tilts])
        self.set_prior(alpha0, thetas, sweeps)

    def set_prior(
        self,
        alpha0: list[np.ndarray],
        thetas: list[list[np.ndarray | None]],
        sweeps: int = REFIT_SWEEPS,
    ) -> None:
        """Make ``alpha0[p]`` ((n - 1, num_infosets, 3), a :meth:`refit`'s, maybe of an earlier
        state of compiled sets: :meth:`detached`) position p's prior and ``thetas[p]`` its
        situations' tilts, and step its fit ``sweeps`` times over the hands with hidden cards
        under it."""
        for p, fit in enumerate(self.fits):
            fit.alpha0[:] = alpha0[p]  # in place: the fit's kernels read this array
            self.thetas[p] = list(thetas[p])
            fit.converge(max_sweeps=sweeps)

    def fit_states(self) -> list[tuple[int, dict[str, np.ndarray]]]:
        """Each position's fit now, copied: its number of classes and its arrays
        (``DirichletPosterior.state()``), what :meth:`detached` takes."""
        return [(len(keys), state) for keys, state in (fit.state() for fit in self.fits)]

    def detached(
        self, states: list[tuple[int, dict[str, np.ndarray]]], alpha0: list[np.ndarray]
    ) -> HoldemPosterior:
        """A posterior at ``states`` (:meth:`fit_states`' of this one, now or earlier) with prior
        parameters ``alpha0`` (per position, as the fits' then) that shares nothing either
        changes: the sets, blueprint and tilt maps read-only, fits and tilts of its own. For
        refitting and solving beside this one on compiled sets (whose numbering never grows: a
        response's solve needs the compiled game anyway); it does not observe (its classes' keys
        are their numbers)."""
        other = copy.copy(self)
        other.thetas = [list(row) for row in self.thetas]
        other._tilts = dict(self._tilts)
        other.fits = []
        for p, (classes, state) in enumerate(states):
            fit = DirichletPosterior(alpha0[p], self.blueprint.copy(), self.seats[p])
            fit.restore(range(classes), state)
            other.fits.append(fit)
        return other

    def models_profile(self, p: int) -> np.ndarray:
        """(n, num_infosets, 3): each opponent's posterior mean in its row, the blueprint in
        ours (kept up to date hand by hand: do not modify it; numbering sets may grow it)."""
        self._sync()
        return self.fits[p].profile

    def _tilt(self, q: int) -> TiltMap:
        """Position ``q``'s tilt map over the sets numbered now."""
        made = self._tilts.get(q)
        if made is None or made[0] != self.sets.size:
            made = self._tilts[q] = (self.sets.size, TiltMap(self.sets, q))
        return made[1]

    def _sync(self) -> None:
        """Take the sets numbered since the last call (only lazy sets number more): the arrays
        grown to the numbering's capacity, the new rows' prior the blueprint's (as
        ``prior_alpha`` makes it), tilted by their situation's tilt of the last refit (as
        ``fit_tilt`` tilts a compiled game's rows no hand reached)."""
        if self.sets.size == self.size:
            return
        sets = cast(LazySets, self.sets)
        if sets.capacity > self.capacity:
            window.move_sets(self, np.arange(self.capacity), sets.capacity)  # a wider table
        new = slice(self.size, sets.size)
        legal = sets.legal_mask[:, new]
        self.blueprint[:, new] = sets.blueprint[:, new]
        alpha = self._clipped(sets.blueprint[:, new], legal)
        self.base[:, new] = alpha / self.eta
        situations = sets.situation[new]
        for p, fit in enumerate(self.fits):
            for d, q in enumerate(self.seats[p]):
                fit.alpha0[d, new] = self._prior_rows(p, d, alpha[q], legal[q], situations)
        window.restore_dropped(self, self.size)  # a dropped node met again: as it was
        for fit in self.fits:
            fit.profile[:, new] = self.blueprint[:, new]
            prior = fit.alpha0[:, new]
            fit.profile[fit.seats, new] = prior / prior.sum(axis=2, keepdims=True)
        self.size = sets.size

    def mean_rows(self, p: int, state: BettingState) -> np.ndarray:
        """(views, 3) from our position ``p``, the posterior mean of the opponent to act at
        ``state`` (a decision node of lazy sets), numbering nothing: a node not numbered has
        the prior's mean :meth:`_sync` would give it now (as a numbered node no hand reached;
        a dropped node kept whole, its rows as it was: :func:`dropped_means`)."""
        sets = cast(LazySets, self.sets)
        found = sets.numbered(state.betting)
        if found is not None:
            base, round_, q = found
            return self.models_profile(p)[q, base : base + sets.views[round_]]
        d = self.seats[p].index(state.player)
        kept = window.dropped_means(self, p, d, state.betting)
        if kept is not None:
            return kept
        legal, blueprint = sets.rows_of(state)
        return self.prior_means(p, d, blueprint, legal, np.full(len(blueprint), state.round))

    def prior_means(
        self, p: int, d: int, blueprint: np.ndarray, legal: np.ndarray, rounds: np.ndarray
    ) -> np.ndarray:
        """(k, 3) :meth:`mean_rows` of rows of nodes not numbered, many at once: rows of our ``p``'s
        ``d``-th opponent, their blueprint rows, legal actions ((k, 3) or (3,)) and rounds."""
        legal = np.broadcast_to(legal, blueprint.shape)
        alpha = self._clipped(blueprint, legal)
        prior = self._prior_rows(p, d, alpha, legal, situation(rounds, legal))
        return prior / prior.sum(axis=1, keepdims=True)

    def _clipped(self, blueprint: np.ndarray, legal: np.ndarray) -> np.ndarray:
        """The informed prior's parameters of blueprint rows (``prior_alpha``'s)."""
        mean = np.where(legal, np.clip(blueprint, self.epsilon, 1 - self.epsilon), 0)
        return self.eta * mean / mean.sum(axis=-1, keepdims=True)

    def _prior_rows(
        self, p: int, d: int, alpha: np.ndarray, legal: np.ndarray, situations: np.ndarray
    ) -> np.ndarray:
        """Position ``p``'s prior parameters for rows of its ``d``-th opponent whose clipped
        parameters are ``alpha``: tilted by their situations' tilt of the last refit, if any."""
        theta = self.thetas[p][d]
        if theta is None:
            return alpha
        return self.eta * tilted_rows(alpha / self.eta, legal, theta[situations])
