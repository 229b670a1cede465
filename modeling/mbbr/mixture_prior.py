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
mean, sum_k w_k x mean_k.

The eta mixture (``Prior.ETA_MIXTURE``) is the same computation over two types:
the informed prior at eta and at ``MBBRConfig.weak_eta``, prior weights ``ETA_WEIGHTS``. It lets
the revealed moves choose the prior's strength per opponent: the first move seen at an
information set has the prior mean's probability under either type, so only the second and later
moves at the same information set tell them apart, and they favour the weak concentration when
the opponent's play scatters away from the mean, the strong one when it stays near it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.priors import UNINFORMED_ALPHA, mixed_distributions
from oppmodel.modeling.mbbr.snapshot import take

TYPES = ("informed", "uninformed", "card-blind")
TYPE_WEIGHTS = (0.5, 0.25, 0.25)  # prior probability of each type, in the order of TYPES
ETA_TYPES = ("eta", "weak_eta")  # the eta mixture's types: the informed prior at each
ETA_WEIGHTS = (0.5, 0.5)


class MixturePrior:
    """The type weights, the second (uninformed or weak-eta) and card-blind types' posteriors and
    the mixture means for the opponents of one position (the first type's posterior, informed,
    is the model's own)."""

    def __init__(
        self,
        game: LimitGame,
        informed_alpha0: np.ndarray,
        seats: Sequence[int] | np.ndarray,
        default_strategy: np.ndarray,
        weak_alpha0: np.ndarray | None = None,
    ) -> None:
        """``informed_alpha0``: (n - 1, num_infosets, 3) the informed type's prior parameters
        (0 at illegal actions), the opponent at offset d in row d - 1; ``seats``: the position of
        the opponent at each offset; ``default_strategy``: a profile to copy for the second
        type's fit's own rows (only its opponents' rows are written); ``weak_alpha0``: None for
        the type mixture (``TYPES``), else the eta mixture's (``ETA_TYPES``) weak type's prior
        parameters, shaped as ``informed_alpha0``."""
        self.game = game
        self.seats = np.asarray(seats, dtype=np.int64)
        self.informed_alpha0 = np.asarray(informed_alpha0, dtype=np.float64)
        legal = game.legal_mask[self.seats]
        self.card_blind = weak_alpha0 is None
        self.prior_weights = TYPE_WEIGHTS if self.card_blind else ETA_WEIGHTS
        self.second_alpha0 = (
            np.where(legal, UNINFORMED_ALPHA, 0.0)
            if weak_alpha0 is None
            else np.asarray(weak_alpha0, dtype=np.float64)
        )
        self.second = DirichletPosterior(self.second_alpha0, default_strategy.copy(), self.seats)
        sizes = [len(game.infosets(int(q))) for q in self.seats]
        self.sizes = np.array(sizes, dtype=np.int64)
        # the decision node of each opponent's information sets (padding rows: node 0, unread)
        self.node_of = np.zeros(self.informed_alpha0.shape[:2], dtype=np.int64)
        self.blind_alpha0 = np.zeros((len(self.seats), game.num_nodes, 3))
        for d_1, (q, size) in enumerate(zip(self.seats, sizes, strict=True)):
            nodes = np.asarray(game.infoset_node[int(q)][:size], dtype=np.int64)
            self.node_of[d_1, :size] = nodes
            self.blind_alpha0[d_1, nodes] = np.where(legal[d_1, :size], UNINFORMED_ALPHA, 0.0)
        self.blind = np.zeros_like(self.blind_alpha0)  # every move seen, per node
        self.revealed = np.zeros_like(self.informed_alpha0)  # moves seen with the mover's cards
        # log marginal likelihood of the revealed moves under each type, by the chain rule
        self.log_evidence = np.zeros((len(self.seats), len(self.prior_weights)))
        self.version = 0
        self._weights: list[np.ndarray | None] = [None] * len(self.seats)

    def observe(self, key: object, evidence: Evidence, evidence_of: Callable) -> None:
        """Add one hand (already added to the informed fit) to the other types and to the
        revealed moves."""
        self.second.observe(key, evidence_of)
        for d_1, i, a in evidence.rows[0]:
            node = self.node_of[d_1, i]
            if evidence.revealed[d_1]:
                self._add_revealed(d_1, i, node, a)
            self.blind[d_1, node, a] += 1.0
        self._weights = [None] * len(self.seats)
        self.version += 1

    def _add_revealed(self, d_1: int, i: int, node: int, a: int) -> None:
        """Count a revealed move, adding its predictive log probability given the revealed
        moves before it to each type's log evidence."""
        by_node = self._revealed_by_node(d_1, node)
        rows = (
            (self.informed_alpha0[d_1, i], self.revealed[d_1, i]),
            (self.second_alpha0[d_1, i], self.revealed[d_1, i]),
            (self.blind_alpha0[d_1, node], by_node),
        )
        for k, (alpha, counts) in enumerate(rows[: len(self.prior_weights)]):
            self.log_evidence[d_1, k] += np.log(
                (alpha[a] + counts[a]) / (alpha.sum() + counts.sum())
            )
        self.revealed[d_1, i, a] += 1.0

    def _revealed_by_node(self, d_1: int, node: int) -> np.ndarray:
        """(3,) the revealed moves at ``node``, summed over the private cards."""
        return self.revealed[d_1][self.node_of[d_1] == node].sum(axis=0)

    def weights(self, d: int) -> np.ndarray:
        """Posterior probability of each type (``TYPES``, or ``ETA_TYPES``) of the opponent at
        offset ``d`` given its revealed moves."""
        cached = self._weights[d - 1]
        if cached is None:
            cached = self._weights[d - 1] = self._posterior_weights(d - 1)
        return cached

    def _posterior_weights(self, d_1: int) -> np.ndarray:
        log_posterior = np.log(self.prior_weights) + self.log_evidence[d_1]
        weights = np.exp(log_posterior - log_posterior.max())
        return weights / weights.sum()

    def mean(self, d: int, informed: np.ndarray) -> np.ndarray:
        """The mixture's posterior mean (num_infosets, 3) of the opponent at offset ``d``, given
        the informed type's posterior mean ``informed``."""
        w = self.weights(d)
        size = self.sizes[d - 1]
        out = w[0] * informed + w[1] * self.second.mean(d)
        if self.card_blind:
            blind = self.blind_alpha0[d - 1] + self.blind[d - 1]
            blind /= np.maximum(blind.sum(axis=1, keepdims=True), 1.0)  # nodes of others: 0
            out[:size] += w[2] * blind[self.node_of[d - 1, :size]]
        out[size:] = informed[size:]
        return mixed_distributions(out)

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed, besides the second type's fit's own state: the
        revealed moves, the card-blind counts and the types' log evidence."""
        return {
            "revealed": self.revealed.copy(),
            "blind": self.blind.copy(),
            "log_evidence": self.log_evidence.copy(),
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set ``state()``'s arrays; SnapshotError if they do not fit."""
        revealed = take(state, "revealed", "f8", self.revealed.shape)
        blind = take(state, "blind", "f8", self.blind.shape)
        log_evidence = take(state, "log_evidence", "f8", self.log_evidence.shape)
        self.revealed, self.blind, self.log_evidence = revealed, blind, log_evidence
        self._weights = [None] * len(self.seats)
        self.version += 1

    def nbytes(self) -> int:
        """Bytes of the arrays held, the second type's fit's included."""
        arrays = (
            self.informed_alpha0,
            self.second_alpha0,
            self.node_of,
            self.blind_alpha0,
            self.blind,
            self.revealed,
        )
        return sum(a.nbytes for a in arrays) + self.second.nbytes()
