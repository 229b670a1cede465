"""MBBR's posterior as one Dirichlet per information set, fitted by variational Bayes.

The paper's posterior (Alg 3-4) is k Dirichlet samples reweighted by importance; once one sample
explains the play best its weight takes everything (effective sample size 1) and the model stops
learning. This keeps the same Bayesian model (the same Dirichlet prior per opponent information
set, the same likelihood with unseen cards summed out) and approximates the posterior instead as a
product of Dirichlets, q(tau) = prod_i Dir(alpha_i), fitted by coordinate-ascent variational Bayes:
each observed hand is split over the card assignments that explain it, in proportion to
exp(E_q[log likelihood]), and alpha = prior + expected action counts. With every card seen this is
the exact conjugate posterior; with hidden cards it is the standard mean-field approximation (with
four hidden-card hands its means are within 0.03 of the exact posterior's, enumerated). It keeps
learning at every information set however many hands are seen, and costs O(distinct observations)
per hand, independent of any k.

The posterior depends on the observations only through how often each distinct one was seen (they
are i.i.d. given the strategies), so the fit runs over that histogram: at most a few hundred
entries per position in 3-player Kuhn, however long the match.

``DirichletModel`` is MBBR with this posterior, one ``DirichletPosterior`` per our position. Its
response is the best response to the posterior mean, which under it is also the Bayesian response:
the opponents and their information sets are independent and a sequence meets each information set
once, so the expected reach is the reach of the mean. It has no sample weights to report. With the
typed prior (``typed_prior.py``) each opponent's model is the mixture mean of the two types,
weighed by the moves its revealed cards show.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from oppmodel.modeling.errors import FailedPreconditionError, InvalidArgumentError
from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr import _dirichlet_kernels as kernels
from oppmodel.modeling.mbbr.base import ModelBase
from oppmodel.modeling.mbbr.config import MBBRConfig, Posterior, Prior, Response
from oppmodel.modeling.mbbr.evidence import Moves
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.mbbr.priors import prior_alpha
from oppmodel.modeling.mbbr.snapshot import SnapshotError, take
from oppmodel.modeling.mbbr.typed_prior import TypedPrior, typed_priors
from oppmodel.modeling.observation import HandObservation

MAX_SWEEPS = 500
TOLERANCE = 1e-9  # largest change of any alpha between the last two sweeps


class DirichletModel(ModelBase):
    """MBBR with the variational Dirichlet posterior (``Posterior.DIRICHLET``), the default."""

    POSTERIOR = Posterior.DIRICHLET

    def _build_posterior(self) -> None:
        """One Dirichlet posterior per our position, at the prior (and the typed prior's types)."""
        game, config = self.game, self.config
        if config.prior == Prior.MIXTURE:
            raise InvalidArgumentError(
                "prior",
                "'mixture' is for limit games (its card-blind type pools a seat's information "
                "sets by public node); Kuhn's models take informed, uninformed or typed",
            )
        n = game.num_players
        alpha = prior_alpha(
            game, self.prior_mean, epsilon=config.epsilon, eta=config.eta, prior=config.prior
        )
        self._dirichlet = [
            DirichletPosterior(game, alpha[[(p + d) % n for d in range(1, n)]]) for p in range(n)
        ]
        # Under the typed prior: the type weights of the opponents of each position; else None.
        self._types: list[TypedPrior] | None = None
        if config.prior == Prior.TYPED:
            clipped = [posterior.alpha0 for posterior in self._dirichlet]
            self._types = typed_priors(game, self.prior_mean, clipped, eta=config.eta)

    @classmethod
    def _refuse_oversized(cls, game: KuhnGame, config: MBBRConfig) -> None:
        """Nothing to refuse: no table grows with k, which this posterior does not use."""

    def _update(self, p: int, moves: Moves, obs: HandObservation) -> None:
        applied = self._dirichlet[p].observe(
            (obs.history, obs.cards), lambda: self._evidence.move_table(obs)
        )
        if applied and self._types is not None:
            n = self.game.num_players
            for d, (nodes, actions) in enumerate(moves, start=1):
                card = obs.cards[(p + d) % n]
                if card is not None:
                    for node, action in zip(nodes, actions, strict=True):
                        self._types[p].observe_revealed(d, self.game.infoset_of[node, card], action)

    def _opponent_model(self, p: int, d: int) -> tuple[np.ndarray, float]:
        """The posterior mean (under the typed prior: the two types' mixture mean), and the
        smallest concentration (alpha_0 + alpha_1) over the opponent's information sets: the
        prior's weight plus the expected visits of the least-seen one, the number of samples the
        model rests on there."""
        posterior = self._dirichlet[p]
        rows = self.game.infosets((p + d) % self.game.num_players)
        least_seen = float(posterior.concentration(d)[rows].min())
        if self._types is not None:
            return self._types[p].mean(d, posterior.alpha[d - 1]), least_seen
        return posterior.mean(d), least_seen

    def opponent_means(self, our_position: int) -> np.ndarray:
        """The means of every opponent at once (see ``ModelBase.opponent_means``)."""
        if self._types is not None:
            return super().opponent_means(our_position)
        alpha = self._dirichlet[our_position].alpha
        return alpha / alpha.sum(axis=2, keepdims=True)

    def _leaf_weights(self, p: int, kind: Response) -> np.ndarray:
        return self._mean_leaf_weights(p)  # the Bayesian response too (see the module docstring)

    def posterior(self, our_position: int) -> np.ndarray:
        """Refused: only the sample posterior has sample weights."""
        raise self._no_samples("posterior")

    def effective_sample_size(self, our_position: int) -> float:
        """Refused: only the sample posterior has sample weights."""
        raise self._no_samples("effective_sample_size")

    def _no_samples(self, what: str) -> FailedPreconditionError:
        return FailedPreconditionError(
            f"{what}: only the 'samples' posterior has sample weights "
            f"(this model's posterior is {self.POSTERIOR.value!r})"
        )

    def _state(self) -> dict[str, np.ndarray]:
        arrays = {}
        for p, posterior in enumerate(self._dirichlet):
            state = posterior.state()
            if self._types is not None:
                state.update(self._types[p].state())
            arrays.update({f"p{p}.{name}": a for name, a in state.items()})
        return arrays

    def _restore_state(self, arrays: dict[str, np.ndarray]) -> None:
        fresh = [DirichletPosterior(self.game, post.alpha0) for post in self._dirichlet]
        types = self._types and [TypedPrior(t.clipped, t.support) for t in self._types]
        for p in range(self.game.num_players):
            state = {
                name.split(".", 1)[1]: a for name, a in arrays.items() if name.startswith(f"p{p}.")
            }
            fresh[p].restore(state)
            if types is not None:
                types[p].restore(state)
        self._dirichlet, self._types = fresh, types

    def _posterior_nbytes(self) -> int:
        extra = sum(posterior.nbytes() for posterior in self._dirichlet)
        if self._types is not None:
            extra += sum(t.nbytes() for t in self._types)
        return extra


class DirichletPosterior:
    """Variational Dirichlet posterior over the strategies of the opponents of one position."""

    def __init__(self, game: KuhnGame, alpha0: np.ndarray) -> None:
        """``alpha0``: (n - 1, num_infosets, 2) prior parameters, opponent d - 1 at offset d."""
        self.game = game
        self.alpha0 = np.array(alpha0, dtype=np.float64)
        self.alpha = self.alpha0.copy()
        self._index: dict[tuple, int] = {}  # distinct observation -> its row in the histogram
        self._counts = _Growing(np.float64)  # times each distinct observation was seen
        self._row_start = _Growing(np.int64, [0])  # its assignments: row_start[o]:row_start[o+1]
        self._entry_start = _Growing(np.int64, [0])  # an assignment's moves: the same way
        self._moves = _Growing(np.int64, width=3)  # (offset - 1, information set, action)
        self._nbytes, self._nbytes_at = 0, -1  # nbytes() and the distinct observations it saw

    def observe(self, key: tuple, move_table: Callable[[], tuple[np.ndarray, np.ndarray]]) -> bool:
        """Add one hand and refit; returns whether it was added. ``key`` identifies what was
        seen; ``move_table()`` gives the opponents' moves under each assignment of their hidden
        cards (``EvidenceCache.move_table``).

        A fit that does not end in finite positive parameters (not seen within the validated
        ranges of the prior; this is the guard) is undone: the hand leaves the posterior as it
        was and False is returned.
        """
        o = self._index.get(key)
        if o is None:
            o = self._index[key] = len(self._counts)
            self._counts.append([0.0])
            entries, ends = move_table()
            self._entry_start.append(len(self._moves) + ends)
            self._moves.append(entries)
            self._row_start.append([len(self._entry_start) - 1])
        counts = self._counts.view()
        counts[o] += 1.0
        if kernels.fit(
            self.alpha0, self.alpha, counts, self._row_start.view(), self._entry_start.view(),
            self._moves.view(), MAX_SWEEPS, TOLERANCE,
        ):  # fmt: skip
            return True
        counts[o] -= 1.0
        return False

    def state(self) -> dict[str, np.ndarray]:
        """What the observations changed, as arrays (``modeling/mbbr/snapshot.py``, version 1): the
        fitted parameters, the histogram and its assignment tables, and the distinct
        observations in the order they were first seen (cards -1 where hidden)."""
        keys = list(self._index)  # insertion order = row order
        cards = [[-1 if c is None else c for c in k[1]] for k in keys]
        return {
            "alpha": self.alpha.copy(),
            "counts": self._counts.view().copy(),
            "row_start": self._row_start.view().copy(),
            "entry_start": self._entry_start.view().copy(),
            "moves": self._moves.view().copy(),
            "key_histories": np.array([k[0] for k in keys], dtype=np.str_),
            "key_cards": np.array(cards, dtype=np.int64).reshape(len(keys), self.game.num_players),
        }

    def restore(self, state: dict[str, np.ndarray]) -> None:
        """Set what ``state`` (from ``state()`` of a posterior with the same prior) holds;
        SnapshotError if it does not fit this posterior."""
        alpha = take(state, "alpha", "f8", self.alpha0.shape)
        counts = take(state, "counts", "f8", (None,))
        m = len(counts)
        row_start = take(state, "row_start", "i8", (m + 1,))
        entry_start = take(state, "entry_start", "i8", (int(row_start[-1]) + 1,))
        moves = take(state, "moves", "i8", (int(entry_start[-1]), 3))
        histories = take(state, "key_histories", "U", (m,))
        cards = take(state, "key_cards", "i8", (m, self.game.num_players))
        if row_start[0] != 0 or entry_start[0] != 0 or np.any(np.diff(row_start) < 1):
            raise SnapshotError("snapshot histogram tables are not consistent")
        self.alpha = alpha
        self._index = {
            (str(h), tuple(None if c < 0 else int(c) for c in row)): o
            for o, (h, row) in enumerate(zip(histories, cards, strict=True))
        }
        self._counts = _Growing(np.float64, counts)
        self._row_start = _Growing(np.int64, row_start)
        self._entry_start = _Growing(np.int64, entry_start)
        self._moves = _Growing(np.int64, moves, width=3)
        self._nbytes_at = -1

    def nbytes(self) -> int:
        """Approximate bytes held: the arrays (at capacity) and the index of observations.

        Counted again only when a new distinct observation has grown the tables (asked after
        every hand, it is most often the same)."""
        if self._nbytes_at != len(self._index):
            tables = (self._counts, self._row_start, self._entry_start, self._moves)
            arrays = [self.alpha0, self.alpha, *(t._data for t in tables)]
            self._nbytes = array_bytes(arrays) + len(self._index) * ENTRY_BYTES
            self._nbytes_at = len(self._index)
        return self._nbytes

    def mean(self, d: int) -> np.ndarray:
        """Posterior-mean strategy (num_infosets, 2) of the opponent at offset ``d``."""
        alpha = self.alpha[d - 1]
        return alpha / alpha.sum(axis=1, keepdims=True)

    def concentration(self, d: int) -> np.ndarray:
        """alpha_0 + alpha_1 per information set of the opponent at offset ``d``: prior plus
        expected visits, the posterior's confidence in each row of :meth:`mean`."""
        return self.alpha[d - 1].sum(axis=1)


class _Growing:
    """An append-only array with amortised O(1) appends; ``view()`` is the filled part."""

    def __init__(
        self,
        dtype: npt.DTypeLike,
        initial: Sequence[float] | np.ndarray = (),
        width: int | None = None,
    ) -> None:
        shape = (max(16, len(initial)),) if width is None else (16, width)
        self._data = np.zeros(shape, dtype=dtype)
        self._size = 0
        if len(initial):
            self.append(initial)

    def __len__(self) -> int:
        return self._size

    def append(self, rows: npt.ArrayLike) -> None:
        rows = np.asarray(rows, dtype=self._data.dtype).reshape(-1, *self._data.shape[1:])
        end = self._size + len(rows)
        if end > len(self._data):
            grown = np.zeros(
                (max(end, 2 * len(self._data)), *self._data.shape[1:]), self._data.dtype
            )
            grown[: self._size] = self._data[: self._size]
            self._data = grown
        self._data[self._size : end] = rows
        self._size = end

    def view(self) -> np.ndarray:
        return self._data[: self._size]
