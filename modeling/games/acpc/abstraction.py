"""Card abstraction for limit Texas hold'em: per round, each (hole, board) is mapped to a bucket by
its expected hand strength squared, E[HS^2].

HS is the share of the opponent's possible hands that the hole beats on a complete board (ties
one half; one opponent, every two-card hand of the unseen cards equally likely). E[HS^2] is HS^2
averaged over the board cards still to come: exact preflop (a table of the 169 hole classes over
every board, computed once: :func:`preflop_table`), exact for the turn and river and wherever the
completions are at most ``rollouts``, else over ``rollouts`` completions drawn with a seed (the
flop by default). Squaring weighs the spread of the outcomes, so a drawing hand whose
strength may end high ranks above a made hand of the same mean (Johanson, Burch, Valenzano &
Bowling 2013, "Evaluating state-space abstractions in extensive-form games"). We take E[HS^2]
rather than potential-aware clustering (Ganzfried & Sandholm 2014: k-means with earth mover's
distance over the next round's histograms) because it is one number per (hole, board), so the
buckets are its percentiles, exact small cases pin it down, and it computes in seconds on this
2-core machine; the clustering is the stronger abstraction and can replace it behind
:meth:`CardAbstraction.bucket`.

Buckets: per round, the cut points are the quantiles of E[HS^2] over ``samples`` seeded random
deals of that round, so each bucket holds about the same share of deals; the number of buckets
per round is configurable; recall is imperfect (a round's bucket forgets the earlier ones); deals
that differ only in suit names share a bucket. An
abstraction is computed once, saved (``.npz``: the format version, the configuration, the cut
points) and cached in ``<cache folder>/abstractions/<key>.npz`` (the cache folder of
:mod:`oppmodel.modeling.games.acpc.solved`; the key is a hash of the version and the
configuration), with a progress bar on a terminal while it computes.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import logging
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc import _abstraction_kernels as kernels
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.solved import cache_folder

log = logging.getLogger(__name__)

VERSION = 2  # of the saved file and of what a bucket means: a change makes a new cache key
BOARD_SIZES = (0, 3, 4, 5)  # board cards seen in each round: preflop, flop, turn, river
HOLE_CARDS = 2
RANKS = 13
DECK_SIZE = 52
PREFLOP_SLICES = 100  # progress-bar steps of the preflop table


@dataclass(frozen=True)
class AbstractionConfig:
    """How an abstraction is computed: buckets per round, deals sampled per round for the cut
    points, board completions drawn per E[HS^2] on the flop (0: every one, exact; the other
    rounds are always exact) and the seed of both."""

    buckets: tuple[int, ...] = (8, 8, 8, 8)
    samples: int = 2000
    rollouts: int = 100
    seed: int = 0

    def __post_init__(self) -> None:
        if len(self.buckets) != len(BOARD_SIZES) or any(b < 1 for b in self.buckets):
            raise InvalidArgumentError(
                "buckets", f"need {len(BOARD_SIZES)} counts of at least 1, got {self.buckets}"
            )
        if self.samples < 1:
            raise InvalidArgumentError("samples", f"must be at least 1, got {self.samples}")
        if self.rollouts < 0:
            raise InvalidArgumentError(
                "rollouts", f"must be 0 (exact) or more, got {self.rollouts}"
            )

    @property
    def key(self) -> str:
        """The cache key: a hash of the format version and the configuration."""
        text = f"v{VERSION} {sorted(asdict(self).items())}"
        return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class CardAbstraction:
    """Per round, the increasing cut points between the buckets of E[HS^2]."""

    config: AbstractionConfig
    cuts: tuple[np.ndarray, ...]

    def bucket(self, hole: Sequence[str], board: Sequence[str]) -> int:
        """The bucket (0 = weakest) of the hole cards on the board seen so far (its size gives
        the round)."""
        value = strength(hole, board, rollouts=self.config.rollouts, seed=self.config.seed)
        return int(np.searchsorted(self.cuts[BOARD_SIZES.index(len(board))], value, "right"))

    def save(self, path: Path) -> None:
        """Write the abstraction as ``.npz`` (whole or not at all: a temporary file, renamed)."""
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        config = asdict(self.config)
        np.savez(tmp, version=VERSION, cuts=np.concatenate(self.cuts), **config)
        os.replace(tmp, path)

    @classmethod
    def load(cls, path: Path) -> CardAbstraction:
        """Read a saved abstraction; InvalidArgumentError if it is of another format version."""
        with np.load(path) as data:
            if int(data["version"]) != VERSION:
                raise InvalidArgumentError(
                    "abstraction", f"{path} is version {int(data['version'])}, not {VERSION}"
                )
            config = AbstractionConfig(
                tuple(int(b) for b in data["buckets"]),
                int(data["samples"]),
                int(data["rollouts"]),
                int(data["seed"]),
            )
            ends = np.cumsum([b - 1 for b in config.buckets])
            return cls(config, tuple(np.split(data["cuts"], ends[:-1])))


def strength(hole: Sequence[str], board: Sequence[str], *, rollouts: int, seed: int) -> float:
    """E[HS^2] of two hole cards on a board of 0, 3, 4 or 5 cards (see the module's text). It is
    computed on the deal's canonical form under suit relabelling, so deals that differ only in
    suit names (AhKh and AsKs preflop) get the same value, sampled or not; the draws of a
    sampled expectation depend on the seed and that form only. Preflop it is the exact table's
    (:func:`preflop_table`): no rollouts."""
    if len(hole) != HOLE_CARDS:
        raise InvalidArgumentError("hole", f"need {HOLE_CARDS} cards, got {list(hole)}")
    if len(board) not in BOARD_SIZES:
        raise InvalidArgumentError("board", f"need {BOARD_SIZES} cards, got {list(board)}")
    ids = [card_index(c) for c in (*hole, *board)]
    if len(set(ids)) != len(ids):
        raise InvalidArgumentError("board", f"cards dealt twice in {list(hole)} {list(board)}")
    if not board:
        return float(preflop_table()[preflop_cell(ids[0], ids[1])])
    held, shown = _canonical(ids[:HOLE_CARDS], ids[HOLE_CARDS:])
    deal_seed = hash((seed, held, shown)) % 2**31  # same deal, same draws
    return float(kernels.expected_strength_squared(held, shown, len(board), rollouts, deal_seed))


def preflop_cell(first: int, second: int) -> tuple[int, int]:
    """The cell of two hole cards (card indices) in the 13 x 13 preflop table: (high rank, low
    rank) if suited, (low, high) if not, (rank, rank) for a pair."""
    high, low = max(first // 4, second // 4), min(first // 4, second // 4)
    return (high, low) if first % 4 == second % 4 else (low, high)


@functools.cache
def preflop_table() -> np.ndarray:
    """E[HS^2] of the 169 preflop classes, exact, as a 13 x 13 table indexed by
    :func:`preflop_cell` (ranks 0..12 for 2..A): every five-card board, every opponent hand.

    The boards are enumerated up to suit relabelling (134,459 classes, each weighed by its size),
    and on each board every hand's HS comes from one sort of all 1,081 hands
    (``board_strengths``), so the whole table is about 150 million evaluations: tens of seconds
    once, then read from ``<cache folder>/abstractions/preflop-v<VERSION>.npz``."""
    path = cache_folder() / "abstractions" / f"preflop-v{VERSION}.npz"
    try:
        with np.load(path) as data:
            table = data["table"]
        if table.shape == (RANKS, RANKS):
            table.setflags(write=False)
            return table
    except (OSError, KeyError, ValueError):
        pass  # absent or unreadable: computed below
    boards, weights = kernels.canonical_boards(BOARD_SIZES[-1])
    sums = np.zeros((DECK_SIZE, DECK_SIZE))
    bar = progress_bar(boards.size, desc="preflop E[HS^2]", unit="board")
    try:
        for chunk in np.array_split(np.arange(boards.size), PREFLOP_SLICES):
            kernels.preflop_sums(boards[chunk], weights[chunk], sums)
            bar.update(chunk.size)
    finally:
        bar.close()
    totals, combos = np.zeros((RANKS, RANKS)), np.zeros((RANKS, RANKS))
    for a, b in itertools.combinations(range(DECK_SIZE), 2):
        cell = preflop_cell(a, b)
        totals[cell] += sums[a, b]
        combos[cell] += 1
    table = totals / (combos * math.comb(DECK_SIZE - HOLE_CARDS, BOARD_SIZES[-1]))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, table=table)
    os.replace(tmp, path)
    table.setflags(write=False)
    return table


def _canonical(hole: list[int], board: list[int]) -> tuple[int, int]:
    """The (hole, board) cardsets of the least relabelling of the deal's suits (as sorted card
    indices), a representative shared by every deal that differs only in suit names."""
    best = min(
        (sorted(c - c % 4 + p[c % 4] for c in hole), sorted(c - c % 4 + p[c % 4] for c in board))
        for p in itertools.permutations(range(4))
    )
    return (
        int(np.bitwise_or.reduce(CARD_BITS[best[0]])),
        int(np.bitwise_or.reduce(CARD_BITS[best[1]])) if board else 0,
    )


def build(config: AbstractionConfig, *, show_progress: bool = True) -> CardAbstraction:
    """Compute the cut points of every round from ``config.samples`` seeded deals each."""
    rng = np.random.default_rng(config.seed)
    names = [r + s for r in RANK_CHARS for s in SUIT_CHARS]  # by card index
    cuts = []
    total = len(BOARD_SIZES) * config.samples
    bar = progress_bar(total, desc="card abstraction", unit="deal", show=show_progress)
    try:
        for size, count in zip(BOARD_SIZES, config.buckets, strict=True):
            values = np.empty(config.samples)
            for i in range(config.samples):
                deal = [names[c] for c in rng.permutation(52)[: HOLE_CARDS + size]]
                values[i] = strength(
                    deal[:HOLE_CARDS], deal[HOLE_CARDS:], rollouts=config.rollouts, seed=config.seed
                )
                bar.update()
            cuts.append(np.quantile(values, np.arange(1, count) / count))
    finally:
        bar.close()
    return CardAbstraction(config, tuple(cuts))


def card_abstraction(
    config: AbstractionConfig | None = None, *, show_progress: bool = True
) -> CardAbstraction:
    """The abstraction of ``config`` (the defaults if None): from the cache, else built now and
    cached (a cached file of another version or unreadable is built again)."""
    config = config or AbstractionConfig()
    path = cache_folder() / "abstractions" / f"{config.key}.npz"
    if path.exists():
        try:
            cached = CardAbstraction.load(path)
            if cached.config == config:
                return cached
        except (InvalidArgumentError, OSError, KeyError, ValueError) as exc:
            log.warning("cached card abstraction unreadable, building it again: %s", exc)
    abstraction = build(config, show_progress=show_progress)
    path.parent.mkdir(parents=True, exist_ok=True)
    abstraction.save(path)
    return abstraction
