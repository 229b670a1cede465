"""The hold'em policy interface: what every hold'em player of the core implements (the styles,
the blueprint, always-call, uniform), and what the match engine, ``acpc-agent`` and the local best
response read.

A hold'em game (``holdem.limit.2p.reverse_blinds.game``, ``holdem.limit.3p.game``, any ACPC limit
game with a 52-card deck) is far too big to compile into a :class:`LimitGame`, so a policy is not a
table over information sets but a function of what the acting player sees: a :class:`Spot` (the
game, the board cards dealt so far, the betting so far as the one implementation of the rules
replays it, :mod:`oppmodel.modeling.games.acpc.betting`) and its hole cards. It answers the
probabilities of fold, call and raise (action codes 0, 1, 2), zero on the illegal ones.

The answer is asked for many hole cards at once (``holes``, a (k, 2) array): the local best
response weighs every hand an opponent may hold by the probability of the actions it took, so a
policy computes its hand-strength measure for a whole range in one kernel call. One hand is a
batch of one (:func:`action_row`).

Cards are the evaluator's integers (``4 * rank + suit``, 2c = 0 .. As = 51,
:func:`oppmodel.modeling.games.acpc.hand_rank.card_index`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.abstraction import ALL_HOLES
from oppmodel.modeling.games.acpc.betting import (
    CALL,
    NUM_ACTIONS,
    BettingState,
    HandState,
    is_legal,
)
from oppmodel.modeling.games.acpc.gamedef import RANK_CHARS, SUIT_CHARS, GameDef
from oppmodel.modeling.games.acpc.hand_rank import card_index
from oppmodel.modeling.games.acpc.limit_game import LimitGame

DECK_SIZE = 52
HOLE_CARDS = 2
CARD_NAMES = tuple(r + s for r in RANK_CHARS for s in SUIT_CHARS)  # by card integer


@dataclass(frozen=True)
class Spot:
    """A decision of a hold'em hand as every player sees it: the game, the board cards dealt so
    far (all rounds, in the order dealt) and the state of the betting (its ``player`` is the
    position to act)."""

    game: GameDef
    board: tuple[int, ...]
    betting: BettingState

    @classmethod
    def of(cls, game: GameDef, board: Sequence[str], betting: str) -> Spot:
        """The spot after the ACPC ``betting`` on the ``board`` cards (texts, ``"As"``); the
        betting is replayed and checked (IllegalActionError naming the bad character)."""
        state = HandState.from_betting(game, betting).state
        if state.player < 0:
            raise InvalidArgumentError("betting", f"{betting!r}: the hand is over")
        return cls(game, tuple(card_index(c) for c in board), state)

    @property
    def position(self) -> int:
        """The position to act."""
        return self.betting.player

    @property
    def round(self) -> int:
        return self.betting.round

    def legal(self) -> np.ndarray:
        """(3,) bool: which of fold, call, raise the position to act may take."""
        return np.array([is_legal(self.game, self.betting, a) for a in range(NUM_ACTIONS)])

    def facing_bet(self) -> bool:
        """Whether the position to act has something to call."""
        return self.betting.spent[self.position] < max(self.betting.spent)


@runtime_checkable
class HoldemPolicy(Protocol):
    """A hold'em player: fold/call/raise probabilities for hole cards at a spot."""

    name: str

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        """(k, 3) probabilities of fold, call, raise for each row of ``holes`` ((k, 2) card
        integers, none of them on the board) held by ``spot.position``; each row sums to 1 and
        is 0 on the actions ``spot.legal()`` forbids."""
        ...


def action_row(policy: HoldemPolicy, spot: Spot, hole: Sequence[int]) -> np.ndarray:
    """(3,) the policy's probabilities for one hand."""
    return policy.probabilities(spot, np.asarray([hole], dtype=np.int64))[0]


def board_texts(game: GameDef, board: Sequence[int], rounds: int) -> tuple[str, ...]:
    """The board cards (dealt in order) of each of the first ``rounds`` rounds as ACPC text, as
    a MATCHSTATE lists them (``""`` for a round that deals none)."""
    ends = np.cumsum(game.num_board_cards).tolist()
    return tuple(
        "".join(CARD_NAMES[c] for c in board[start:end])
        for start, end in zip([0, *ends[: rounds - 1]], ends[:rounds], strict=True)
    )


HOLE_BITS = (1 << ALL_HOLES[:, 0]) | (1 << ALL_HOLES[:, 1])  # each hand's two cards as bits
HOLE_BITS.setflags(write=False)


def live_holes(dead: Sequence[int]) -> np.ndarray:
    """The rows of :data:`ALL_HOLES` that use none of the ``dead`` cards (a range's support), in
    their order: one AND over the hands' card bits, the rows kept by ``compress`` (a hold'em
    update asks once a hand; a card mask per hand and boolean indexing cost ~30-50 us, ~6 now)."""
    bits = 0
    for card in dead:
        if not 0 <= card < DECK_SIZE:
            raise InvalidArgumentError("dead", f"card {card} is not of the deck")
        bits |= 1 << int(card)
    return ALL_HOLES.compress((HOLE_BITS & bits) == 0, axis=0)


def check_rows(spot: Spot, rows: np.ndarray, field: str = "probabilities") -> np.ndarray:
    """``rows`` if every row is a distribution over the spot's legal actions (1e-9);
    InvalidArgumentError naming ``field`` and the first bad row otherwise."""
    rows = np.asarray(rows, dtype=float)
    legal = spot.legal()
    bad = (
        (rows < 0).any(axis=1)
        | (np.abs(rows.sum(axis=1) - 1.0) > 1e-9)
        | (rows[:, ~legal] > 0).any(axis=1)
    )
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidArgumentError(
            field, f"row {i} {rows[i].tolist()} is no distribution over {legal.tolist()}"
        )
    return rows


class AlwaysCall:
    """Checks or calls at every decision, whatever it holds."""

    name = "always-call"

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        out = np.zeros((len(holes), NUM_ACTIONS))
        out[:, CALL] = 1.0
        return out


class Uniform:
    """Every legal action equally likely, whatever it holds."""

    name = "uniform"

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        legal = spot.legal()
        return np.tile(legal / legal.sum(), (len(holes), 1))


class ProfilePolicy:
    """A compiled limit game's profile (Kuhn, Leduc: ``(n, num_infosets, 3)``) as a policy: each
    hole's row is that of its information set, keyed as the game keys them. What a measure
    written for hold'em (the local best response) is checked with where exact answers exist."""

    def __init__(self, name: str, game: LimitGame, profile: np.ndarray) -> None:
        self.name = name
        self.game = game
        self.profile = np.asarray(profile, dtype=float)

    def probabilities(self, spot: Spot, holes: np.ndarray) -> np.ndarray:
        board = board_texts(spot.game, spot.board, spot.round + 1)
        rows = []
        for hole in np.asarray(holes).tolist():
            key = self.game.infostate(
                "".join(CARD_NAMES[c] for c in hole), board, spot.betting.betting
            )
            rows.append(
                self.profile[spot.position, self.game.infoset_from_string(spot.position, key)]
            )
        return np.array(rows).reshape(len(rows), NUM_ACTIONS)
