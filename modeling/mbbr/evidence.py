"""What one seat's observation of a finished hand says about each opponent, as both posteriors
read it: the opponent's moves (decision node, action) and every assignment of the cards we did not
see (folded cards, and all cards when everyone else folded, stay hidden) that is consistent with it.

Opponents are indexed by seat offset: while we sit at position p, the opponent at offset d sits at
(p + d) mod n; with ACPC rotation that is always the same player.
"""

from __future__ import annotations

import itertools

import numpy as np

from oppmodel.modeling.games.kuhn import KuhnGame
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES, array_bytes
from oppmodel.modeling.observation import HandObservation, validate_observation

# Per opponent (offset d = 1..n-1): its decision nodes and its actions there, in order.
Moves = list[tuple[np.ndarray, np.ndarray]]

MAX_CACHED_OBSERVATIONS = 4096  # distinct observations remembered (3p Kuhn has < 2000)


def path_of(game: KuhnGame, terminal: int) -> list[tuple[int, int]]:
    """The (decision node, action) pairs from the root to ``terminal``."""
    length = int(game.path_len[terminal])
    return [
        (int(game.path_nodes[terminal, i]), int(game.path_actions[terminal, i]))
        for i in range(length)
    ]


def opponent_moves(game: KuhnGame, position: int, history: str) -> Moves:
    """Per opponent of ``position`` (d = 1..n-1): its decision nodes and actions in ``history``
    (a finished hand)."""
    n = game.num_players
    path = path_of(game, int(game.node_terminal[game.node(history)]))
    return [
        (
            np.array([nd for nd, _ in path if game.node_player[nd] == (position + d) % n]),
            np.array([a for nd, a in path if game.node_player[nd] == (position + d) % n]),
        )
        for d in range(1, n)
    ]


def hidden_assignments(game: KuhnGame, obs: HandObservation) -> np.ndarray:
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


def move_table(
    game: KuhnGame, assignments: np.ndarray, moves: Moves
) -> tuple[np.ndarray, np.ndarray]:
    """The opponents' moves ``moves`` under each hidden-card assignment of ``assignments``:
    ``entries`` (E, 3) rows (offset - 1, information set, action), and ``ends`` (m,),
    assignment a's rows ending at ``ends[a]``."""
    entries, ends = [], []
    for cards in assignments:
        for d, (nodes, actions) in enumerate(moves):
            for node, action in zip(nodes, actions, strict=True):
                entries.append((d, int(game.infoset_of[node, cards[d]]), int(action)))
        ends.append(len(entries))
    return np.array(entries, dtype=np.int64).reshape(-1, 3), np.array(ends, dtype=np.int64)


class EvidenceCache:
    """What each distinct observation says (its validity, the opponents' moves, the hidden-card
    assignments), worked out once and kept: a function of the game and the observation alone, so
    every model of one game may share one (the runs of a change-detection bank do)."""

    def __init__(self, game: KuhnGame) -> None:
        self.game = game
        self._valid: set[tuple] = set()
        self._moves: dict[tuple[int, str], Moves] = {}
        self._assignments: dict[tuple, np.ndarray] = {}
        self._tables: dict[tuple, tuple[np.ndarray, np.ndarray]] = {}
        self._nbytes = 0  # of every entry so far (entries are only added): ``nbytes`` per hand

    def validate(self, obs: HandObservation) -> None:
        """``validate_observation`` (InvalidArgumentError / IllegalActionError naming the field),
        once per distinct valid observation."""
        key = (obs.position, obs.history, obs.cards)  # a tuple of atoms: the GC untracks it
        if key not in self._valid:
            validate_observation(self.game, obs)
            if len(self._valid) < MAX_CACHED_OBSERVATIONS:
                self._valid.add(key)
                self._nbytes += ENTRY_BYTES

    def moves(self, position: int, history: str) -> Moves:
        """``opponent_moves`` of a validated finished hand."""
        key = (position, history)
        moves = self._moves.get(key)
        if moves is None:
            moves = self._moves[key] = opponent_moves(self.game, position, history)
            self._nbytes += array_bytes(a for pair in moves for a in pair) + ENTRY_BYTES
        return moves

    def assignments(self, obs: HandObservation) -> np.ndarray:
        """``hidden_assignments`` of a validated observation (do not modify)."""
        key = (obs.position, obs.history, obs.cards)
        cached = self._assignments.get(key)
        if cached is None:
            cached = hidden_assignments(self.game, obs)
            if len(self._assignments) < MAX_CACHED_OBSERVATIONS:
                self._assignments[key] = cached
                self._nbytes += array_bytes([cached]) + ENTRY_BYTES
        return cached

    def move_table(self, obs: HandObservation) -> tuple[np.ndarray, np.ndarray]:
        """``move_table`` of a validated observation, in ``assignments`` order (do not
        modify)."""
        key = (obs.position, obs.history, obs.cards)
        cached = self._tables.get(key)
        if cached is None:
            moves = self.moves(obs.position, obs.history)
            cached = move_table(self.game, self.assignments(obs), moves)
            if len(self._tables) < MAX_CACHED_OBSERVATIONS:
                self._tables[key] = cached
                self._nbytes += array_bytes(cached) + ENTRY_BYTES
        return cached

    def nbytes(self) -> int:
        """Approximate bytes held: the arrays, and ``ENTRY_BYTES`` per cache entry (counted as
        entries are added: the service asks after every hand)."""
        return self._nbytes
