"""The mixture priors (limit games, the Dirichlet posterior; docs/modeling.md): each opponent is
one of a few types, each a Dirichlet prior, weighed by the exact posterior of its revealed moves
(the moves of hands in which its cards were shown: prior weight x a product of
Dirichlet-multinomial likelihoods; moves with hidden cards are left out of the weights, fitted
under the floor they would count phantom mistakes, but not out of the means).

- The type mixture (``Prior.MIXTURE``, ``TYPES``): *informed*, Dirichlet(``mixture_eta`` x the
  clipped prior mean), a concentration of its own, since a type that "plays like the prior mean"
  must stay near it whatever eta's pull (at 1 it would explain any near-pure player better than
  the uninformed type); *uninformed*, Dirichlet(2); *card-blind*, one Dirichlet(2) per public
  decision node of its seat, shared by every private card (random bots, calling stations).
- The eta mixture (``Prior.ETA_MIXTURE``, ``ETA_TYPES``): the informed prior at eta
  and at ``weak_eta``. The weak type's mean is Dirichlet(its prior + the informed fit's expected
  counts), the hidden cards split as the informed fit splits them (one fit a hand, not two: a
  second fit cost a third of the hand and moved the model by less than the fit's own error,
  ``tests/test_eta_mixture.py``). Only the second and later moves at an information set tell the
  two apart: they favour the weak type when the play scatters away from the mean.
- The typed prior (``Prior.TYPED``, ``TYPED_TYPES``): is this opponent an equilibrium-support
  player or an error-prone one? The informed prior clips the equilibrium to [epsilon,
  1 - epsilon], so a best response exploits phantom mistakes where the data has not reached.
  *Error-prone* (``ERROR_PRONE_PRIOR``) is the informed prior; *in support*, Dirichlet(eta x the
  unclipped prior mean), 0 at the moves the equilibrium never makes, which it never makes (its
  mean leaves the informed fit's expected counts there out). Only the revealed moves at the
  information sets where the equilibrium is pure weigh the types, each of probability 1 or 0 to
  the in-support type (whether it makes it): one revealed mistake rules that type out.

Each type's mean is its own posterior given every hand (the informed and uninformed types' their
CVB0 fits, ``dirichlet.py``; the card-blind type's the exact counts of every move seen). The
opponent's model is the mixture's posterior mean, sum_k w_k x mean_k, kept hand by hand (one
kernel call) on the rows the types tell apart: those of the hands seen (elsewhere the prior mean),
every row with the card-blind type or the typed prior.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.kernel_cache import njit
from oppmodel.modeling.mbbr._limit_kernels import normalise_rows
from oppmodel.modeling.mbbr.config import Prior
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.priors import UNINFORMED_ALPHA
from oppmodel.modeling.mbbr.snapshot import take

TYPES = ("informed", "uninformed", "card-blind")
TYPE_WEIGHTS = (0.5, 0.25, 0.25)  # prior probability of each type, in the order of TYPES
ETA_TYPES = ("eta", "weak_eta")  # the eta mixture's types: the informed prior at each
ETA_WEIGHTS = (0.5, 0.5)
TYPED_TYPES = ("error-prone", "in-support")  # the typed prior's
ERROR_PRONE_PRIOR = 0.05
WEIGHTS = {
    Prior.MIXTURE: TYPE_WEIGHTS,
    Prior.ETA_MIXTURE: ETA_WEIGHTS,
    Prior.TILTED: ETA_WEIGHTS,  # the eta mixture, every row mixed (its prior moves everywhere)
    Prior.TYPED: (ERROR_PRONE_PRIOR, 1.0 - ERROR_PRONE_PRIOR),
}
_NO_MOVES = np.zeros((0, 3), dtype=np.int64)  # ``_observe``'s moves, entries of no hand


class MixturePrior:
    """The type weights, the second and card-blind types' posteriors and the mixture means
    (``profile``) for the opponents of one position (the first type's posterior, informed or
    error-prone, is the model's own; the weak-eta and in-support types share its expected
    counts, the uninformed type has a fit of its own)."""

    def __init__(
        self,
        game: LimitGame,
        informed_alpha0: np.ndarray,
        seats: Sequence[int] | np.ndarray,
        informed: DirichletPosterior,
        prior: Prior,
        second_alpha0: np.ndarray | None = None,
    ) -> None:
        """``informed_alpha0``: (n - 1, num_infosets, 3) the informed type's prior parameters
        (0 at illegal actions), the opponent at offset d in row d - 1; ``seats``: the position of
        the opponent at each offset; ``informed``: the informed fit (at the prior); ``prior``:
        which mixture (module docstring); ``second_alpha0``: the eta mixture's weak type's or
        the typed prior's in-support type's prior parameters, shaped as ``informed_alpha0``
        (the type mixture's second type is uninformed: it ignores them)."""
        self.seats = np.asarray(seats, dtype=np.int64)
        self.informed_alpha0 = np.asarray(informed_alpha0, dtype=np.float64)
        legal = game.legal_mask[self.seats]
        self.card_blind = prior == Prior.MIXTURE
        self._log_prior = np.log(WEIGHTS[prior])
        # the uninformed type's own fit; the other second types have none (the informed fit's)
        self.second: DirichletPosterior | None = None
        if self.card_blind:
            self.second_alpha0 = np.where(legal, UNINFORMED_ALPHA, 0.0)
            profile = informed.profile.copy()
            self.second = DirichletPosterior(self.second_alpha0, profile, self.seats)
        else:
            self.second_alpha0 = np.asarray(second_alpha0, dtype=np.float64)
        # the rows whose revealed moves weigh the types: under the typed prior where the
        # in-support type forbids a legal move (a move there is 1 or 0 to it), else every row
        self.point_mass = prior == Prior.TYPED
        self.weighs = np.ones(self.informed_alpha0.shape[:2], dtype=np.bool_)
        if self.point_mass:
            self.weighs = ((self.second_alpha0 == 0.0) & legal).any(axis=2)
        # the decision node of each opponent's information sets (padding rows: node 0, unread)
        self.node_of = np.zeros(self.informed_alpha0.shape[:2], dtype=np.int64)
        self.blind_alpha0 = np.zeros((len(self.seats), game.num_nodes, 3))
        # a run's state packed in two arrays, copied for each fresh run (``_unpack``): floats =
        # revealed counts, by node, every move by node, log evidence, weights, the means; ints =
        # where those start, then the rows the types may tell apart (module docstring), marked
        # and listed per offset
        d, i, k = (*self.informed_alpha0.shape[:2], len(self._log_prior))
        sizes = [d * i * 3, *[self.blind_alpha0.size] * 2, d * k, d * k]
        floats = np.concatenate([np.zeros(sum(sizes)), informed.profile.ravel()])
        ints = np.zeros(6 + 2 * d * i + d, dtype=np.int64)
        ints[1:6] = np.cumsum(sizes)
        self._packed: tuple[np.ndarray, ...] = (floats, ints)
        marked, rows, num_rows = self._unpack()[6:]
        for d_1, q in enumerate(self.seats):
            size = len(game.infosets(int(q)))
            nodes = np.asarray(game.infoset_node[int(q)][:size], dtype=np.int64)
            self.node_of[d_1, :size] = nodes
            self.blind_alpha0[d_1, nodes] = np.where(legal[d_1, :size], UNINFORMED_ALPHA, 0.0)
            marked[d_1, :size] = prior != Prior.ETA_MIXTURE
            rows[d_1, :size] = np.arange(size)
        num_rows[:] = marked.sum(axis=1)
        self._at_prior: tuple[np.ndarray, ...] = (floats, ints)
        self._start(informed, self.second)
        self._refresh(_NO_MOVES)  # the weights and means at the prior
        self._at_prior = tuple(a.copy() for a in self._packed)

    def _start(self, informed: DirichletPosterior, second: DirichletPosterior | None) -> None:
        """No hand seen, beside the informed fit ``informed`` and the second type's fit (None:
        the informed one's counts): the prior's packed state copied, and the kernels' args."""
        self.informed, self.second = informed, second
        self._packed = tuple(a.copy() for a in self._at_prior)
        floats, ints = self._packed
        self.profile = floats[ints[5] :].reshape(informed.profile.shape)
        self._args = (  # the kernels' (``_observe``)
            *self._packed, self.informed_alpha0, self.second_alpha0, self._log_prior, self.seats,
            self.card_blind, self.blind_alpha0, self.node_of, informed.profile,
            (second or informed).expected, self.weighs, self.point_mass,
        )  # fmt: skip

    def set_alphas(self, informed: np.ndarray, second: np.ndarray) -> None:
        """New prior parameters of the two types, the counts kept (the tilted prior's refit)."""
        self.informed_alpha0, self.second_alpha0 = informed, second
        self._args = (*self._args[:2], informed, second, *self._args[4:])

    def _unpack(self) -> tuple[np.ndarray, ...]:
        """Views of the packed state: revealed counts, by node, blind counts, log evidence,
        weights, the means, marked rows, listed rows, rows listed."""
        (floats, ints), infosets = self._packed, self.informed_alpha0.shape
        profile = (len(self.seats) + 1, *infosets[1:])
        return _unpack(floats, ints, infosets, self.blind_alpha0.shape, profile)

    def _refresh(self, entries: np.ndarray) -> None:
        """The weights from the log evidence, the rows of ``entries`` (a hand's, (m, L)) listed
        and the listed rows' mixture means: ``_observe`` of no move."""
        no_move = (False,) * len(self.seats)
        _observe(_NO_MOVES, no_move, entries, *self._args)

    def at_prior(self, informed: DirichletPosterior) -> MixturePrior:
        """A mixture like this one at the prior, beside the informed fit ``informed`` (at the
        prior): cheaper than building one (change detection opens one every few hands)."""
        fresh = object.__new__(MixturePrior)  # copy.copy's shallow copy, without its protocol
        fresh.__dict__.update(self.__dict__)
        fresh._start(informed, self.second and self.second.at_prior())
        return fresh

    def observe(self, key: object, evidence: Evidence) -> None:
        """Add one hand (already added to the informed fit) to the other types, the revealed
        moves, the weights and the mixture means."""
        if self.second is not None:
            self.second.observe(key, evidence)
        _observe(evidence.rows[0], evidence.revealed, evidence.entries, *self._args)

    def weights(self, d: int) -> np.ndarray:
        """Posterior probability of each type (``TYPES``, ``ETA_TYPES`` or ``TYPED_TYPES``) of
        the opponent at offset ``d`` given its revealed moves."""
        return self._unpack()[4][d - 1].copy()

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed, besides the fits' own state: the revealed moves, the
        card-blind counts and the types' log evidence."""
        views = self._unpack()
        return {
            name: views[j].copy()
            for j, name in ((0, "revealed"), (2, "blind"), (3, "log_evidence"))
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set ``state()``'s arrays in a mixture at the prior whose fits are restored already;
        SnapshotError if they do not fit."""
        arrays = [take(state, name, "f8", a.shape) for name, a in self.state().items()]
        revealed, by_node, blind, log_evidence = self._unpack()[:4]
        revealed[:], blind[:], log_evidence[:] = arrays
        for d_1, nodes in enumerate(self.node_of):  # the revealed moves per node
            np.add.at(by_node[d_1], nodes, revealed[d_1])
        self._refresh(self.informed.state()[1]["entries"].reshape(1, -1))  # the hands' rows

    def nbytes(self) -> int:
        """Bytes of the arrays held, the second type's fit's included (not the informed one's)."""
        second = 0 if self.second is None else self.second.nbytes()
        return sum(a.nbytes for a in (*self._packed, *self._at_prior)) + second


@njit(cache=True)
def _unpack(floats, ints, infosets, nodes, profile):
    """``MixturePrior._unpack``'s views: ``ints`` starts with where each float section starts."""
    c, d, i = ints[:6], infosets[0], infosets[1]
    k = (c[4] - c[3]) // d
    return (
        floats[c[0] : c[1]].reshape(infosets), floats[c[1] : c[2]].reshape(nodes),
        floats[c[2] : c[3]].reshape(nodes), floats[c[3] : c[4]].reshape((d, k)),
        floats[c[4] : c[5]].reshape((d, k)), floats[c[5] :].reshape(profile),
        ints[6 : 6 + d * i].reshape((d, i)), ints[6 + d * i : 6 + 2 * d * i].reshape((d, i)),
        ints[6 + 2 * d * i :],
    )  # fmt: skip


@njit(cache=True)
def _observe(
    moves, revealed, entries, floats, ints, informed_alpha0, second_alpha0, log_prior, seats,
    card_blind, blind_alpha0, node_of, informed, second_counts, weighs, point_mass,
):  # fmt: skip
    """A hand's opponent moves ``moves`` (``Evidence.rows[0]``): each revealed one's predictive
    log probability given the revealed moves before it added to each type's log evidence, then
    counted, at the rows that ``weighs`` (``counts`` per information set, ``by_node`` per
    node); every move counted in ``blind``; the weights; the hand's rows marked (unless all
    are); then ``_mix_rows``."""
    counts, by_node, blind, log_evidence, weights, out, marked, rows, num_rows = _unpack(
        floats, ints, informed_alpha0.shape, blind_alpha0.shape, informed.shape
    )
    for j in range(moves.shape[0]):
        d, i, a = moves[j, 0], moves[j, 1], moves[j, 2]
        node = node_of[d, i]
        if revealed[d] and weighs[d, i]:  # the types' (alpha, revealed counts), as the weights
            types = (informed_alpha0[d, i], counts[d, i], second_alpha0[d, i], counts[d, i],
                    blind_alpha0[d, node], by_node[d, node])  # fmt: skip
            for k in range(log_prior.shape[0]):
                alpha, seen = types[2 * k], types[2 * k + 1]
                p = (alpha[a] + seen[a]) / (alpha.sum() + seen.sum())
                if k == 1 and point_mass:  # the typed prior's in-support type: 1 or 0
                    p = 1.0 if alpha[a] > 0.0 else 0.0
                log_evidence[d, k] += math.log(p) if p > 0.0 else -math.inf
            counts[d, i, a] += 1.0
            by_node[d, node, a] += 1.0
        blind[d, node, a] += 1.0
    _weigh(log_prior, log_evidence, weights)
    _mark(entries, marked, rows, num_rows)
    _mix_rows(rows, num_rows, seats, weights, informed, second_alpha0, second_counts, card_blind,
              blind_alpha0, blind, node_of, out)  # fmt: skip


@njit(cache=True)
def _weigh(log_prior, log_evidence, weights):
    """Each offset's posterior type weights from its log evidence: exp(log prior + log evidence
    - their largest), over their sum (in loops: numpy's temporaries cost more than the sums)."""
    for d in range(log_evidence.shape[0]):
        largest = -math.inf
        for k in range(log_prior.shape[0]):
            largest = max(largest, log_prior[k] + log_evidence[d, k])
        total = 0.0
        for k in range(log_prior.shape[0]):
            weights[d, k] = math.exp(log_prior[k] + log_evidence[d, k] - largest)
            total += weights[d, k]
        for k in range(log_prior.shape[0]):
            weights[d, k] /= total


@njit(cache=True)
def _mark(entries, marked, rows, num_rows):
    """Mark and list the rows of ``entries`` (flat indices into (n - 1, num_infosets, 3))."""
    num_infosets = marked.shape[1]
    for e in entries.ravel():
        d, i = divmod(e // 3, num_infosets)
        if not marked[d, i]:
            marked[d, i] = 1
            rows[d, num_rows[d]] = i
            num_rows[d] += 1


@njit(cache=True, inline="always")
def _mix_rows(
    rows, num_rows, seats, weights, informed, second_alpha0, second_counts, card_blind,
    blind_alpha0, blind, node_of, out,
):  # fmt: skip
    """out's listed rows: the types' means weighed, each row divided by its own sum
    (``normalise_rows``); the second type's mean is its alpha0 + expected counts (none where its
    alpha0 is 0: a move it never makes), normalised as its fit normalises them; the card-blind
    type's is its node's counts'."""
    x = np.empty((2, 3))  # the row, and the second (then the card-blind) type's alpha
    for d in range(rows.shape[0]):
        q, w = seats[d], weights[d]
        for i in rows[d, : num_rows[d]]:
            total = 0.0
            for a in range(3):
                x[1, a] = second_alpha0[d, i, a]
                if x[1, a] > 0.0:
                    x[1, a] += second_counts[d, i, a]
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
