"""What one seat observes of a finished hand, and its validation.

Observability follows the ACPC dealer: a seat always sees its own card and every action; it sees
another player's card only at a showdown (two or more players did not fold) and only if that player
did not fold. A folded card, and every card when all but one fold, stays hidden (None).
"""

from __future__ import annotations

from dataclasses import dataclass

from oppmodel.modeling.errors import IllegalActionError, InvalidArgumentError
from oppmodel.modeling.games.kuhn import KuhnGame


@dataclass(frozen=True)
class HandObservation:
    """One finished hand from our seat's point of view."""

    position: int  # our position in this hand
    history: str  # terminal betting in OpenSpiel letters
    cards: tuple[int | None, ...]  # per position; ours required, others None when hidden


def observe_hand(game: KuhnGame, position: int, history: str, cards: list[int]) -> HandObservation:
    """The observation ``position`` makes of a hand whose full deal is ``cards``."""
    return HandObservation(position, history, game.visible_cards(history, cards, position))


def validate_observation(game: KuhnGame, obs: HandObservation) -> None:
    """Raise InvalidArgumentError / IllegalActionError naming the field if ``obs`` is impossible."""
    game.check_position(obs.position)
    if not isinstance(obs.history, str):
        raise IllegalActionError("history", "must be a string of 'p'/'b'")
    if not game.is_terminal(obs.history):
        raise IllegalActionError("history", f"{obs.history!r} is not a finished hand")
    if len(obs.cards) != game.num_players:
        raise InvalidArgumentError(
            "cards", f"needs {game.num_players} entries, got {len(obs.cards)}"
        )
    seen: dict[int, int] = {}
    for i, c in enumerate(obs.cards):
        if c is None:
            continue
        if isinstance(c, bool) or not isinstance(c, int) or not 0 <= c < game.num_cards:
            raise InvalidArgumentError(f"cards[{i}]", f"card {c!r} not in 0..{game.num_cards - 1}")
        if c in seen:
            raise InvalidArgumentError(
                f"cards[{i}]", f"card {c} already held by position {seen[c]}"
            )
        seen[c] = i
    if obs.cards[obs.position] is None:
        raise InvalidArgumentError(f"cards[{obs.position}]", "our own card is required")
    folded = game.folded(obs.history)
    showdown = folded.count(False) >= 2
    for i, c in enumerate(obs.cards):
        if i == obs.position:
            continue
        visible = showdown and not folded[i]
        if visible and c is None:
            raise InvalidArgumentError(f"cards[{i}]", "a showdown card is missing")
        if not visible and c is not None:
            reason = "folded" if folded[i] else "won without a showdown"
            raise InvalidArgumentError(f"cards[{i}]", f"position {i} {reason}: its card is hidden")
