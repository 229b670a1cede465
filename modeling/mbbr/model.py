"""Multiplayer Bayesian best response (MBBR): paper 003, Algorithms 2-5, per algorithms.md §1.

Opponents are modelled per (opponent, position). With ACPC rotation the opponent sitting at
position (p + d) mod n while we sit at p is always the same player (seat offset d), so one joint
posterior per our position p, over the k^(n-1) combinations of the opponents' sampled strategies,
holds every model: 3 tables of k x k weights in 3-player Kuhn.

- CreateSamples (Alg 3): per (p, d) and information set, clip the prior mean to [eps, 1 - eps],
  renormalise, draw k strategies from Dirichlet(eta * mean). The uninformed prior is Dirichlet(2).
- Update (Alg 4): after a hand played at position p, multiply each combination's weight by the
  probability of exactly what we saw: the opponents' actions, summed over every assignment of the
  cards we did not see (folded cards, and all cards when everyone else folded, stay hidden). Our own
  action probabilities are the same for every combination and cancel. The likelihood factorises as
  z(s) = sum_c prod_j f_j(s_j, c_j); in 3-player Kuhn it is a k x k matrix of rank <= 3, so the
  update is one fused pass over the table (numba) that also yields the marginals. Weights stay
  normalised in linear space and are floored at 1e-300 of the total, so a combination is never
  lost to underflow (the floor is far below what any double-precision sum of weights resolves).
  A hand that no combination explains at double precision (its probability under the posterior
  below ``MIN_EVIDENCE``, only reachable at the edges of the prior's range) is counted but leaves
  the posterior as it was: conditioning on it would leave no weight to normalise.
- Models (Alg 5): each opponent's posterior-mean strategy, sum_s p(s) tau_{s_j}.
- Responses: ``mean`` is the paper's best response to the models. ``bayes`` is the exact Bayesian
  best response to the joint posterior, maximising sum_s p(s) EU(sigma, tau_s): expected utility is
  multilinear, so it needs only the posterior expectation of the product of the opponents' reach
  probabilities per combination of their (card, own action sequence), a few matrix products with
  the table, and then one backward induction.
- The agent plays the default strategy for the first H hands, then the configured response.
- ``posterior="dirichlet"``, the default, replaces the k samples by one Dirichlet per opponent
  information set, fitted by variational Bayes to the same prior and likelihood
  (``oppmodel.modeling.mbbr.dirichlet``). The sample posterior collapses onto one sample and stops
  learning; this one does not, and it is what the k samples approach as k grows. Its response is
  the best response to the posterior mean, which under it is also the Bayesian response; it has no
  sample weights to report. ``posterior="samples"`` is the paper's method as published.
- ``prior="typed"`` (Dirichlet posterior only): the informed prior's epsilon floor reads as 5%
  mistakes at every information set the data has not reached, and the response pays to exploit
  them, a steady loss against equilibrium players. The typed prior makes the floor a hypothesis:
  each opponent is either an in-support player (never a move the equilibrium never makes) or the
  informed prior's error-prone one, weighed by what its revealed cards show
  (``oppmodel.modeling.mbbr.typed_prior``).

Everything is deterministic in ``seed``: the same config and the same observations give
bit-identical posteriors, which the service relies on to rebuild sessions by replay.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import math
from dataclasses import dataclass

import numpy as np

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from oppmodel.modeling.evaluation.kuhn import best_response_to_weights, leaf_weights
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr import _samples_kernels as kernels
from oppmodel.modeling.mbbr import snapshot as snapshot_format
from oppmodel.modeling.mbbr.dirichlet import DirichletPosterior
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.typed_prior import TypedPrior
from oppmodel.modeling.observation import HandObservation, validate_observation
from oppmodel.modeling.strategy import uniform_profile, validate_profile

PRIORS = ("informed", "uninformed", "typed")
RESPONSES = ("mean", "bayes")
POSTERIORS = ("dirichlet", "samples")  # the default first
MAX_JOINT_SAMPLES = 1 << 22  # k^(n-1) per table: 2048 x 2048 in 3-player Kuhn
WEIGHT_FLOOR = 1e-300
MIN_EVIDENCE = 1e-150  # a hand less probable than this under the posterior leaves it unchanged
EPSILON_RANGE = (1e-6, 0.5)  # [low, high)
ETA_RANGE = (1e-3, 1e6)  # [low, high]
MAX_CACHED_OBSERVATIONS = 4096  # distinct valid observations remembered (3p Kuhn has < 2000)
UNINFORMED_ALPHA = 2.0


@dataclass(frozen=True)
class MBBRConfig:
    """MBBR's parameters (paper 003 uses epsilon 0.05, k 10, H 100, eta 4 and the sample
    posterior; the default posterior here is the Dirichlet one, ``posterior="samples"`` is the
    paper's)."""

    epsilon: float = 0.05
    k: int = 10
    hands_default: int = 100  # H: hands of default play before exploiting
    eta: float = 4.0
    prior: str = "informed"
    response: str = "mean"
    seed: int = 0
    # "dirichlet" (the default): one Dirichlet per information set, fitted by variational Bayes;
    # "samples": the paper's k importance-weighted samples, which collapse onto one and stop
    # learning (paper 003 as published; k is used only by it)
    posterior: str = "dirichlet"

    def validate(self) -> None:
        """Raise InvalidArgumentError naming the first bad field."""
        low, high = EPSILON_RANGE
        if not (isinstance(self.epsilon, (int, float)) and low <= self.epsilon < high):
            raise InvalidArgumentError(
                "epsilon", f"must be in [{low:g}, {high:g}), got {self.epsilon!r}"
            )
        if not isinstance(self.k, int) or isinstance(self.k, bool) or self.k < 1:
            raise InvalidArgumentError("k", f"must be a positive integer, got {self.k!r}")
        if not isinstance(self.hands_default, int) or self.hands_default < 0:
            raise InvalidArgumentError(
                "hands_default", f"must be a non-negative integer, got {self.hands_default!r}"
            )
        low, high = ETA_RANGE
        if not (isinstance(self.eta, (int, float)) and low <= self.eta <= high):
            raise InvalidArgumentError("eta", f"must be in [{low:g}, {high:g}], got {self.eta!r}")
        if self.prior not in PRIORS:
            raise InvalidArgumentError("prior", f"must be one of {PRIORS}, got {self.prior!r}")
        if self.response not in RESPONSES:
            raise InvalidArgumentError(
                "response", f"must be one of {RESPONSES}, got {self.response!r}"
            )
        if self.posterior not in POSTERIORS:
            raise InvalidArgumentError(
                "posterior", f"must be one of {POSTERIORS}, got {self.posterior!r}"
            )
        if self.prior == "typed" and self.posterior != "dirichlet":
            raise InvalidArgumentError(
                "prior", "'typed' needs the 'dirichlet' posterior (it has no sample form)"
            )
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**63:
            raise InvalidArgumentError(
                "seed", f"must be an integer in [0, 2^63), got {self.seed!r}"
            )


def _explained(total: float) -> bool:
    """Whether a hand's evidence (its probability under the posterior) can be conditioned on."""
    return math.isfinite(total) and total >= MIN_EVIDENCE


def create_samples(
    game: KuhnGame,
    prior_mean: np.ndarray,
    *,
    k: int,
    epsilon: float,
    eta: float,
    prior: str,
    rng: np.random.Generator,
) -> np.ndarray:
    """CreateSamples (Alg 3): (n, n-1, k, num_infosets, 2) sampled strategies.

    Entry [p, d - 1] holds the samples of the opponent at position (p + d) mod n while we sit at p.
    """
    n, num_infosets = game.num_players, game.num_infosets
    alpha = prior_alpha(game, prior_mean, epsilon=epsilon, eta=eta, prior=prior)
    tau = np.full((n, n - 1, k, num_infosets, 2), 0.5)
    for p in range(n):
        for d in range(1, n):
            rows = game.infosets((p + d) % n)
            draws = rng.gamma(alpha[(p + d) % n, rows], size=(k, len(rows), 2))
            sums = draws.sum(axis=2, keepdims=True)
            lost = np.flatnonzero(sums == 0.0)  # both draws of a row underflowed
            if len(lost):
                sums[sums == 0.0] = 1.0
                draws.reshape(-1, 2)[lost] = _log_space_draws(alpha[(p + d) % n, rows], lost, rng)
            tau[p, d - 1][:, rows] = draws / sums
    return tau


def _log_space_draws(alpha: np.ndarray, lost: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Dirichlet draws (normalised) of the rows ``lost`` (flat indices into (k, rows)) whose
    Gamma draws both underflowed, with tiny ``alpha``: Gamma(a) = Gamma(a + 1) U^(1/a) in logs."""
    a = alpha[lost % len(alpha)]
    logs = np.log(rng.gamma(a + 1.0)) + np.log(rng.random(a.shape)) / a
    draws = np.exp(logs - logs.max(axis=1, keepdims=True))
    return draws / draws.sum(axis=1, keepdims=True)


def prior_alpha(
    game: KuhnGame, prior_mean: np.ndarray, *, epsilon: float, eta: float, prior: str
) -> np.ndarray:
    """(n, num_infosets, 2) Dirichlet parameters of each position's strategy under the prior.

    Informed (and typed, whose error-prone type this is): eta times the prior mean clipped to
    [epsilon, 1 - epsilon] and renormalised; uninformed: Dirichlet(2) everywhere. Padding rows get
    Dirichlet(1, 1); nothing reads them.
    """
    alpha = np.ones((game.num_players, game.num_infosets, 2))
    for q in range(game.num_players):
        rows = game.infosets(q)
        if prior == "uninformed":
            alpha[q, rows] = UNINFORMED_ALPHA
        else:
            mean = np.clip(prior_mean[q, rows], epsilon, 1.0 - epsilon)
            alpha[q, rows] = eta * mean / mean.sum(axis=1, keepdims=True)
    return alpha


class MBBRModel:
    """The MBBR posteriors of one agent over a repeated n-player Kuhn match."""

    def __init__(
        self,
        game: KuhnGame,
        config: MBBRConfig | None = None,
        *,
        default_strategy: np.ndarray | None = None,
        prior_mean: np.ndarray | None = None,
    ) -> None:
        config = config or MBBRConfig()
        config.validate()
        n = game.num_players
        if config.posterior == "samples" and config.k ** (n - 1) > MAX_JOINT_SAMPLES:
            raise ResourceExhaustedError(
                f"k: {config.k}^{n - 1} joint samples exceed the limit of {MAX_JOINT_SAMPLES}"
            )
        fallback = robust_profile("N1") if n == 3 else uniform_profile(game)
        self.default_strategy = (
            fallback if default_strategy is None
            else validate_profile(game, default_strategy, "default_strategy")
        )  # fmt: skip
        fallback = robust_profile("N3") if n == 3 else uniform_profile(game)
        self.prior_mean = (
            fallback if prior_mean is None else validate_profile(game, prior_mean, "prior_mean")
        )
        self.game = game
        self.config = config
        self.hands_observed = 0
        self._responses: dict[tuple[int, str], tuple[np.ndarray, float]] = {}
        self._moves: dict[tuple[int, str], list[tuple[np.ndarray, np.ndarray]]] = {}
        self._valid_observations: set[tuple] = set()
        if config.posterior == "dirichlet":
            alpha = prior_alpha(
                game, self.prior_mean, epsilon=config.epsilon, eta=config.eta, prior=config.prior
            )
            self._dirichlet = [
                DirichletPosterior(game, alpha[[(p + d) % n for d in range(1, n)]])
                for p in range(n)
            ]
            self._types = None
            if config.prior == "typed":
                support = prior_alpha(
                    game, self.prior_mean, epsilon=0.0, eta=config.eta, prior="informed"
                )
                self._types = [
                    TypedPrior(posterior.alpha0, support[[(p + d) % n for d in range(1, n)]])
                    for p, posterior in enumerate(self._dirichlet)
                ]
            return
        self.tau = create_samples(
            game,
            self.prior_mean,
            k=config.k,
            epsilon=config.epsilon,
            eta=config.eta,
            prior=config.prior,
            rng=np.random.default_rng(config.seed),
        )
        k = config.k
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

    # --- Alg 4: the update ---------------------------------------------------------------------

    def observe(self, obs: HandObservation) -> None:
        """Bayes-update the table of our position in ``obs`` with what was seen of the hand."""
        game = self.game
        key = (obs.position, obs.history, obs.cards)  # a tuple of atoms: the GC untracks it
        if key not in self._valid_observations:
            validate_observation(game, obs)
            if len(self._valid_observations) < MAX_CACHED_OBSERVATIONS:
                self._valid_observations.add(key)
        p = obs.position
        moves = self._opponent_moves(p, obs.history)
        if self.config.posterior == "dirichlet":
            applied = self._dirichlet[p].observe(
                (obs.history, obs.cards), lambda: _hidden_assignments(game, obs), moves
            )
            if applied and self._types is not None:
                self._count_revealed(p, moves, obs)
        elif game.num_players == 3:
            self._update_3p(p, moves, obs)
        else:
            self._update_generic(p, moves, obs)
        self.hands_observed += 1
        for kind in RESPONSES:
            self._responses.pop((p, kind), None)

    def _opponent_moves(self, p: int, history: str) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per opponent (d = 1..n-1): its decision nodes and actions in ``history``."""
        key = (p, history)
        if key not in self._moves:
            game, n = self.game, self.game.num_players
            path = _path_of(game, int(game.node_terminal[game.node(history)]))
            self._moves[key] = [
                (
                    np.array([nd for nd, _ in path if game.node_player[nd] == (p + d) % n]),
                    np.array([a for nd, a in path if game.node_player[nd] == (p + d) % n]),
                )
                for d in range(1, n)
            ]
        return self._moves[key]

    def _count_revealed(self, p: int, moves, obs: HandObservation) -> None:
        n = self.game.num_players
        for d, (nodes, actions) in enumerate(moves, start=1):
            card = obs.cards[(p + d) % n]
            if card is not None:
                for node, action in zip(nodes, actions, strict=True):
                    self._types[p].observe_revealed(d, self.game.infoset_of[node, card], action)

    def _update_3p(self, p: int, moves, obs: HandObservation) -> None:
        # z[s1, s2] = sum over assignments (x1, x2) of f1[s1, x1] f2[s2, x2], grouped by x2.
        key = (p, obs.cards)
        if key not in self._groupings:
            assignments = _hidden_assignments(self.game, obs)
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

    def _update_generic(self, p: int, moves, obs: HandObservation) -> None:
        per_card = []
        for d, (nodes, actions) in enumerate(moves, start=1):
            out = np.empty((self.config.k, self.game.num_cards))
            kernels.card_likelihoods(self.tau[p, d - 1], nodes, actions, self.game.infoset_of, out)
            per_card.append(out)
        assignments = _hidden_assignments(self.game, obs)
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

    # --- memory ----------------------------------------------------------------------------------

    def nbytes(self) -> int:
        """Approximate bytes the model holds: its arrays exactly, its caches of small Python
        objects at ``ENTRY_BYTES`` per entry. Bounded whatever the number of hands: every table
        and cache is sized by the game and the configuration, not by the hands seen."""
        arrays = [self.default_strategy, self.prior_mean]
        for cached in self._responses.values():
            arrays.append(cached[0])
        for moves in self._moves.values():
            arrays.extend(a for pair in moves for a in pair)
        entries = len(self._valid_observations) + len(self._moves) + len(self._responses)
        if self.config.posterior == "dirichlet":
            extra = sum(posterior.nbytes() for posterior in self._dirichlet)
            if self._types is not None:
                extra += sum(t.nbytes() for t in self._types)
        else:
            arrays += [self.tau, self._spare, *self._weights]
            arrays += [a for row in self._reach for a in row]
            arrays += [a for row in self._marginals for a in row]
            arrays += [a for layout in self._bayes_layout for a in layout]
            arrays += [a for grouping in self._groupings.values() for a in grouping]
            entries += len(self._groupings)
            extra = 0
        return array_bytes(arrays) + entries * ENTRY_BYTES + extra

    # --- snapshots (modeling/mbbr/snapshot.py) ------------------------------------------

    def snapshot(self) -> bytes:
        """The model's state after the hands observed so far, as self-describing bytes.

        ``restore`` into a fresh model of the same game, configuration and prior mean, then
        observing the later hands, gives exactly the posterior of observing them all.
        """
        meta = {**self._snapshot_identity(), "hands_observed": self.hands_observed}
        if self.config.posterior == "dirichlet":
            arrays = {}
            for p, posterior in enumerate(self._dirichlet):
                state = posterior.state()
                if self._types is not None:
                    state.update(self._types[p].state())
                arrays.update({f"p{p}.{name}": a for name, a in state.items()})
        else:
            arrays = {f"weights.{p}": w for p, w in enumerate(self._weights)}
            arrays["scale"] = np.array(self._scale)
            arrays["ess"] = np.array(self._ess)
            arrays["marginals"] = np.array(self._marginals)
        return snapshot_format.encode(meta, arrays)

    def restore(self, blob: bytes) -> None:
        """Replace the state with a ``snapshot()``'s; SnapshotError (and nothing changed) if it
        is not a snapshot of a model with this game, configuration and prior mean."""
        meta, arrays = snapshot_format.decode(blob)
        identity = self._snapshot_identity()
        if {key: meta.get(key) for key in identity} != identity:
            raise snapshot_format.SnapshotError("snapshot of a model with other settings")
        hands = meta.get("hands_observed")
        if not isinstance(hands, int) or hands < 0:
            raise snapshot_format.SnapshotError(f"snapshot hands_observed {hands!r}")
        n, take = self.game.num_players, snapshot_format.take
        if self.config.posterior == "dirichlet":
            fresh = [DirichletPosterior(self.game, post.alpha0) for post in self._dirichlet]
            types = self._types and [TypedPrior(t.clipped, t.support) for t in self._types]
            for p in range(n):
                state = {
                    name.split(".", 1)[1]: a
                    for name, a in arrays.items()
                    if name.startswith(f"p{p}.")
                }
                fresh[p].restore(state)
                if types is not None:
                    types[p].restore(state)
            self._dirichlet, self._types = fresh, types
        else:
            k = self.config.k
            weights = [take(arrays, f"weights.{p}", "f8", (k,) * (n - 1)) for p in range(n)]
            scale = take(arrays, "scale", "f8", (n,))
            ess = take(arrays, "ess", "f8", (n,))
            marginals = take(arrays, "marginals", "f8", (n, n - 1, k))
            self._weights = weights
            self._scale = [float(x) for x in scale]
            self._ess = [float(x) for x in ess]
            self._marginals = [list(row) for row in marginals]
        self.hands_observed = hands
        self._responses.clear()

    def _snapshot_identity(self) -> dict:
        """What a snapshot must agree on with the model it is restored into."""
        return {
            "posterior": self.config.posterior,
            "num_players": self.game.num_players,
            "config": dataclasses.asdict(self.config),
            "prior_mean_sha256": hashlib.sha256(
                np.ascontiguousarray(self.prior_mean, dtype=np.float64).tobytes()
            ).hexdigest(),
        }

    # --- Alg 5 and the responses -----------------------------------------------------------------

    def posterior(self, our_position: int) -> np.ndarray:
        """The normalised joint posterior of the table for our position (a copy)."""
        self.game._check_position(our_position, "our_position")
        self._require_samples("posterior")
        w = self._weights[our_position]
        return w / w.sum()

    def effective_sample_size(self, our_position: int) -> float:
        """1 / sum p(s)^2 of the joint posterior of the table for our position."""
        self.game._check_position(our_position, "our_position")
        self._require_samples("effective_sample_size")
        return self._ess[our_position]

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        """Posterior-mean strategy (num_infosets, 2) of an opponent, and its marginal ESS.

        Under the typed prior the strategy is the two types' mixture mean. With the Dirichlet
        posterior the second value is the smallest concentration
        (alpha_0 + alpha_1) over the opponent's information sets: the prior's weight plus the
        expected visits of the least-seen one, the number of samples the model rests on there.
        """
        d = self._offset(our_position, opponent_position)
        if self.config.posterior == "dirichlet":
            posterior = self._dirichlet[our_position]
            rows = self.game.infosets(opponent_position)
            least_seen = float(posterior.concentration(d)[rows].min())
            if self._types is not None:
                return self._types[our_position].mean(d, posterior.alpha[d - 1]), least_seen
            return posterior.mean(d), least_seen
        marginal = self._marginals[our_position][d - 1]
        model = (marginal @ self._tau_flat[our_position, d - 1]).reshape(-1, 2)
        return model, float(1.0 / np.dot(marginal, marginal))

    def models_profile(self, our_position: int) -> np.ndarray:
        """A profile with every opponent replaced by its model (our row: the default strategy)."""
        profile = self.default_strategy.copy()
        n = self.game.num_players
        for d in range(1, n):
            q = (our_position + d) % n
            profile[q] = self.opponent_model(our_position, q)[0]
        return profile

    def response(self, our_position: int, kind: str | None = None) -> tuple[np.ndarray, float]:
        """Best-response strategy (num_infosets, 2) for our position and its expected value."""
        self.game._check_position(our_position, "our_position")
        kind = kind or self.config.response
        if kind not in RESPONSES:
            raise InvalidArgumentError("kind", f"must be one of {RESPONSES}, got {kind!r}")
        key = (our_position, kind)
        if key not in self._responses:
            if kind == "mean" or self.config.posterior == "dirichlet":
                # Under the Dirichlet posterior the opponents and their information sets are
                # independent and a sequence meets each information set once, so the expected
                # reach is the reach of the mean: the Bayesian response is the mean's response.
                weights = leaf_weights(self.game, self.models_profile(our_position), our_position)
            else:
                weights = self._bayes_leaf_weights(our_position)
            self._responses[key] = best_response_to_weights(self.game, weights, our_position)
        strategy, value = self._responses[key]
        return strategy.copy(), value

    def policy(self, our_position: int) -> np.ndarray:
        """What the agent plays: the default strategy for the first H hands, then the response."""
        if self.hands_observed < self.config.hands_default:
            self.game._check_position(our_position, "our_position")
            return self.default_strategy[our_position].copy()
        return self.response(our_position)[0]

    def _bayes_leaf_weights(self, p: int) -> np.ndarray:
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
            for node, action in _path_of(game, t):
                if game.node_player[node] == q:
                    reach[:, :, s] *= tau[:, game.infoset_of[node], action]
        return reach.reshape(tau.shape[0], -1)

    def _require_samples(self, what: str) -> None:
        if self.config.posterior != "samples":
            raise FailedPreconditionError(
                f"{what}: only the 'samples' posterior has sample weights "
                f"(this model's posterior is {self.config.posterior!r})"
            )

    def _offset(self, our_position: int, opponent_position: int) -> int:
        self.game._check_position(our_position, "our_position")
        self.game._check_position(opponent_position, "opponent_position")
        d = (opponent_position - our_position) % self.game.num_players
        if d == 0:
            raise InvalidArgumentError("opponent_position", "is our own position")
        return d


def _path_of(game: KuhnGame, terminal: int) -> list[tuple[int, int]]:
    length = int(game.path_len[terminal])
    return [
        (int(game.path_nodes[terminal, i]), int(game.path_actions[terminal, i]))
        for i in range(length)
    ]


@functools.cache  # per game: the tree never changes (kuhn_game returns one object per size)
def _own_sequences(game: KuhnGame) -> list[tuple[np.ndarray, int]]:
    """Per position: (sequence id of each terminal, number of distinct own action sequences)."""
    out = []
    for q in range(game.num_players):
        ids: dict[tuple, int] = {}
        seq = np.empty(game.num_terminals, dtype=np.int64)
        for t in range(game.num_terminals):
            key = tuple((nd, a) for nd, a in _path_of(game, t) if game.node_player[nd] == q)
            seq[t] = ids.setdefault(key, len(ids))
        seq.setflags(write=False)  # shared by every model of this game
        out.append((seq, len(ids)))
    return out


def _hidden_assignments(game: KuhnGame, obs: HandObservation) -> np.ndarray:
    """Every assignment of cards to the opponents consistent with what we saw: (m, n - 1)."""
    n, p = game.num_players, obs.position
    opponents = [(p + d) % n for d in range(1, n)]
    known = {c for c in obs.cards if c is not None}
    free = [c for c in range(game.num_cards) if c not in known]
    hidden = [j for j, q in enumerate(opponents) if obs.cards[q] is None]
    rows = []
    for pick in itertools.permutations(free, len(hidden)):
        cards = [obs.cards[q] for q in opponents]
        for j, c in zip(hidden, pick, strict=True):
            cards[j] = c
        rows.append(cards)
    return np.array(rows, dtype=np.int64)
