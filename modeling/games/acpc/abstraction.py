"""Card abstraction for limit Texas hold'em: per round, each (hole, board) is mapped to a bucket by
its expected hand strength squared, E[HS^2].

HS is the share of the opponent's possible hands that the hole beats on a complete board (ties
one half; one opponent, every two-card hand of the unseen cards equally likely). E[HS^2] is HS^2
averaged over the board cards still to come: exact preflop (a table of the 169 hole classes over
every board, computed once: :func:`preflop_table`), exact for the turn and river and wherever the
completions are at most ``rollouts``, else over ``rollouts`` completions drawn with a seed (the
flop by default). The completions are drawn per board, not per hand, so one pass values every
hand of a range on the board at once (:func:`range_strengths`, :meth:`CardAbstraction.
range_buckets`): what a blueprint needs to give an opponent's whole range its probabilities (the
local best response). Squaring weighs the spread of the outcomes, so a drawing hand whose
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
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc import _abstraction_kernels as kernels
from oppmodel.modeling.games.acpc._hand_rank_kernels import CARD_BITS
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.solved import cache_file, cache_lock

log = logging.getLogger(__name__)

VERSION = 3  # of the saved file and of what a bucket means: a change makes a new cache key
BOARD_SIZES = (0, 3, 4, 5)  # board cards seen in each round: preflop, flop, turn, river
HOLE_CARDS = 2
RANKS = 13
DECK_SIZE = 52
PREFLOP_SLICES = 100  # progress-bar steps of the preflop table
PREFLOP_VERSION = 2  # of the cached preflop table (unchanged by VERSION 3's boards)
# every two-card hand (i < j) of the deck, in a fixed order: (1326, 2), the rows of a range
ALL_HOLES = np.array(list(itertools.combinations(range(DECK_SIZE), HOLE_CARDS)), dtype=np.int64)
ALL_HOLES.setflags(write=False)
# (52, 52) -> the row of ALL_HOLES holding both cards (-1 on the diagonal)
HOLE_INDEX = np.full((DECK_SIZE, DECK_SIZE), -1, dtype=np.int64)
HOLE_INDEX[ALL_HOLES[:, 0], ALL_HOLES[:, 1]] = np.arange(len(ALL_HOLES))
HOLE_INDEX[ALL_HOLES[:, 1], ALL_HOLES[:, 0]] = np.arange(len(ALL_HOLES))
HOLE_INDEX.setflags(write=False)


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

    def range_buckets(self, board: tuple[int, ...]) -> np.ndarray:
        """(1326,) the bucket of every hand of :data:`ALL_HOLES` on ``board`` (card indices;
        its size gives the round), -1 for the hands that hold a board card: what
        :meth:`bucket` answers hand by hand, for a whole range at once."""
        values = range_strengths(board, rollouts=self.config.rollouts, seed=self.config.seed)
        out = np.searchsorted(self.cuts[BOARD_SIZES.index(len(board))], values, "right")
        return np.where(np.isnan(values), -1, out)

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
    """E[HS^2] of two hole cards on a board of 0, 3, 4 or 5 cards (see the module's text): the
    hole's entry of :func:`range_strengths`, so one hand and a whole range are valued alike."""
    if len(hole) != HOLE_CARDS:
        raise InvalidArgumentError("hole", f"need {HOLE_CARDS} cards, got {list(hole)}")
    if len(board) not in BOARD_SIZES:
        raise InvalidArgumentError("board", f"need {BOARD_SIZES} cards, got {list(board)}")
    ids = [card_index(c) for c in (*hole, *board)]
    if len(set(ids)) != len(ids):
        raise InvalidArgumentError("board", f"cards dealt twice in {list(hole)} {list(board)}")
    values = range_strengths(tuple(ids[HOLE_CARDS:]), rollouts=rollouts, seed=seed)
    return float(values[HOLE_INDEX[ids[0], ids[1]]])


def range_strengths(board: tuple[int, ...], *, rollouts: int, seed: int) -> np.ndarray:
    """(1326,) E[HS^2] of every hand of :data:`ALL_HOLES` on ``board`` (0, 3, 4 or 5 distinct
    card indices), NaN for the hands that hold a board card; read-only.

    Preflop each hand's value is the exact table's (:func:`preflop_table`). On a board, every
    hand's value averages HS^2 over one set of completions of the board (all of them when
    there are at most ``rollouts``, or ``rollouts`` is 0; else ``rollouts`` drawn with the seed),
    each hand over those that miss its cards: one :func:`~._abstraction_kernels.board_strengths`
    per completion values the whole range at once. The completions are those of the board's
    canonical form under suit relabelling (:func:`canonical_board`), closed under the
    relabellings that fix it, so deals that differ only in suit names get the same value,
    sampled or not (rounded to 12 decimals: the sums' order differs between such hands). On a
    river, the one completion, the values are its HS^2 computed on the board itself: the same
    numbers (HS counts hands, which relabelling suits does not change), at a sixth of the cost
    (a river's range was most of a 3-player decision's views)."""
    if not board:
        return _preflop_range()
    if len(board) == BOARD_SIZES[-1]:  # one board: its HS^2, no relabelling or completions
        bits = np.bitwise_or.reduce(CARD_BITS[list(board)])
        out = np.round(kernels.river_squares(bits, ALL_HOLES), 12)
        out.setflags(write=False)
        return out
    relabel, canonical = canonical_board(board)
    values = _canonical_strengths(canonical, rollouts, seed)
    out = by_relabelled_hole(values, relabel)
    out.setflags(write=False)
    return out


@functools.cache
def _preflop_range() -> np.ndarray:
    table = preflop_table()
    first, second = ALL_HOLES[:, 0], ALL_HOLES[:, 1]
    high, low = np.maximum(first // 4, second // 4), np.minimum(first // 4, second // 4)
    suited = first % 4 == second % 4
    out = table[np.where(suited, high, low), np.where(suited, low, high)]
    out.setflags(write=False)
    return out


def by_relabelled_hole(values: np.ndarray, relabel: np.ndarray) -> np.ndarray:
    """(1326,) each hole of ``ALL_HOLES`` given the value of its relabelled hole: a canonical
    board's per-hole values read for the board that ``relabel`` maps onto it."""
    return values[HOLE_INDEX[relabel[ALL_HOLES[:, 0]], relabel[ALL_HOLES[:, 1]]]]


SUIT_PERMUTATIONS = np.array(list(itertools.permutations(range(4))))  # (24, 4), increasing


@functools.lru_cache(maxsize=2**14)  # a hand's spots and its update ask for the same boards
def canonical_board(board: tuple[int, ...]) -> tuple[np.ndarray, tuple[int, ...]]:
    """The least relabelling of the board's suits (its sorted card indices least; of equal
    boards, the least permutation) as a map of the 52 card indices (read-only), and the board
    it makes (sorted)."""
    cards = np.array(board, dtype=np.int64)
    boards = np.sort(cards - cards % 4 + SUIT_PERMUTATIONS[:, cards % 4], axis=1)
    best = np.lexsort(boards.T[::-1])[0] if len(board) else 0  # stable: ties to the least
    deck = np.arange(DECK_SIZE)
    relabel = deck - deck % 4 + SUIT_PERMUTATIONS[best][deck % 4]
    relabel.setflags(write=False)
    return relabel, tuple(boards[best].tolist())


BOARD_CACHE = 10_000  # canonical boards kept (10.6 KB each): a 3,000-hand series' 9,000 boards


@functools.lru_cache(maxsize=BOARD_CACHE)
def _canonical_strengths(board: tuple[int, ...], rollouts: int, seed: int) -> np.ndarray:
    """:func:`range_strengths` on a canonical board, cached: a hand's spots share its boards,
    and the seatings of a duplicate match replay every board of the series (so the cache holds
    a whole series', and each seating after the first reads them).

    A hand is valued over the drawn completions that miss its cards. With few draws every one
    may hold a card of some hand (4 draws on a flop: about one flop in twenty), which would
    leave that hand no value, as if it held a board card; so while a hand the board leaves live
    has no completion, another ``rollouts`` are drawn from the same generator. Where the first
    draws cover every hand (any board at 100 rollouts, in practice) nothing is drawn again."""
    free = [c for c in range(DECK_SIZE) if c not in board]
    shown = np.bitwise_or.reduce(CARD_BITS[list(board)])
    live = math.comb(DECK_SIZE - len(board), HOLE_CARDS)  # pairs the board leaves live
    sums, counts = np.zeros((DECK_SIZE, DECK_SIZE)), np.zeros((DECK_SIZE, DECK_SIZE))
    for drawn in _completions(board, free, rollouts, seed):
        boards = shown | np.bitwise_or.reduce(CARD_BITS[drawn], axis=1).reshape(-1)
        kernels.board_sums(boards.astype(np.int64), np.ones(boards.size), sums, counts)
        if np.count_nonzero(counts[ALL_HOLES[:, 0], ALL_HOLES[:, 1]]) == live:
            break
    with np.errstate(invalid="ignore"):  # 0 / 0: the hands that hold a board card
        values = np.round(sums / counts, 12)
    return values[ALL_HOLES[:, 0], ALL_HOLES[:, 1]]


def _completions(
    board: tuple[int, ...], free: list[int], rollouts: int, seed: int
) -> Iterator[np.ndarray]:
    """The completions of a canonical board to a river, (k, cards) arrays: every one at once
    when there are at most ``rollouts`` (or ``rollouts`` is 0); else batches of ``rollouts``
    drawn with the seed, each closed under the relabellings that fix the board, for as long as
    they are asked for."""
    need = BOARD_SIZES[-1] - len(board)
    if rollouts == 0 or math.comb(len(free), need) <= rollouts:
        yield np.array(list(itertools.combinations(free, need)), dtype=np.int64)
        return
    bits = int(np.bitwise_or.reduce(CARD_BITS[list(board)]))
    rng = np.random.default_rng([seed, bits])
    fixing = [  # the relabellings that fix the board: the draws are closed under them
        np.array(p)
        for p in itertools.permutations(range(4))
        if tuple(sorted(c - c % 4 + p[c % 4] for c in board)) == board
    ]
    while True:
        drawn = np.array([rng.choice(free, need, replace=False) for _ in range(rollouts)])
        yield np.concatenate([drawn - drawn % 4 + p[drawn % 4] for p in fixing])


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
    once, then read from ``<cache folder>/abstractions/preflop-v<PREFLOP_VERSION>.npz``."""
    path = cache_file("abstractions", f"preflop-v{PREFLOP_VERSION}.npz")
    with cache_lock(path):  # another process computing it: wait, then read its file
        try:
            with np.load(path) as data:
                table = data["table"]
            if table.shape == (RANKS, RANKS):
                table.setflags(write=False)
                return table
        except (OSError, KeyError, ValueError):
            pass  # absent or unreadable: computed below
        table = _computed_preflop_table()
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
        np.savez(tmp, table=table)
        os.replace(tmp, path)
    table.setflags(write=False)
    return table


def _computed_preflop_table() -> np.ndarray:
    boards, weights = kernels.canonical_boards(BOARD_SIZES[-1])
    sums, counts = np.zeros((DECK_SIZE, DECK_SIZE)), np.zeros((DECK_SIZE, DECK_SIZE))
    bar = progress_bar(boards.size, desc="preflop E[HS^2]", unit="board")
    try:
        for chunk in np.array_split(np.arange(boards.size), PREFLOP_SLICES):
            kernels.board_sums(boards[chunk], weights[chunk], sums, counts)
            bar.update(chunk.size)
    finally:
        bar.close()
    totals, combos = np.zeros((RANKS, RANKS)), np.zeros((RANKS, RANKS))
    for a, b in itertools.combinations(range(DECK_SIZE), 2):
        cell = preflop_cell(a, b)
        totals[cell] += sums[a, b]
        combos[cell] += 1
    return totals / (combos * math.comb(DECK_SIZE - HOLE_CARDS, BOARD_SIZES[-1]))


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
    path = cache_file("abstractions", f"{config.key}.npz")
    with cache_lock(path):  # another process building it: wait, then read its file
        if path.exists():
            try:
                cached = CardAbstraction.load(path)
                if cached.config == config:
                    return cached
            except (InvalidArgumentError, OSError, KeyError, ValueError) as exc:
                log.warning("cached card abstraction unreadable, building it again: %s", exc)
        abstraction = build(config, show_progress=show_progress)
        abstraction.save(path)
        return abstraction
