"""The paper's sample posterior (Ganzfried, Wang & Chiswick 2024, Alg 3-5): k sampled strategies per
(our position, opponent), one joint table of k^(n-1) weights per our position, Bayes-updated with
the probability of what was seen, hidden cards summed out: z(s) = sum over assignments c of prod_j
f_j(s_j, c), f_j the probability of opponent j's moves under its sample s_j and the cards c gives
it. Weights are floored at ``WEIGHT_FLOOR`` of the total (never lost to underflow); a hand less
probable than ``MIN_EVIDENCE`` (only at the edges of the prior's range) leaves the table as it was.
"""

from __future__ import annotations

import math
import string

import numpy as np

from oppmodel.modeling.mbbr import _limit_kernels as kernels
from oppmodel.modeling.mbbr.evidence import Evidence
from oppmodel.modeling.mbbr.snapshot import take

MAX_JOINT_SAMPLES = 1 << 22  # k^(n-1) per table: 2048 x 2048 in 3-player Kuhn
WEIGHT_FLOOR = 1e-300
MIN_EVIDENCE = 1e-150  # a hand less probable than this under the posterior leaves it unchanged


class SamplePosterior:
    """Importance weights over the joint samples of the opponents of one position."""

    def __init__(self, tau: np.ndarray) -> None:
        """``tau``: (n - 1, k, num_infosets, 3) sampled strategies, opponent d - 1 at offset d."""
        self.tau = tau
        m, k = tau.shape[0], tau.shape[1]
        self.weights = np.full((k,) * m, 1.0 / k**m)  # unnormalised; ``scale`` = 1 / total
        self.scale = 1.0
        self.marginals = np.full((m, k), 1.0 / k)  # row d - 1: the opponent at offset d
        self.version = 0
        self._spare = np.empty_like(self.weights)  # where a two-opponent update writes
        letters = string.ascii_letters
        # z = sum_r prod_j F_j[s_j, r]: "ar,br->ab" for two opponents
        self._einsum = ",".join(f"{letters[j]}z" for j in range(m)) + "->" + letters[:m]

    def observe(self, evidence: Evidence) -> bool:
        """Multiply every combination's weight by the likelihood of ``evidence``; returns whether
        the hand was explained (else the table is left as it was). Two opponents: one fused
        kernel pass (``observe_pair``), z = a @ bt of low rank, that also gives the marginals."""
        m, k = self.tau.shape[0], self.tau.shape[1]
        marginals = np.empty((m, k))
        if m == 2:
            total = kernels.observe_pair(
                self.tau, evidence.rows, self.weights, self._spare, self.scale, WEIGHT_FLOOR,
                marginals,
            )  # fmt: skip
            weights = self._spare
        else:
            factors = [np.empty((k, len(evidence.rows))) for _ in range(m)]
            for d, out in enumerate(factors, start=1):
                kernels.sample_factors(self.tau[d - 1], evidence.rows, d, out)
            z = np.einsum(self._einsum, *factors)
            weights = np.maximum(self.weights * self.scale, WEIGHT_FLOOR) * z
            total = float(weights.sum())
        if not (math.isfinite(total) and total >= MIN_EVIDENCE):
            return False
        if m != 2:
            for j in range(m):
                marginals[j] = weights.sum(axis=tuple(a for a in range(m) if a != j)) / total
        self._spare, self.weights = self.weights, weights
        self.scale, self.marginals = 1.0 / total, marginals
        self.version += 1
        return True

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed (``modeling/mbbr/snapshot.py``): ``weights`` (the
        unnormalised joint table), ``scale`` (0-d) and ``marginals`` (n - 1, k)."""
        return {
            "weights": self.weights.copy(),
            "scale": np.array(self.scale),
            "marginals": self.marginals.copy(),
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set what ``state()`` of a posterior with the same samples returned; SnapshotError,
        with nothing changed, if the arrays do not fit."""
        m, k = self.tau.shape[0], self.tau.shape[1]
        weights = take(state, "weights", "f8", (k,) * m)
        scale = float(take(state, "scale", "f8", ()))
        marginals = take(state, "marginals", "f8", (m, k))
        self.weights, self.scale, self.marginals = weights, scale, marginals
        self.version += 1

    def posterior(self) -> np.ndarray:
        """The normalised joint table."""
        return self.weights / self.weights.sum()

    def write_means(self, profile: np.ndarray, seats: np.ndarray) -> None:
        """Every opponent's posterior-mean strategy (Alg 5) into its row of ``profile``."""
        kernels.sample_means(self.marginals, self.tau, seats, profile)
