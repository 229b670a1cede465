"""A pure-Python oracle for limit games, written apart from the compiler: slow, simple, exact.

It plays hands by the reference dealer's rules read literally (``numCalled`` scans the round's
actions backwards: a call counts, a fold is skipped, a raise counts and stops), deals every
*ordered* deal of the deck (the compiler deals sets), enumerates every history, and computes
expected values and best responses from histories grouped by information-state string. For
tiny games, :func:`brute_force_best_response` also tries every pure strategy.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction

from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.games.acpc.hand_rank import hand_strength

Policy = dict[tuple[int, str], tuple[float, float, float]]  # (position, infostate) -> f, c, r


@dataclass
class Hand:
    """One hand in progress: the deal and the actions so far, per round."""

    game: GameDef
    hole: tuple[tuple[str, ...], ...]
    board: tuple[tuple[str, ...], ...]
    rounds: list[list[tuple[int, str]]] = field(default_factory=lambda: [[]])

    @property
    def round(self) -> int:
        return len(self.rounds) - 1

    @functools.cached_property
    def spent(self) -> list[int]:
        spent = list(self.game.blind)
        for r, actions in enumerate(self.rounds):
            for p, a in actions:
                if a == "c":
                    spent[p] = max(spent)
                elif a == "r":
                    spent[p] = max(spent) + self.game.raise_size[r]
        return spent

    @functools.cached_property
    def folded(self) -> list[bool]:
        out = [False] * self.game.num_players
        for actions in self.rounds:
            for p, a in actions:
                out[p] = out[p] or a == "f"
        return out

    @functools.cached_property
    def over(self) -> bool:
        folded = self.folded
        if folded.count(False) == 1:
            return True
        return self._round_closed() and self.round == self.game.num_rounds - 1

    def _round_closed(self) -> bool:
        called = 0
        for _, a in reversed(self.rounds[-1]):
            if a == "f":
                continue
            called += 1
            if a == "r":
                break
        return called >= self.folded.count(False)

    @functools.cached_property
    def player(self) -> int:
        n, folded = self.game.num_players, self.folded
        actions = self.rounds[-1]
        p = self.game.first_player[self.round] if not actions else (actions[-1][0] + 1) % n
        while folded[p]:
            p = (p + 1) % n
        return p

    @functools.cached_property
    def legal(self) -> str:
        p, spent = self.player, self.spent
        raises = sum(a == "r" for _, a in self.rounds[-1])
        return (
            ("f" if spent[p] < max(spent) else "")
            + "c"
            + ("r" if raises < self.game.max_raises[self.round] else "")
        )

    def act(self, action: str) -> Hand:
        rounds = [list(r) for r in self.rounds]
        rounds[-1].append((self.player, action))
        hand = Hand(self.game, self.hole, self.board, rounds)
        if hand.over or not hand._round_closed():
            return hand
        return Hand(self.game, self.hole, self.board, [*rounds, []])

    def betting(self) -> str:
        return "/".join("".join(a for _, a in actions) for actions in self.rounds)

    def infostate(self, deck: tuple[str, ...]) -> str:
        p = self.player

        def cards(group: tuple[str, ...]) -> str:
            return "".join(sorted(group, key=deck.index))

        view = cards(self.hole[p])
        for r in range(self.round + 1):
            if r > 0 or self.game.num_board_cards[0] > 0:
                view += "/" + cards(self.board[r])
        return f"{view}:{self.betting()}"

    def payoffs(self) -> list[Fraction]:
        spent, folded = self.spent, self.folded
        live = [p for p in range(self.game.num_players) if not folded[p]]
        if len(live) > 1:
            board = tuple(c for group in self.board for c in group)
            strength = {p: _strength(self.hole[p] + board) for p in live}
            best = max(strength.values())
            live = [p for p in live if strength[p] == best]
        pot = sum(spent)
        return [Fraction(pot, len(live)) * (p in live) - spent[p] for p in range(len(spent))]


@functools.cache
def _strength(cards: tuple[str, ...]) -> int:
    return hand_strength(cards)


def deals(game: GameDef) -> Iterator[Hand]:
    """Every ordered deal, each as a fresh hand."""
    n, h = game.num_players, game.num_hole_cards
    sizes = [h] * n + list(game.num_board_cards)
    for cards in itertools.permutations(game.deck, sum(sizes)):
        groups, start = [], 0
        for size in sizes:
            groups.append(tuple(cards[start : start + size]))
            start += size
        yield Hand(game, tuple(groups[:n]), tuple(groups[n:]))


def _histories(hand: Hand) -> Iterator[tuple[tuple[str, ...], Hand]]:
    """(actions, hand) for every history of one deal, the deal itself first."""
    stack: list[tuple[tuple[str, ...], Hand]] = [((), hand)]
    while stack:
        actions, hand = stack.pop()
        yield actions, hand
        if not hand.over:
            stack.extend(((*actions, a), hand.act(a)) for a in hand.legal)


def expected_values(game: GameDef, policy: Policy) -> list[float]:
    """Exact expected payoffs (as floats) by summing over deals and histories."""
    total = [0.0] * game.num_players
    count = 0
    for hand in deals(game):
        count += 1
        stack = [(hand, 1.0)]
        while stack:
            hand, prob = stack.pop()
            if hand.over:
                for p, x in enumerate(hand.payoffs()):
                    total[p] += prob * float(x)
                continue
            probs = policy[hand.player, hand.infostate(game.deck)]
            for a in hand.legal:
                stack.append((hand.act(a), prob * probs["fcr".index(a)]))
    return [x / count for x in total]


def best_response_value(game: GameDef, policy: Policy, player: int) -> float:
    """Value of a best response of ``player``: for each of its information sets, deepest first,
    the action with the largest sum over the set's histories of others' reach x value below."""
    members: dict[str, list[tuple[Hand, float]]] = {}  # infostate -> [(hand, others' reach)]
    roots = []
    for deal in deals(game):
        roots.append(deal)
        stack = [(deal, 1.0)]
        while stack:
            hand, reach = stack.pop()
            if hand.over:
                continue
            p = hand.player
            key = hand.infostate(game.deck)
            if p == player:
                members.setdefault(key, []).append((hand, reach))
            probs = policy[p, key]
            for a in hand.legal:
                stack.append((hand.act(a), reach * (1.0 if p == player else probs["fcr".index(a)])))
    choice: dict[str, str] = {}
    memo: dict[tuple, float] = {}

    def value(hand: Hand) -> float:
        """Value for ``player`` of a history when it plays ``choice`` and the others the policy."""
        history = (hand.hole, hand.board, hand.betting())
        if history not in memo:
            memo[history] = _value(hand)
        return memo[history]

    def _value(hand: Hand) -> float:
        if hand.over:
            return float(hand.payoffs()[player])
        key = hand.infostate(game.deck)
        if hand.player == player:
            if key not in choice:
                choose(key)
            return value(hand.act(choice[key]))
        probs = policy[hand.player, key]
        return sum(probs["fcr".index(a)] * value(hand.act(a)) for a in hand.legal)

    def choose(key: str) -> None:
        legal = members[key][0][0].legal
        sums = {a: sum(w * value(h.act(a)) for h, w in members[key]) for a in legal}
        choice[key] = max(legal, key=lambda a: (sums[a], -legal.index(a)))

    return sum(value(deal) for deal in roots) / len(roots)


def infostates(game: GameDef) -> dict[int, set[str]]:
    """Every information-state string of every position."""
    out: dict[int, set[str]] = {p: set() for p in range(game.num_players)}
    for deal in deals(game):
        for _, hand in _histories(deal):
            if not hand.over:
                out[hand.player].add(hand.infostate(game.deck))
    return out


def brute_force_best_response(game: GameDef, policy: Policy, player: int) -> float:
    """The best value over every pure strategy of ``player`` (tiny games only)."""
    keys = sorted(infostates(game)[player])
    legal = {}
    for deal in deals(game):
        for _, hand in _histories(deal):
            if not hand.over and hand.player == player:
                legal[hand.infostate(game.deck)] = hand.legal
    best = -float("inf")
    for picks in itertools.product(*(legal[k] for k in keys)):
        pure = dict(policy)
        for k, a in zip(keys, picks, strict=True):
            pure[player, k] = tuple(float(a == x) for x in "fcr")
        best = max(best, expected_values(game, pure)[player])
    return best


def cfr_reference(
    game: GameDef, iterations: int, *, algorithm: str, delay: int, alpha=1.5, beta=0.0, gamma=2.0
) -> tuple[Policy, Policy]:
    """(current, average) strategies after ``iterations`` of CFR+ or DCFR with alternating
    updates, written from the published update rules over the history tree (small games)."""
    legal: dict[tuple[int, str], str] = {}
    for deal in deals(game):
        for _, hand in _histories(deal):
            if not hand.over:
                legal[hand.player, hand.infostate(game.deck)] = hand.legal
    regrets = {key: [0.0, 0.0, 0.0] for key in legal}
    sums = {key: [0.0, 0.0, 0.0] for key in legal}

    def matched(key: tuple[int, str]) -> tuple[float, ...]:
        positive = [
            max(r, 0.0) if "fcr"[a] in legal[key] else 0.0 for a, r in enumerate(regrets[key])
        ]
        total = sum(positive)
        if total > 0:
            return tuple(x / total for x in positive)
        return tuple(("fcr"[a] in legal[key]) / len(legal[key]) for a in range(3))

    current = {key: matched(key) for key in legal}
    for t in range(1, iterations + 1):
        for player in range(game.num_players):
            cfv, own = _counterfactual_values(game, current, player)
            for key, row in cfv.items():
                k = (player, key)
                value = sum(current[k][a] * row[a] for a in range(3))
                for a in range(3):
                    if "fcr"[a] not in legal[k]:
                        continue
                    r = regrets[k][a] + row[a] - value
                    if algorithm == "cfr+":
                        regrets[k][a] = max(r, 0.0)
                        sums[k][a] += max(t - delay, 0) * own[key] * current[k][a]
                    else:
                        regrets[k][a] = r * (
                            t**alpha / (t**alpha + 1) if r > 0 else t**beta / (t**beta + 1)
                        )
                        sums[k][a] = (sums[k][a] + own[key] * current[k][a]) * (
                            t / (t + 1)
                        ) ** gamma
                current[k] = matched(k)
    average = {}
    for key, row in sums.items():
        total = sum(row)
        average[key] = tuple(x / total for x in row) if total > 0 else current[key]
    return current, average


def _counterfactual_values(
    game: GameDef, current: Policy, player: int
) -> tuple[dict[str, list[float]], dict[str, float]]:
    """Per information set of ``player``: each action's value summed over its histories,
    weighted by the others' reach, and the player's own reach."""
    cfv: dict[str, list[float]] = {}
    own: dict[str, float] = {}

    def walk(hand: Hand, others: float, mine: float) -> float:
        if hand.over:
            return others * float(hand.payoffs()[player])
        key = hand.infostate(game.deck)
        probs = current[hand.player, key]
        if hand.player != player:
            return sum(walk(hand.act(a), others * probs["fcr".index(a)], mine) for a in hand.legal)
        own[key] = mine
        row = cfv.setdefault(key, [0.0, 0.0, 0.0])
        total = 0.0
        for a in hand.legal:
            i = "fcr".index(a)
            v = walk(hand.act(a), others, mine * probs[i])
            row[i] += v
            total += probs[i] * v
        return total

    for deal in deals(game):
        walk(deal, 1.0, 1.0)
    return cfv, own
