"""The mixture prior (limit games): does this opponent play like the prior mean, anyhow, or
without looking at its cards?

The informed prior trusts the prior mean (the game's solved strategy in Leduc) at every
information set, and in Leduc most information sets are first met when the model predicts them,
where the posterior mean *is* the prior mean: against a player unlike the prior mean the model is
wrong wherever the data has not reached. The mixture prior lets the revealed moves say how far
to trust it, across every information set at once. Each opponent is one of three types, each a
Dirichlet prior:

- *informed* (prior weight ``TYPE_WEIGHTS[0]``): the informed prior, Dirichlet(mixture_eta x the
  prior mean clipped to [epsilon, 1 - epsilon]) per information set, with a concentration of its
  own (``MBBRConfig.mixture_eta``, default 4), not eta: eta sets how hard the informed prior pulls
  a model toward the mean, while this type is a hypothesis the revealed moves select, "plays like
  the prior mean", which says so only while it is concentrated around it (at 1 it would explain
  any near-pure player better than the uninformed type);
- *uninformed*: Dirichlet(2) per information set;
- *card-blind*: one Dirichlet(2) per public decision node of its seat, shared by every private
  card: its strategy at an information set is its node's (a hierarchical prior pooled across
  private cards, at the limit where the cards do not matter; the ACPC example players, random
  bots, calling stations and always-raisers are this type).

The type weights are the exact posterior given the revealed moves (the moves of hands in which
the mover's cards were shown to us): prior weight x marginal likelihood, a product of
Dirichlet-multinomial likelihoods over information sets (card-blind: over nodes). Moves with
hidden cards are left out of the weights (their likelihood sums over card assignments; the
typed prior leaves them out too), but not out of the means: each type's mean is its own
posterior given every hand, the informed and uninformed types' their incremental CVB0 fits
(``dirichlet.py``), the card-blind type's the exact conjugate counts of every move seen
(its likelihood does not depend on the cards). The opponent's model is the mixture's posterior
mean, sum_k w_k x mean_k, kept hand by hand (one kernel call) on the rows the types tell apart:
those of the hands seen (elsewhere it is the prior mean, the informed fit's), every row with the
card-blind type.

The eta mixture (``Prior.ETA_MIXTURE``, the default prior) is the same computation over two types:
the informed prior at eta and at ``MBBRConfig.weak_eta``, prior weights ``ETA_WEIGHTS``; the weak
type's mean is Dirichlet(its prior + the informed fit's expected counts), the hidden cards split
as the informed fit splits them (one fit a hand, not two: a second fit cost a third of the hand,
and moved the model by less than the fit's own error, ``tests/test_eta_mixture.py``). It lets
the revealed moves choose the prior's strength per opponent: the first move seen at an
information set has the prior mean's probability under either type, so only the second and later
moves at the same information set tell them apart, and they favour the weak concentration when
the opponent's play scatters away from the mean, the strong one when it stays near it.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence

import numpy as np
from numba import njit

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr._limit_kernels import normalise_rows
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.priors import UNINFORMED_ALPHA
from oppmodel.modeling.mbbr.snapshot import take

TYPES = ("informed", "uninformed", "card-blind")
TYPE_WEIGHTS = (0.5, 0.25, 0.25)  # prior probability of each type, in the order of TYPES
ETA_TYPES = ("eta", "weak_eta")  # the eta mixture's types: the informed prior at each
ETA_WEIGHTS = (0.5, 0.5)


class MixturePrior:
    """The type weights, the second (uninformed or weak-eta) and card-blind types' posteriors and
    the mixture means (``profile``) for the opponents of one position (the first type's
    posterior, informed, is the model's own; the weak-eta type shares its expected counts)."""

    def __init__(
        self,
        game: LimitGame,
        informed_alpha0: np.ndarray,
        seats: Sequence[int] | np.ndarray,
        informed: DirichletPosterior,
        weak_alpha0: np.ndarray | None = None,
    ) -> None:
        """``informed_alpha0``: (n - 1, num_infosets, 3) the informed type's prior parameters
        (0 at illegal actions), the opponent at offset d in row d - 1; ``seats``: the position of
        the opponent at each offset; ``informed``: the informed fit (at the prior);
        ``weak_alpha0``: None for the type mixture (``TYPES``), else the eta mixture's
        (``ETA_TYPES``) weak type's prior parameters, shaped as ``informed_alpha0``."""
        self.seats = np.asarray(seats, dtype=np.int64)
        self.informed_alpha0 = np.asarray(informed_alpha0, dtype=np.float64)
        legal = game.legal_mask[self.seats]
        self.card_blind = weak_alpha0 is None
        self._log_prior = np.log(TYPE_WEIGHTS if self.card_blind else ETA_WEIGHTS)
        self.second_alpha0 = (
            np.where(legal, UNINFORMED_ALPHA, 0.0)
            if weak_alpha0 is None
            else np.asarray(weak_alpha0, dtype=np.float64)
        )
        # the uninformed type's own fit; the weak-eta type has none (the informed fit's counts)
        self.second = (
            DirichletPosterior(self.second_alpha0, informed.profile.copy(), self.seats)
            if self.card_blind
            else None
        )
        # the decision node of each opponent's information sets (padding rows: node 0, unread)
        self.node_of = np.zeros(self.informed_alpha0.shape[:2], dtype=np.int64)
        self.blind_alpha0 = np.zeros((len(self.seats), game.num_nodes, 3))
        # the rows the types may tell apart (module docstring): marked, and listed per offset
        marked, rows = np.zeros(self.node_of.shape, dtype=np.bool_), np.zeros_like(self.node_of)
        for d_1, q in enumerate(self.seats):
            size = len(game.infosets(int(q)))
            nodes = np.asarray(game.infoset_node[int(q)][:size], dtype=np.int64)
            self.node_of[d_1, :size] = nodes
            self.blind_alpha0[d_1, nodes] = np.where(legal[d_1, :size], UNINFORMED_ALPHA, 0.0)
            marked[d_1, :size], rows[d_1, :size] = self.card_blind, np.arange(size)
        self._at_prior = (informed.profile.copy(), marked, rows)
        self._start(informed, self.second)
        _mix_rows(*self._args[6:])
        self._at_prior = (self.profile.copy(), marked, rows)

    def _start(self, informed: DirichletPosterior, second: DirichletPosterior | None) -> None:
        """No hand seen: the counts, the types' log evidence, prior weights and the means at the
        prior, beside the informed fit ``informed`` and the second type's fit (None: the
        informed one's counts)."""
        self.informed, self.second, self.profile = informed, second, self._at_prior[0].copy()
        self.blind = np.zeros_like(self.blind_alpha0)  # every move seen, per node
        self.revealed = np.zeros_like(self.informed_alpha0)  # moves seen with the mover's cards
        # log marginal likelihood of the revealed moves under each type, by the chain rule
        self.log_evidence = np.zeros((len(self.seats), len(self._log_prior)))
        self._weights = np.zeros_like(self.log_evidence)
        _weigh(self._log_prior, self.log_evidence, self._weights)
        marked, rows = self._at_prior[1].copy(), self._at_prior[2].copy()
        self._args = (  # the kernels' (``_observe``; ``_mix_rows`` from the 7th)
            self.informed_alpha0, self.revealed, np.zeros_like(self.blind_alpha0),
            self.log_evidence, self._log_prior, marked, rows, marked.sum(axis=1), self.seats,
            self._weights, informed.profile, self.second_alpha0, (second or informed).expected,
            self.card_blind, self.blind_alpha0, self.blind, self.node_of, self.profile,
        )  # fmt: skip

    def at_prior(self, informed: DirichletPosterior) -> MixturePrior:
        """A mixture like this one at the prior, beside the informed fit ``informed`` (at the
        prior): cheaper than building one (change detection opens one every few hands)."""
        fresh = copy.copy(self)
        fresh._start(informed, self.second and self.second.at_prior())
        return fresh

    def observe(self, key: object, evidence: Evidence, evidence_of: Callable) -> None:
        """Add one hand (already added to the informed fit) to the other types, the revealed
        moves, the weights and the mixture means."""
        if self.second is not None:
            self.second.observe(key, evidence_of)
        _observe(evidence.rows[0], evidence.revealed, evidence.entries, *self._args)

    def weights(self, d: int) -> np.ndarray:
        """Posterior probability of each type (``TYPES``, or ``ETA_TYPES``) of the opponent at
        offset ``d`` given its revealed moves."""
        return self._weights[d - 1].copy()

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed, besides the second type's fit's own state: the
        revealed moves, the card-blind counts and the types' log evidence."""
        return {name: getattr(self, name).copy() for name in ("revealed", "blind", "log_evidence")}

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set ``state()``'s arrays in a mixture at the prior whose fits are restored already;
        SnapshotError if they do not fit."""
        arrays = [take(state, name, "f8", a.shape) for name, a in self.state().items()]
        self.revealed[:], self.blind[:], self.log_evidence[:] = arrays
        for d_1, nodes in enumerate(self.node_of):  # the revealed moves per node
            np.add.at(self._args[2][d_1], nodes, self.revealed[d_1])
        _weigh(self._log_prior, self.log_evidence, self._weights)
        if not self.card_blind:  # the rows of the hands seen: the informed fit's classes'
            _mark(self.informed.state()[1]["entries"], *self._args[5:8])
        _mix_rows(*self._args[6:])

    def nbytes(self) -> int:
        """Bytes of the arrays held, the second type's fit's included (not the informed one's)."""
        arrays = [a for a in self._args if isinstance(a, np.ndarray)]
        second = 0 if self.second is None else self.second.nbytes()
        return sum(a.nbytes for a in (*arrays, *self._at_prior)) + second


@njit(cache=True)
def _observe(
    moves, revealed, entries, informed_alpha0, counts, by_node, log_evidence, log_prior, marked,
    rows, num_rows, seats, weights, informed, second_alpha0, second_counts, card_blind,
    blind_alpha0, blind, node_of, out,
):  # fmt: skip
    """A hand's opponent moves ``moves`` (``Evidence.rows[0]``): each revealed one's predictive
    log probability given the revealed moves before it added to each type's log evidence, then
    counted (``counts`` per information set, ``by_node`` per node); every move counted in
    ``blind``; the weights; the hand's rows marked (eta mixture); then ``_mix_rows``."""
    for j in range(moves.shape[0]):
        d, i, a = moves[j, 0], moves[j, 1], moves[j, 2]
        node = node_of[d, i]
        if revealed[d]:  # the types' (alpha, revealed counts) here, in the order of the weights
            types = (informed_alpha0[d, i], counts[d, i], second_alpha0[d, i], counts[d, i],
                    blind_alpha0[d, node], by_node[d, node])  # fmt: skip
            for k in range(log_prior.shape[0]):
                alpha, seen = types[2 * k], types[2 * k + 1]
                log_evidence[d, k] += math.log((alpha[a] + seen[a]) / (alpha.sum() + seen.sum()))
            counts[d, i, a] += 1.0
            by_node[d, node, a] += 1.0
        blind[d, node, a] += 1.0
    _weigh(log_prior, log_evidence, weights)
    if not card_blind:
        _mark(entries, marked, rows, num_rows)
    _mix_rows(rows, num_rows, seats, weights, informed, second_alpha0, second_counts, card_blind,
              blind_alpha0, blind, node_of, out)  # fmt: skip


@njit(cache=True)
def _weigh(log_prior, log_evidence, weights):
    """Each offset's posterior type weights from its log evidence."""
    for d in range(log_evidence.shape[0]):
        log_posterior = log_prior + log_evidence[d]
        weights[d] = np.exp(log_posterior - log_posterior.max())
        weights[d] /= weights[d].sum()


@njit(cache=True)
def _mark(entries, marked, rows, num_rows):
    """Mark and list the rows of ``entries`` (flat indices into (n - 1, num_infosets, 3))."""
    num_infosets = marked.shape[1]
    for e in entries.ravel():
        d, i = divmod(e // 3, num_infosets)
        if not marked[d, i]:
            marked[d, i] = True
            rows[d, num_rows[d]] = i
            num_rows[d] += 1


@njit(cache=True)
def _mix_rows(
    rows, num_rows, seats, weights, informed, second_alpha0, second_counts, card_blind,
    blind_alpha0, blind, node_of, out,
):  # fmt: skip
    """out's listed rows: the types' means weighed, each row divided by its own sum
    (``normalise_rows``); the second type's mean is its alpha0 + expected counts, normalised as
    its fit normalises them; the card-blind type's is its node's counts'."""
    x = np.empty((2, 3))  # the row, and the second (then the card-blind) type's alpha
    for d in range(rows.shape[0]):
        q, w = seats[d], weights[d]
        for i in rows[d, : num_rows[d]]:
            total = 0.0
            for a in range(3):
                x[1, a] = second_alpha0[d, i, a] + second_counts[d, i, a]
                total += x[1, a]
            for a in range(3):
                x[0, a] = w[0] * informed[q, i, a] + w[1] * (x[1, a] / total)
            if card_blind:
                for a in range(3):
                    x[1, a] = blind_alpha0[d, node_of[d, i], a] + blind[d, node_of[d, i], a]
                scale = max(x[1, 0] + x[1, 1] + x[1, 2], 1.0)  # 0 at the nodes of others
                for a in range(3):
                    x[0, a] += w[2] * (x[1, a] / scale)
            normalise_rows(x[:1], out[q, i : i + 1])
