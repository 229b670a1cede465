"""The hold'em card abstraction (``abstraction``): E[HS^2] on exact small cases and against a
brute-force count, seeded sampling, percentile buckets, and the saved, versioned, cached file."""

from __future__ import annotations

import itertools
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import (
    ALL_HOLES,
    HOLE_INDEX,
    VERSION,
    AbstractionConfig,
    CardAbstraction,
    _canonical_strengths,
    by_relabelled_hole,
    canonical_board,
    card_abstraction,
    range_strengths,
    strength,
)
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS
from oppmodel.modeling.games.acpc.hand_rank import card_index, hand_strength
from oppmodel.modeling.games.acpc.solved import CACHE_ENV, cache_lock

DECK = [r + s for r in RANK_CHARS for s in SUIT_CHARS]
SMALL = AbstractionConfig(buckets=(3, 4, 5, 6), samples=60, rollouts=10, seed=3)


def cards(text: str) -> list[str]:
    return [text[i : i + 2] for i in range(0, len(text), 2)]


def test_a_hand_nobody_can_beat_or_tie_has_strength_one() -> None:
    assert strength(cards("As3c"), cards("KsQsJsTs2d"), rollouts=0, seed=0) == 1.0


def test_a_board_that_plays_for_everyone_ties_every_hand() -> None:
    # a royal flush on the board: every hand splits, HS = 1/2
    assert strength(cards("2c3c"), cards("AsKsQsJsTs"), rollouts=0, seed=0) == 0.25


def _river_hs(hole: list[str], board: list[str]) -> float:
    unseen = [c for c in DECK if c not in hole + board]
    ours = hand_strength(hole + board)
    scores = []
    for theirs in itertools.combinations(unseen, 2):
        other = hand_strength([*theirs, *board])
        scores.append(1.0 if ours > other else 0.5 if ours == other else 0.0)
    return sum(scores) / len(scores)


def test_the_turn_expectation_equals_a_brute_force_count_over_every_river_and_opponent() -> None:
    hole, board = cards("9h8h"), cards("Th7c2hKd")  # a straight and a flush draw
    rivers = [c for c in DECK if c not in hole + board]
    truth = sum(_river_hs(hole, [*board, r]) ** 2 for r in rivers) / len(rivers)
    assert strength(hole, board, rollouts=0, seed=0) == pytest.approx(truth, abs=1e-12)
    # fewer completions than rollouts: exact too
    assert strength(hole, board, rollouts=100, seed=5) == pytest.approx(truth, abs=1e-12)


def test_sampled_expectations_are_seeded_and_near_the_exact_one() -> None:
    hole, board = cards("AhKh"), cards("Kd7s2h")
    exact = strength(hole, board, rollouts=0, seed=0)
    sampled = [strength(hole, board, rollouts=200, seed=s) for s in (1, 1, 2)]
    assert sampled[0] == sampled[1] != sampled[2]
    assert all(abs(v - exact) < 0.05 for v in sampled)


def test_deals_that_differ_only_in_suit_names_share_their_value_and_bucket(
    small: tuple[CardAbstraction, Path],
) -> None:
    abstraction, _ = small
    rng = np.random.default_rng(4)
    for size in (0, 3, 4, 5):
        for _ in range(5):
            deal = [DECK[c] for c in rng.permutation(52)[: 2 + size]]
            relabel = dict(zip(SUIT_CHARS, rng.permutation(list(SUIT_CHARS)), strict=True))
            twin = [card[0] + relabel[card[1]] for card in deal]
            twin = [*twin[:2][::-1], *rng.permutation(twin[2:]).tolist()]  # any order too
            assert strength(deal[:2], deal[2:], rollouts=10, seed=3) == strength(
                twin[:2], twin[2:], rollouts=10, seed=3
            )
            assert abstraction.bucket(deal[:2], deal[2:]) == abstraction.bucket(twin[:2], twin[2:])


@pytest.fixture
def small(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[CardAbstraction, Path]:
    """SMALL built in a cache folder of the test's own, and its cache file."""
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    return card_abstraction(
        SMALL, show_progress=False
    ), tmp_path / "abstractions" / f"{SMALL.key}.npz"


def test_buckets_are_percentiles_of_each_round_ordered_by_strength(
    small: tuple[CardAbstraction, Path],
) -> None:
    abstraction, _ = small
    assert [len(c) for c in abstraction.cuts] == [b - 1 for b in SMALL.buckets]
    assert all(np.all(np.diff(c) >= 0) for c in abstraction.cuts)
    assert abstraction.bucket(cards("As3c"), cards("KsQsJsTs2d")) == 5  # the nuts: the top
    assert abstraction.bucket(cards("2c7d"), cards("AsKsQh9h4c")) == 0  # seven high
    rng = np.random.default_rng(11)
    for size in (0, 3, 4, 5):
        deals = [[DECK[c] for c in rng.permutation(52)[: 2 + size]] for _ in range(30)]
        values = [strength(d[:2], d[2:], rollouts=SMALL.rollouts, seed=SMALL.seed) for d in deals]
        buckets = np.array([abstraction.bucket(d[:2], d[2:]) for d in deals])
        assert np.all(np.diff(buckets[np.argsort(values, kind="stable")]) >= 0)  # never lower
        assert len(set(buckets)) > 1


def _same(a: CardAbstraction, b: CardAbstraction) -> bool:
    return a.config == b.config and all(
        np.array_equal(x, y) for x, y in zip(a.cuts, b.cuts, strict=True)
    )


def _waits_on(lock: Path) -> bool:
    """Whether a process waits for the flock of ``lock`` (a ``->`` line of /proc/locks)."""
    inode = os.stat(lock).st_ino
    text = Path("/proc/locks").read_text()
    return any("->" in line and f":{inode} " in line for line in text.splitlines())


def test_a_build_another_process_has_begun_is_waited_for_and_read_not_built_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # the test holds the lock as a process building SMALL would; the build started beside it
    # must wait, then read the file the holder wrote (cut points no build gives), not build
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    path = tmp_path / "abstractions" / f"{SMALL.key}.npz"
    theirs = CardAbstraction(SMALL, tuple(np.linspace(0.1, 0.9, b - 1) for b in SMALL.buckets))
    with ThreadPoolExecutor(1) as pool:
        with cache_lock(path):
            pending = pool.submit(card_abstraction, SMALL, show_progress=False)
            while not pending.done() and not _waits_on(path.with_suffix(".lock")):
                time.sleep(0.01)
            theirs.save(path)
        assert _same(pending.result(), theirs)


def test_an_abstraction_is_computed_once_then_read_from_the_cache(
    small: tuple[CardAbstraction, Path],
) -> None:
    first, cached = small
    stamp = cached.stat().st_mtime_ns
    assert _same(card_abstraction(SMALL, show_progress=False), first)
    assert cached.stat().st_mtime_ns == stamp  # read, not built again
    assert _same(CardAbstraction.load(cached), first)
    other = AbstractionConfig(buckets=(3, 4, 5, 7), samples=60, rollouts=10, seed=3)
    assert other.key != SMALL.key  # what changes the buckets changes the key


def test_a_file_of_another_version_is_refused_and_the_cache_builds_it_again(
    small: tuple[CardAbstraction, Path],
) -> None:
    built, path = small
    with np.load(path) as data:
        fields = dict(data)
    np.savez(path, **(fields | {"version": 0}))
    with pytest.raises(InvalidArgumentError, match=f"version 0, not {VERSION}") as caught:
        CardAbstraction.load(path)
    assert caught.value.field == "abstraction"
    assert _same(card_abstraction(SMALL, show_progress=False), built)  # built again, same seed
    assert _same(CardAbstraction.load(path), built)


@pytest.mark.parametrize(
    ("make", "field"),
    [
        (lambda: AbstractionConfig(buckets=(8, 8, 8)), "buckets"),
        (lambda: AbstractionConfig(buckets=(8, 0, 8, 8)), "buckets"),
        (lambda: AbstractionConfig(samples=0), "samples"),
        (lambda: AbstractionConfig(rollouts=-1), "rollouts"),
        (lambda: strength(cards("As"), [], rollouts=0, seed=0), "hole"),
        (lambda: strength(cards("AsKs"), cards("QsJs"), rollouts=0, seed=0), "board"),
        (lambda: strength(cards("AsKs"), cards("QsJsAs"), rollouts=0, seed=0), "board"),
        (lambda: strength(cards("AsKx"), [], rollouts=0, seed=0), "card"),
    ],
)
def test_bad_input_names_its_field(make, field: str) -> None:
    with pytest.raises(InvalidArgumentError) as caught:
        make()
    assert caught.value.field == field


def test_a_whole_range_gets_the_buckets_each_hand_gets_alone(
    small: tuple[CardAbstraction, Path],
) -> None:
    """range_buckets (every hand of a board at once: what a blueprint asks for an opponent's
    range) answers bucket's answer for each hand, -1 for the hands that hold a board card; on
    a monotone flop, whose suit relabellings that fix it the draws are closed under, too."""
    abstraction, _ = small
    rng = np.random.default_rng(8)
    boards = [[DECK[c] for c in rng.permutation(52)[:size]] for size in (0, 3, 4, 5)]
    for board in [*boards, ["Ks", "7s", "2s"], ["9h", "9d", "4c"]]:
        buckets = abstraction.range_buckets(tuple(card_index(c) for c in board))
        assert buckets.shape == (len(ALL_HOLES),)
        for k in range(0, len(ALL_HOLES), 29):
            hole = [DECK[c] for c in ALL_HOLES[k]]
            expected = -1 if set(hole) & set(board) else abstraction.bucket(hole, board)
            assert buckets[k] == expected
    spades = tuple(card_index(c) for c in ("Ks", "7s", "2s"))
    same = abstraction.range_buckets(spades)
    for a, b in [("AhQd", "AdQh"), ("8c8h", "8d8c"), ("Jh3c", "Jc3d")]:  # twins on that flop
        rows = [HOLE_INDEX[tuple(sorted(card_index(x[i : i + 2]) for i in (0, 2)))] for x in (a, b)]
        assert same[rows[0]] == same[rows[1]]


def test_a_river_is_valued_on_its_board_as_the_canonical_board_values_it() -> None:
    """range_strengths' river path (HS^2 on the board itself) gives, bit for bit, what the
    general path gives: the canonical board's values read through the relabelling."""
    rng = np.random.default_rng(11)
    rivers = [tuple(rng.permutation(52)[:5].tolist()) for _ in range(25)]
    named = ["AsKsQsJsTs", "9h9d9c4c4s", "2c3d4h5s7c", "AhAdKsKcQh"]  # plays for all; full; pairs
    rivers += [tuple(card_index(c) for c in cards(text)) for text in named]
    for river in rivers:
        relabel, canonical = canonical_board(river)
        general = by_relabelled_hole(_canonical_strengths(canonical, 100, 0), relabel)
        fast = range_strengths(river, rollouts=100, seed=0)
        assert np.array_equal(fast, general, equal_nan=True), river
        assert not fast.flags.writeable
