"""Between the ACPC protocol and the modeling core's Kuhn game
(:mod:`oppmodel.modeling.games.kuhn`).

Cards: an ACPC Kuhn deck is the top n + 1 ranks of one suit, so a card's Kuhn number is its index
in the dealer's deck (3 players: ``Js Qs Ks As`` -> 0, 1, 2, 3). Betting: ``c`` is a pass (check)
when no bet is outstanding and a bet (call) when one is; ``r`` is a bet; ``f`` is a pass (fold);
the core converts and checks legality (:meth:`KuhnGame.acpc_to_history`).
"""

from __future__ import annotations

from oppmodel.clients.acpc.log import LoggedHand
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import bundled_name
from oppmodel.modeling.games.acpc.gamedef import GameDef, kuhn_num_players
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.observation import LimitObservation, observe_limit_cards


def kuhn_for(game: GameDef) -> KuhnGame:
    """The core's Kuhn game for an ACPC game; UnknownGameError if the game is not Kuhn."""
    return kuhn_game(kuhn_num_players(game))


def session_game(game: LimitGame) -> str:
    """The service's name of a compiled limit game (``SessionConfig.game``): its bundled short
    name ("kuhn3p", "leduc3p") or its rules' text."""
    return bundled_name(game.gamedef) or game.gamedef.to_text()


def card_to_kuhn(game: GameDef, card: str) -> int:
    """Kuhn card number (0 = lowest) of an ACPC card; InvalidArgumentError if not in the deck."""
    try:
        return game.deck.index(card)
    except ValueError:
        raise InvalidArgumentError(
            "card", f"{card!r} is not in the deck {' '.join(game.deck)}"
        ) from None


def logged_limit_observation(game: LimitGame, hand: LoggedHand, position: int) -> LimitObservation:
    """What ``position`` saw of a logged hand of a compiled limit game (hidden cards hidden).

    A log writes a round-0 board (if the game deals one) right after the last hole cards and the
    board of each later round after a ``/``, for the rounds the hand reached.
    """
    width = 2 * game.gamedef.num_hole_cards
    hole = (*hand.hole[:-1], hand.hole[-1][:width])
    board = (hand.hole[-1][width:], *hand.board)
    return observe_limit_cards(game, position, hand.betting, hole, board)
