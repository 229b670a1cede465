"""The abstract game of limit hold'em: exact betting, cards seen through the card abstraction's
buckets, and chance drawn from a seeded sample of deals.

Hold'em's deals (about 5.6e13 heads-up) cannot be enumerated, so the abstract game is a
:class:`~oppmodel.modeling.games.acpc.limit_game.LimitGame` like a compiled Leduc, built by the
same :func:`~oppmodel.modeling.games.acpc.compiler.assemble` from the same betting tree, with two
differences:

* **Views are buckets.** What a position sees in round r is the bucket of its hole and the board
  of that round (:class:`~oppmodel.modeling.games.acpc.abstraction.CardAbstraction`, E[HS^2]
  percentiles). With ``recall="imperfect"`` (the default) a view is that round's bucket alone;
  with ``"perfect"`` the buckets of every round so far. Information sets are (view, exact
  betting): their strings, the keys of strategy files, are ``<buckets>:<betting>``, the buckets
  written ``/``-separated as the card views are: ``"5:rc/cr"`` (imperfect recall: bucket 5 of the
  flop, facing a raise after a check), ``"2/5:rc/cr"`` (perfect recall: bucket 2 preflop, then 5).
  Bucket 0 is the weakest.
* **Chance is a sample.** The deals are ``deals`` deals drawn with ``seed``, equally likely; the
  payoffs are the real showdowns of their cards. As the sample grows the abstract game tends to
  the game with the abstraction's information over all deals; every solver and exact measure of
  the project (CFR, MCCFR, nash_conv) runs on it unchanged. nash_conv here is the exploitability
  inside the abstraction and over the sample, not the real game's.

The game is named ``<game>@<key>``, the key a hash of the rules, the abstraction (its own key and
format version), the sample and the recall, so that strategy files and solver states are tied to
the abstraction they were solved in. The buckets of the sample take a while (the flop's E[HS^2]
is sampled: ``rollouts`` boards per bucket), so they are computed once, with a progress bar on a
terminal, and cached in ``<cache folder>/abstractions/deals-<key>.npz``.

The betting tree must fit in memory as arrays: heads-up limit hold'em has 16,584 public nodes;
3-player has 23.9 million (9.7 million decisions), above the compiler's node bound, and is
refused with the size by :func:`abstract_game`. :func:`lazy_abstract_game` gives the same game
(name, deals, views) as a :class:`~oppmodel.modeling.games.acpc.lazy_game.LazyGame`, whose
betting is walked by its rules and whose information sets exist once visited
(:mod:`oppmodel.modeling.solve.lazy_mccfr` solves it).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from oppmodel.clients.progress import progress_bar
from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc import abstraction
from oppmodel.modeling.games.acpc.abstraction import (
    BOARD_SIZES,
    HOLE_CARDS,
    AbstractionConfig,
    CardAbstraction,
    card_abstraction,
)
from oppmodel.modeling.games.acpc.betting import BettingState, after, legal_actions, opening
from oppmodel.modeling.games.acpc.bundled import game_path, short_name
from oppmodel.modeling.games.acpc.compiler import MAX_NODES, assemble, betting_tree
from oppmodel.modeling.games.acpc.gamedef import GameDef, parse_game_def
from oppmodel.modeling.games.acpc.lazy_game import LazyGame, all_masks_shares
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import cache_file

RECALLS = ("imperfect", "perfect")
MAX_INFOSETS = 20_000_000  # information sets of all positions: three (n, I, 3) float tables


@dataclass(frozen=True)
class AbstractGameConfig:
    """The card abstraction, the sample of deals (size and seed) and the recall."""

    abstraction: AbstractionConfig = field(default_factory=AbstractionConfig)
    deals: int = 20_000
    seed: int = 0
    recall: str = "imperfect"

    def __post_init__(self) -> None:
        if not isinstance(self.deals, int) or self.deals < 1:
            raise InvalidArgumentError("deals", f"must be at least 1, got {self.deals!r}")
        if self.recall not in RECALLS:
            raise InvalidArgumentError("recall", f"{self.recall!r} is not one of {RECALLS}")


def holdem_unsupported(gamedef: GameDef) -> list[str]:
    """What makes ``gamedef`` no hold'em this abstraction reads (empty when it is one): a
    52-card deck, two hole cards, boards of 0, 3, 1, 1 cards."""
    problems = []
    if (gamedef.num_suits, gamedef.num_ranks) != (4, 13):
        problems.append("the card abstraction needs the 52-card deck")
    if gamedef.num_hole_cards != HOLE_CARDS:
        problems.append(f"the card abstraction needs {HOLE_CARDS} hole cards")
    seen = tuple(itertools.accumulate(gamedef.num_board_cards))
    if seen != BOARD_SIZES:
        problems.append(f"the card abstraction needs boards of {BOARD_SIZES} cards by round")
    return problems


def abstract_game(game: str | Path, config: AbstractGameConfig | None = None) -> LimitGame:
    """The abstract game of a hold'em game file or short name (``holdem2p``) under ``config``
    (the defaults if None); UnknownGameError if the rules are not hold'em's or the betting tree
    is too large (see the module's text)."""
    config = config or AbstractGameConfig()
    gamedef, base = _holdem_rules(game)
    key = _key(gamedef, config)
    name = f"{base}@{key}"
    count = public_nodes(gamedef)
    if count > MAX_NODES:
        raise UnknownGameError(
            "game",
            f"{name} has {count:,} public nodes, above the bound of {MAX_NODES:,} (too large "
            "for a betting tree of arrays: lazy_abstract_game walks it by its rules)",
        )
    nodes = betting_tree(gamedef, name, 1)
    sizes = _views_per_round(config)
    infosets = sum(sizes[s.round] for s, _, _ in nodes if s.player >= 0)
    if infosets > MAX_INFOSETS:
        raise UnknownGameError(
            "game",
            f"{name} has {infosets:,} information sets, above the bound of {MAX_INFOSETS:,} "
            "(fewer buckets, or imperfect recall)",
        )
    deal_cards, deal_view, strings = _deals(gamedef, config, key)
    return assemble(gamedef, name, nodes, deal_cards, deal_view, strings)


def lazy_abstract_game(game: str | Path, config: AbstractGameConfig | None = None) -> LazyGame:
    """The abstract game of a hold'em game as a :class:`LazyGame` (the betting walked by its
    rules, no tree of arrays: for 3-player hold'em), with the same name, deals and views as
    :func:`abstract_game` would give; UnknownGameError if the rules are not hold'em's."""
    config = config or AbstractGameConfig()
    gamedef, base = _holdem_rules(game)
    key = _key(gamedef, config)
    deal_cards, deal_view, strings = _deals(gamedef, config, key)
    share = all_masks_shares(gamedef, deal_cards)
    return LazyGame(f"{base}@{key}", gamedef, deal_cards, deal_view, share, strings)


def needs_lazy(game: str | Path) -> bool:
    """Whether a hold'em game's betting tree is too large for :func:`abstract_game` (more than
    the compiler's bound of public nodes), so that it is solved as a :class:`LazyGame`."""
    return public_nodes(_holdem_rules(game)[0]) > MAX_NODES


def _holdem_rules(game: str | Path) -> tuple[GameDef, str]:
    """The rules of a hold'em game file or short name, and its base name; UnknownGameError if
    they are not hold'em's."""
    path = game_path(game)
    gamedef = parse_game_def(path.read_text(encoding="ascii", errors="replace"))
    base = short_name(path) or path.name
    problems = holdem_unsupported(gamedef)
    if problems:
        raise UnknownGameError("game", f"{base} is no hold'em game: " + "; ".join(problems))
    return gamedef, base


def _deals(
    gamedef: GameDef, config: AbstractGameConfig, key: str
) -> tuple[np.ndarray, np.ndarray, tuple[tuple[str, ...], ...]]:
    """The sample's cards, each position's view per round and deal (R, D, n), and the views'
    strings per round (the buckets, ``/``-separated under perfect recall)."""
    cards = card_abstraction(config.abstraction)
    deal_cards, buckets = _sample(gamedef, config, cards, key)
    deal_view = np.empty((gamedef.num_rounds, config.deals, gamedef.num_players), dtype=np.int64)
    strings = []
    for r in range(gamedef.num_rounds):
        first = view_rounds(config, r)[0]
        deal_view[r] = view_index(config, buckets[:, :, first : r + 1], first)
        strings.append(view_strings(config, r))
    return deal_cards, deal_view, tuple(strings)


def view_rounds(config: AbstractGameConfig, round_: int) -> range:
    """The rounds whose buckets a view of ``round_`` holds: that round alone under imperfect
    recall, every round so far under perfect."""
    return range(round_ if config.recall == "imperfect" else 0, round_ + 1)


def view_index(config: AbstractGameConfig, buckets: np.ndarray, first: int) -> np.ndarray:
    """The index of each view among :func:`view_strings` from its buckets (the last axis: the
    rounds from ``first`` on), an earlier round's bucket weighing the later rounds' counts."""
    out = np.zeros(buckets.shape[:-1], dtype=np.int64)
    for k in range(buckets.shape[-1]):
        out = out * config.abstraction.buckets[first + k] + buckets[..., k]
    return out


def view_strings(config: AbstractGameConfig, round_: int) -> tuple[str, ...]:
    """The views of ``round_`` in index order, as information-state strings write them: the
    buckets of :func:`view_rounds`, ``/``-separated."""
    ranges = [range(config.abstraction.buckets[r]) for r in view_rounds(config, round_)]
    return tuple("/".join(map(str, s)) for s in itertools.product(*ranges))


def public_nodes(gamedef: GameDef) -> int:
    """How many public nodes the betting tree has, counted without building it (states that
    differ only in their betting string root equal subtrees)."""

    @functools.cache
    def below(state: BettingState) -> int:
        return 1 + sum(
            below(after(gamedef, state, a)._replace(betting=""))
            for a in legal_actions(gamedef, state)
        )

    return below(opening(gamedef))


def _views_per_round(config: AbstractGameConfig) -> list[int]:
    b = config.abstraction.buckets
    if config.recall == "imperfect":
        return list(b)
    return [int(np.prod(b[: r + 1])) for r in range(len(b))]


def _key(gamedef: GameDef, config: AbstractGameConfig) -> str:
    text = (
        f"{gamedef.to_text()} abstraction v{abstraction.VERSION} {config.abstraction.key} "
        f"deals {config.deals} seed {config.seed} recall {config.recall}"
    )
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _sample(
    gamedef: GameDef, config: AbstractGameConfig, cards: CardAbstraction, key: str
) -> tuple[np.ndarray, np.ndarray]:
    """The sample's cards (D, holes by position then the board, each group sorted) and buckets
    (D, n, rounds): from the cache, else drawn and bucketed now (with a progress bar)."""
    path = cache_file("abstractions", f"deals-{key}.npz")
    n, rounds = gamedef.num_players, gamedef.num_rounds
    try:
        with np.load(path) as data:
            deal_cards, buckets = data["cards"], data["buckets"]
        if buckets.shape == (config.deals, n, rounds):
            return deal_cards, buckets
    except (OSError, KeyError, ValueError):
        pass  # absent or unreadable: drawn below
    rng = np.random.default_rng(config.seed)
    names = gamedef.deck
    width = n * HOLE_CARDS + BOARD_SIZES[-1]
    deal_cards = np.empty((config.deals, width), dtype=np.int64)
    buckets = np.empty((config.deals, n, rounds), dtype=np.int64)
    groups = [(p * HOLE_CARDS, (p + 1) * HOLE_CARDS) for p in range(n)]
    start = n * HOLE_CARDS
    groups += [(start + a, start + b) for a, b in itertools.pairwise(BOARD_SIZES)]
    bar = progress_bar(config.deals, desc=f"bucketing {config.deals} deals", unit="deal")
    try:
        for d in range(config.deals):
            row = rng.permutation(len(names))[:width]
            for a, b in groups:
                row[a:b] = np.sort(row[a:b])
            deal_cards[d] = row
            board = [names[c] for c in row[start:]]
            for p, (a, b) in enumerate(groups[:n]):
                hole = [names[c] for c in row[a:b]]
                for r, size in enumerate(BOARD_SIZES):
                    buckets[d, p, r] = cards.bucket(hole, board[:size])
            bar.update()
    finally:
        bar.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp.npz")
    np.savez(tmp, cards=deal_cards, buckets=buckets)
    os.replace(tmp, path)
    return deal_cards, buckets
