"""The compiler from an ACPC ``limit`` game definition to a :class:`LimitGame`.

The input is a parsed game definition (:class:`oppmodel.modeling.games.acpc.gamedef.GameDef`):
several betting rounds, board cards revealed between rounds, a raise size and a raise cap
(``maxRaises``) per round, the first player of each round, blinds or antes, any number of hole
cards, the dealer's deck. The compiler walks every betting sequence of the reference dealer's rules
(:mod:`oppmodel.modeling.games.acpc.betting`, the one implementation of them) and every deal; a
showdown gives the pot to the best poker hand over hole and board cards, equal best hands
splitting it (:mod:`oppmodel.modeling.games.acpc.hand_rank`).

A game that is too large to enumerate (public nodes x deals above :data:`MAX_STATES`, or more
than :data:`MAX_DEALS` deals), no-limit betting, an unbounded raise cap, and stacks small enough
to bind are refused with :class:`~oppmodel.modeling.errors.UnknownGameError`, which names the size
and the bound, or the rule. Reference: the ACPC reference server (project_acpc_server 1.0.42).
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.betting import (
    NUM_ACTIONS,
    BettingState,
    after,
    betting_unsupported,
    legal_actions,
    opening,
)
from oppmodel.modeling.games.acpc.bundled import (
    BUNDLED_GAMES,
    GAMES_FOLDER,
    game_path,
    short_name,
)
from oppmodel.modeling.games.acpc.gamedef import LIMIT, UINT8_MAX, GameDef, parse_game_def
from oppmodel.modeling.games.acpc.hand_rank import hand_strength
from oppmodel.modeling.games.acpc.limit_game import LimitGame, LimitTree

MAX_DEALS = 2_000_000
MAX_STATES = 50_000_000  # public nodes x deals: what one sweep of a kernel touches
MAX_NODES = 2_000_000


def limit_game(name_or_path: str | Path) -> LimitGame:
    """The compiled game a short name (``leduc3p``) or a game file names (compiled once per
    distinct file content)."""
    path = game_path(name_or_path)
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except OSError as exc:
        raise InvalidArgumentError("gamefile", f"cannot read {path}: {exc.strerror}") from exc
    bundled = short_name(path)
    return _compiled(text, bundled or path.name, None if bundled else str(name_or_path))


def bundled_name(gamedef: GameDef) -> str | None:
    """The short name of the bundled game with exactly these rules (whatever file they were read
    from), or None."""
    for name, file in BUNDLED_GAMES.items():
        text = (GAMES_FOLDER / file).read_text(encoding="ascii")
        if parse_game_def(text) == gamedef:
            return name
    return None


def limit_game_of(gamedef: GameDef) -> LimitGame:
    """The compiled game of parsed rules: the bundled game's (with its short name) when the rules
    are a bundled game's, else compiled under the name of the file they were read from, or
    ``acpc`` for rules given as text (once per distinct rules and file)."""
    name = bundled_name(gamedef)
    if name is not None:
        return limit_game(name)
    source = gamedef.source
    return _compiled(gamedef.to_text(), Path(source).name if source else "acpc", source)


@functools.lru_cache(maxsize=16)
def _compiled(text: str, name: str, source: str | None) -> LimitGame:
    return compile_limit_game(replace(parse_game_def(text), source=source), name)


def unsupported(gamedef: GameDef) -> list[str]:
    """Rules of ``gamedef`` the compiler cannot model (empty when it can)."""
    if gamedef.betting != LIMIT:
        return betting_unsupported(gamedef)
    problems = []
    for r in range(gamedef.num_rounds):
        if gamedef.max_raises[r] >= UINT8_MAX:
            problems.append(f"round {r + 1} has no raise cap (maxRaises), so no finite tree")
        if gamedef.raise_size[r] <= 0:
            problems.append(f"round {r + 1} has raiseSize {gamedef.raise_size[r]} (must be > 0)")
    if any(b < 0 for b in gamedef.blind):
        problems.append("a negative blind")
    return problems or betting_unsupported(gamedef)


def num_deals(gamedef: GameDef) -> int:
    """How many deals (card groups as sets) the game has."""
    remaining, count = gamedef.num_suits * gamedef.num_ranks, 1
    for size in [gamedef.num_hole_cards] * gamedef.num_players + list(gamedef.num_board_cards):
        count *= math.comb(remaining, size)
        remaining -= size
    return count


def compile_limit_game(gamedef: GameDef, name: str = "acpc") -> LimitGame:
    """Compile a limit game; UnknownGameError if it is unsupported or too large to enumerate."""
    problems = unsupported(gamedef)
    if problems:
        raise UnknownGameError("game", f"cannot model {name}: " + "; ".join(problems))
    deals = num_deals(gamedef)
    if deals > MAX_DEALS:
        raise UnknownGameError(
            "game", f"{name} has {deals:,} deals, above the bound of {MAX_DEALS:,} (too large)"
        )
    nodes = betting_tree(gamedef, name, deals)
    deal_cards = _enumerate_deals(gamedef)
    deal_view, view_strings = _views(gamedef, gamedef.deck, deal_cards)
    return assemble(gamedef, name, nodes, deal_cards, deal_view, view_strings)


def betting_tree(gamedef: GameDef, name: str, deals: int) -> list[tuple[BettingState, int, int]]:
    """Every public state in depth-first pre-order, as (state, parent id, action);
    UnknownGameError if public nodes x ``deals`` passes :data:`MAX_STATES`."""
    nodes = _build_tree(gamedef, name, deals)
    if len(nodes) * deals > MAX_STATES:
        raise UnknownGameError(
            "game",
            f"{name} has {len(nodes):,} public nodes x {deals:,} deals = "
            f"{len(nodes) * deals:,} states, above the bound of {MAX_STATES:,} (too large)",
        )
    return nodes


def _build_tree(gamedef: GameDef, name: str, deals: int) -> list[tuple[BettingState, int, int]]:
    """Every public state in depth-first pre-order, as (state, parent id, action)."""
    out: list[tuple[BettingState, int, int]] = []
    stack: list[tuple[BettingState, int, int]] = [(opening(gamedef), -1, -1)]
    bound = min(MAX_NODES, MAX_STATES // deals + 1)
    while stack:
        state, parent, action = stack.pop()
        me = len(out)
        out.append((state, parent, action))
        if len(out) > bound:
            raise UnknownGameError(
                "game",
                f"{name} has more than {bound:,} public nodes with {deals:,} deals, above the "
                f"bound of {MAX_STATES:,} states (too large)",
            )
        for a in reversed(legal_actions(gamedef, state)):  # popped in order f, c, r
            stack.append((after(gamedef, state, a), me, a))
    return out


def _enumerate_deals(gamedef: GameDef) -> np.ndarray:
    """Every deal as (D, cards): each group's cards as a sorted set, groups in dealing order."""
    sizes = [gamedef.num_hole_cards] * gamedef.num_players + list(gamedef.num_board_cards)
    deck = range(gamedef.num_suits * gamedef.num_ranks)
    rows: list[tuple[int, ...]] = []

    def extend(prefix: tuple[int, ...], group: int) -> None:
        if group == len(sizes):
            rows.append(prefix)
            return
        rest = [c for c in deck if c not in prefix]
        for combo in itertools.combinations(rest, sizes[group]):
            extend(prefix + combo, group + 1)

    extend((), 0)
    return np.array(rows, dtype=np.int64).reshape(len(rows), sum(sizes))


def _views(
    gamedef: GameDef, deck: tuple[str, ...], deal_cards: np.ndarray
) -> tuple[np.ndarray, tuple[tuple[str, ...], ...]]:
    """deal_view (R, D, n) and, per round, the string of every view."""
    n, h, rounds = gamedef.num_players, gamedef.num_hole_cards, gamedef.num_rounds
    board_at = np.cumsum([0, *gamedef.num_board_cards]) + n * h
    deal_view = np.empty((rounds, len(deal_cards), n), dtype=np.int64)
    strings = []
    for r in range(rounds):
        index: dict[tuple[int, ...], int] = {}
        texts: list[str] = []
        for d, row in enumerate(deal_cards):
            board = tuple(int(c) for c in row[n * h : board_at[r + 1]])
            for p in range(n):
                key = tuple(int(c) for c in row[p * h : (p + 1) * h]) + board
                w = index.get(key)
                if w is None:
                    w = index[key] = len(texts)
                    texts.append(_view_string(gamedef, deck, row, p, r))
                deal_view[r, d, p] = w
        strings.append(tuple(texts))
    return deal_view, tuple(strings)


def _view_string(gamedef: GameDef, deck: tuple[str, ...], row: np.ndarray, p: int, r: int) -> str:
    n, h = gamedef.num_players, gamedef.num_hole_cards
    text = "".join(deck[c] for c in row[p * h : (p + 1) * h])
    start = n * h
    for k in range(r + 1):
        size = gamedef.num_board_cards[k]
        if k > 0 or size > 0:
            text += "/" + "".join(deck[c] for c in row[start : start + size])
        start += size
    return text


def pot_shares(
    gamedef: GameDef, deck: tuple[str, ...], deal_cards: np.ndarray, classes: list[int]
) -> np.ndarray:
    """share[class, d, p]: the fraction of the pot position p wins when the positions in the
    bit mask ``classes[class]`` are still in at the end of the hand under deal d."""
    n, h = gamedef.num_players, gamedef.num_hole_cards
    board = deal_cards[:, n * h :]
    rank = np.zeros((len(deal_cards), n), dtype=np.int64)
    if any(mask.bit_count() > 1 for mask in classes):  # a showdown can happen
        strength = [
            [
                hand_strength([deck[c] for c in (*row[p * h : (p + 1) * h], *board[d])])
                for p in range(n)
            ]
            for d, row in enumerate(deal_cards)
        ]
        dense = {s: i for i, s in enumerate(sorted({s for row in strength for s in row}))}
        rank[:] = [[dense[s] for s in row] for row in strength]
    share = np.zeros((len(classes), len(deal_cards), n))
    for m, mask in enumerate(classes):
        live = [p for p in range(n) if mask >> p & 1]
        if len(live) == 1:
            share[m, :, live[0]] = 1.0
            continue
        best = rank[:, live].max(axis=1)
        winners = rank[:, live] == best[:, None]
        share[m][:, live] = winners / winners.sum(axis=1, keepdims=True)
    return share


def _infosets(
    node_player: np.ndarray, node_round: np.ndarray, num_views: list[int], n: int
) -> tuple[np.ndarray, list[list[int]], list[list[int]]]:
    """Each position's information sets, numbered in node order: a node of its with ``v`` views
    in its round holds ``v`` of them, one per view. Returns each node's first (-1 at terminals),
    and per position each information set's node and view."""
    node_base = np.full(len(node_player), -1, dtype=np.int64)
    infoset_node: list[list[int]] = [[] for _ in range(n)]
    infoset_view: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(node_player):
        if p < 0:
            continue
        node_base[i] = len(infoset_node[p])
        views = num_views[node_round[i]]
        infoset_node[p].extend([i] * views)
        infoset_view[p].extend(range(views))
    return node_base, infoset_node, infoset_view


def assemble(
    gamedef: GameDef,
    name: str,
    nodes: list[tuple[BettingState, int, int]],
    deal_cards: np.ndarray,
    deal_view: np.ndarray,
    view_strings: tuple[tuple[str, ...], ...],
) -> LimitGame:
    """The game of a betting tree (:func:`betting_tree`) and its deals, equally likely: their
    cards (holes by position, then the board), each position's view per round and the views'
    strings. A compiled game passes every deal and the cards seen; an abstract game
    (``holdem_abstract``) a sample of deals and the buckets seen."""
    n = gamedef.num_players
    deck = gamedef.deck
    num_nodes = len(nodes)
    node_player = np.array([s.player for s, _, _ in nodes], dtype=np.int64)
    node_round = np.array([s.round for s, _, _ in nodes], dtype=np.int64)
    node_action = np.array([a for _, _, a in nodes], dtype=np.int64)
    node_children = np.full((num_nodes, NUM_ACTIONS), -1, dtype=np.int64)
    depth = np.zeros(num_nodes, dtype=np.int64)
    for i, (_, parent, action) in enumerate(nodes):
        if parent >= 0:
            node_children[parent, action] = i
            depth[i] = depth[parent] + 1
    terminals = [i for i in range(num_nodes) if node_player[i] < 0]
    node_terminal = np.full(num_nodes, -1, dtype=np.int64)
    node_terminal[terminals] = np.arange(len(terminals))
    masks = [sum(1 << p for p in range(n) if not nodes[i][0].folded[p]) for i in terminals]
    classes = sorted(set(masks))
    terminal_class = np.array([classes.index(m) for m in masks], dtype=np.int64)
    terminal_spent = np.array([nodes[i][0].spent for i in terminals], dtype=float).reshape(-1, n)
    terminal_pot = terminal_spent.sum(axis=1)

    num_views = [len(v) for v in view_strings]
    node_base, infoset_node, infoset_view = _infosets(node_player, node_round, num_views, n)

    share = pot_shares(gamedef, deck, deal_cards, classes)
    tree = LimitTree(
        node_player=node_player,
        node_round=node_round,
        node_children=node_children,
        node_action=node_action,
        node_parent=np.array([parent for _, parent, _ in nodes], dtype=np.int64),
        node_depth=depth,
        node_terminal=node_terminal,
        node_base=node_base,
        terminal_spent=terminal_spent,
        terminal_pot=terminal_pot,
        terminal_class=terminal_class,
        share=share,
        deal_view=deal_view,
        round_views=np.array(num_views, dtype=np.int64),
        max_depth=int(depth.max()),
    )
    frozen = [np.array(x, dtype=np.int64) for x in (*infoset_node, *infoset_view)]
    for a in (*tree[:-1], deal_cards, *frozen):
        a.setflags(write=False)
    bettings = tuple(s.betting for s, _, _ in nodes)
    return LimitGame(
        name=name,
        gamedef=gamedef,
        deck=deck,
        bettings=bettings,
        tree=tree,
        deal_cards=deal_cards,
        view_strings=view_strings,
        infosets_per_position=tuple(len(x) for x in infoset_node),
        infoset_node=tuple(frozen[:n]),
        infoset_view=tuple(frozen[n:]),
        _node_by_betting={b: i for i, b in enumerate(bettings)},
        _view_by_string=tuple({s: w for w, s in enumerate(v)} for v in view_strings),
    )
