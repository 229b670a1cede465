"""The paper's posterior: k sampled strategies per opponent, importance-weighted (Ganzfried, Wang &
Chiswick 2024, Algorithms 3-5).

Opponents are modelled per (opponent, position). With ACPC rotation the opponent sitting at
position (p + d) mod n while we sit at p is always the same player (seat offset d), so one joint
posterior per our position p, over the k^(n-1) combinations of the opponents' sampled strategies,
holds every model: 3 tables of k x k weights in 3-player Kuhn.

- CreateSamples (Alg 3, ``priors.create_samples``): per (p, d) and information set, k strategies
  drawn from the prior.
- Update (Alg 4): after a hand played at position p, multiply each combination's weight by the
  probability of exactly what we saw: the opponents' actions, summed over every assignment of the
  cards we did not see. Our own action probabilities are the same for every combination and
  cancel. The likelihood factorises as z(s) = sum_c prod_j f_j(s_j, c_j); in 3-player Kuhn it is a
  k x k matrix of rank <= 3, so the update is one fused pass over the table (numba) that also
  yields the marginals. Weights stay normalised in linear space and are floored at 1e-300 of the
  total, so a combination is never lost to underflow (the floor is far below what any
  double-precision sum of weights resolves). A hand that no combination explains at double
  precision (its probability under the posterior below ``MIN_EVIDENCE``, only reachable at the
  edges of the prior's range) is counted but leaves the posterior as it was: conditioning on it
  would leave no weight to normalise.
- Models (Alg 5): each opponent's posterior-mean strategy, sum_s p(s) tau_{s_j}.
- Responses: ``mean`` is the paper's best response to the models. ``bayes`` is the exact Bayesian
  best response to the joint posterior, maximising sum_s p(s) EU(sigma, tau_s): expected utility is
  multilinear, so it needs only the posterior expectation of the product of the opponents' reach
  probabilities per combination of their (card, own action sequence), a few matrix products with
  the table, and then one backward induction.

The samples collapse onto one once it explains the play best (effective sample size 1) and the
model stops learning; ``dirichlet.py`` is the posterior they approach as k grows.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr import _samples_kernels as kernels
from oppmodel.modeling.mbbr.base import ModelBase
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Response
from oppmodel.modeling.mbbr.evidence import Moves, path_of
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.priors import create_samples, mixed_distributions
from oppmodel.modeling.mbbr.snapshot import take
from oppmodel.modeling.observation import HandObservation

MAX_JOINT_SAMPLES = 1 << 22  # k^(n-1) per table: 2048 x 2048 in 3-player Kuhn
WEIGHT_FLOOR = 1e-300
MIN_EVIDENCE = 1e-150  # a hand less probable than this under the posterior leaves it unchanged


class SampleModel(ModelBase):
    """MBBR with the paper's importance-weighted sample posterior (``Posterior.SAMPLES``)."""

    POSTERIOR = Posterior.SAMPLES

    def _build_posterior(self) -> None:
        """Draw the samples; every table starts uniform."""
        game, config = self.game, self.config
        n, k = game.num_players, config.k
        self.tau = create_samples(
            game,
            self.prior_mean,
            k=k,
            epsilon=config.epsilon,
            eta=config.eta,
            prior=config.prior,
            rng=np.random.default_rng(config.seed),
        )
        shape = (k,) * (n - 1)
        self._weights = [np.full(shape, 1.0 / k ** (n - 1)) for _ in range(n)]
        self._spare = np.empty(shape)  # the next weights of a 3-player update are written here
        self._scale = [1.0] * n  # 1 / total of the stored (unnormalised) weights
        self._marginals = [[np.full(k, 1.0 / k) for _ in range(n - 1)] for _ in range(n)]
        self._ess = [float(k ** (n - 1))] * n
        self._sequences = _own_sequences(game)
        self._reach = [
            [self._sequence_reach(p, d) for d in range(1, n)] for p in range(n)
        ]  # [p][d-1]: (k, num_cards * num_sequences)
        self._bayes_layout = [self._layout(p) for p in range(n)]
        self._groupings: dict[tuple, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._tau_flat = self.tau.reshape(n, n - 1, k, -1)

    @classmethod
    def _refuse_oversized(cls, game: KuhnGame, config: MBBRConfig) -> None:
        n = game.num_players
        if config.k ** (n - 1) > MAX_JOINT_SAMPLES:
            raise ResourceExhaustedError(
                f"k: {config.k}^{n - 1} joint samples exceed the limit of {MAX_JOINT_SAMPLES}"
            )

    # --- Alg 4: the update ---------------------------------------------------------------------

    def _update(self, p: int, moves: Moves, obs: HandObservation) -> None:
        if self.game.num_players == 3:
            self._update_3p(p, moves, obs)
        else:
            self._update_generic(p, moves, obs)

    def _update_3p(self, p: int, moves: Moves, obs: HandObservation) -> None:
        # z[s1, s2] = sum over assignments (x1, x2) of f1[s1, x1] f2[s2, x2], grouped by x2.
        key = (p, obs.cards)
        if key not in self._groupings:
            assignments = self._evidence.assignments(obs)
            groups, group_of = np.unique(assignments[:, 1], return_inverse=True)
            self._groupings[key] = (assignments[:, 0].copy(), group_of.astype(np.int64), groups)
        first_cards, group_of, groups = self._groupings[key]
        k = self.config.k
        a, bt = np.empty((k, len(groups))), np.empty((len(groups), k))
        (nodes1, actions1), (nodes2, actions2) = moves
        kernels.likelihood_factors_3p(
            self.tau[p, 0], nodes1, actions1, self.tau[p, 1], nodes2, actions2,
            self.game.infoset_of, first_cards, group_of, groups, a, bt,
        )  # fmt: skip
        row, col = np.empty(k), np.empty(k)
        spare = self._spare
        total, sumsq = kernels.update_joint2(
            self._weights[p], spare, a, bt, self._scale[p], WEIGHT_FLOOR, row, col
        )
        if _explained(total):
            self._spare = self._weights[p]
            self._weights[p] = spare
            self._store(p, total, sumsq, [row, col])

    def _update_generic(self, p: int, moves: Moves, obs: HandObservation) -> None:
        per_card = []
        for d, (nodes, actions) in enumerate(moves, start=1):
            out = np.empty((self.config.k, self.game.num_cards))
            kernels.card_likelihoods(self.tau[p, d - 1], nodes, actions, self.game.infoset_of, out)
            per_card.append(out)
        assignments = self._evidence.assignments(obs)
        z = np.zeros_like(self._weights[p])
        for cards in assignments:
            term = per_card[0][:, cards[0]]
            for j in range(1, len(per_card)):
                term = np.multiply.outer(term, per_card[j][:, cards[j]])
            z += term
        w = np.maximum(self._weights[p] * self._scale[p], WEIGHT_FLOOR) * z
        total = float(w.sum())
        if _explained(total):
            self._weights[p] = w
            axes = range(w.ndim)
            sums = [w.sum(axis=tuple(a for a in axes if a != j)) for j in axes]
            self._store(p, total, float(np.square(w).sum()), sums)

    def _store(self, p: int, total: float, sumsq: float, sums: list[np.ndarray]) -> None:
        self._scale[p] = 1.0 / total
        self._ess[p] = total * total / sumsq
        self._marginals[p] = [s / total for s in sums]

    # --- the sample weights ----------------------------------------------------------------------

    def posterior(self, our_position: int) -> np.ndarray:
        """The normalised joint posterior of the table for our position (a copy)."""
        self.game.check_position(our_position, "our_position")
        w = self._weights[our_position]
        return w / w.sum()

    def effective_sample_size(self, our_position: int) -> float:
        """1 / sum p(s)^2 of the joint posterior of the table for our position."""
        self.game.check_position(our_position, "our_position")
        return self._ess[our_position]

    # --- Alg 5 and the responses -----------------------------------------------------------------

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        """The marginal-weighted mean of the opponent's samples, and the marginal's ESS."""
        marginal = self._marginals[p][d - 1]
        model = mixed_distributions((marginal @ self._tau_flat[p, d - 1]).reshape(-1, 2))
        return model, float(1.0 / np.dot(marginal, marginal))

    def _leaf_weights(self, p: int, kind: Response) -> np.ndarray:
        if kind == Response.MEAN:
            return self._mean_leaf_weights(p)
        game, n = self.game, self.game.num_players
        reach = self._reach[p]
        if n == 3:  # the hot case: R1^T W R2, two BLAS products
            expected = reach[0].T @ (self._weights[p] @ reach[1])
        else:  # contract the last opponent's axis first, restoring the axis order each time
            expected = self._weights[p]
            for d in range(n - 1, 0, -1):
                expected = np.tensordot(expected, reach[d - 1], axes=([d - 1], [0]))
                expected = np.moveaxis(expected, -1, d - 1)
        expected = np.ascontiguousarray(expected).ravel() * self._scale[p]
        return kernels.bayes_leaf_weights(
            expected, *self._bayes_layout[p], p, game.num_cards, game.deals, game.payoffs
        )

    def _layout(self, p: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(strides, sequence counts, sequence of each terminal, positions) of p's opponents."""
        n = self.game.num_players
        opponents = np.array([(p + d) % n for d in range(1, n)], dtype=np.int64)
        sizes = np.array([self._sequences[q][1] for q in opponents], dtype=np.int64)
        sequences = np.stack([self._sequences[q][0] for q in opponents])
        dims = self.game.num_cards * sizes
        strides = np.array([int(np.prod(dims[j + 1 :])) for j in range(n - 1)], dtype=np.int64)
        return strides, sizes, sequences, opponents

    def _sequence_reach(self, p: int, d: int) -> np.ndarray:
        """(k, num_cards * S) reach probability of each sample, per (card, own sequence)."""
        game = self.game
        q = (p + d) % game.num_players
        seq_of_terminal, num_seq = self._sequences[q]
        tau = self.tau[p, d - 1]
        reach = np.ones((tau.shape[0], game.num_cards, num_seq))
        done = np.zeros(num_seq, dtype=bool)
        for t in range(game.num_terminals):
            s = seq_of_terminal[t]
            if done[s]:
                continue
            done[s] = True
            for node, action in path_of(game, t):
                if game.node_player[node] == q:
                    reach[:, :, s] *= tau[:, game.infoset_of[node], action]
        return reach.reshape(tau.shape[0], -1)

    # --- snapshots and memory --------------------------------------------------------------------

    def _state(self) -> dict[str, np.ndarray]:
        arrays = {f"weights.{p}": w for p, w in enumerate(self._weights)}
        arrays["scale"] = np.array(self._scale)
        arrays["ess"] = np.array(self._ess)
        arrays["marginals"] = np.array(self._marginals)
        return arrays

    def _restore_state(self, arrays: dict[str, np.ndarray]) -> None:
        n, k = self.game.num_players, self.config.k
        weights = [take(arrays, f"weights.{p}", "f8", (k,) * (n - 1)) for p in range(n)]
        scale = take(arrays, "scale", "f8", (n,))
        ess = take(arrays, "ess", "f8", (n,))
        marginals = take(arrays, "marginals", "f8", (n, n - 1, k))
        self._weights = weights
        self._scale = [float(x) for x in scale]
        self._ess = [float(x) for x in ess]
        self._marginals = [list(row) for row in marginals]

    def _posterior_nbytes(self) -> int:
        arrays = [self.tau, self._spare, *self._weights]
        arrays += [a for row in self._reach for a in row]
        arrays += [a for row in self._marginals for a in row]
        arrays += [a for layout in self._bayes_layout for a in layout]
        arrays += [a for grouping in self._groupings.values() for a in grouping]
        return array_bytes(arrays) + len(self._groupings) * ENTRY_BYTES


def _explained(total: float) -> bool:
    """Whether a hand's evidence (its probability under the posterior) can be conditioned on."""
    return math.isfinite(total) and total >= MIN_EVIDENCE


@functools.cache  # per game: the tree never changes (kuhn_game returns one object per size)
def _own_sequences(game: KuhnGame) -> list[tuple[np.ndarray, int]]:
    """Per position: (sequence id of each terminal, number of distinct own action sequences)."""
    out = []
    for q in range(game.num_players):
        ids: dict[tuple, int] = {}
        seq = np.empty(game.num_terminals, dtype=np.int64)
        for t in range(game.num_terminals):
            key = tuple((nd, a) for nd, a in path_of(game, t) if game.node_player[nd] == q)
            seq[t] = ids.setdefault(key, len(ids))
        seq.setflags(write=False)  # shared by every model of this game
        out.append((seq, len(ids)))
    return out
