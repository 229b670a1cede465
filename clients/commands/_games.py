"""The ``--game`` argument of ``eval``, ``match``, ``demo`` and ``tournament``: a bundled game by
its short name or an ACPC game definition file, compiled as a limit game.

``kuhn2p``, ``kuhn3p`` and ``kuhn4p`` are bundled game files like ``leduc2p`` and ``leduc3p``
(3-player Kuhn has the robust equilibria N1-N3 as named strategies; every game has its solved
strategy as ``cfr``). Strategy files are keyed by the game's information-state strings ("Js:",
"Ks/Qh:rc/cr"), or in Kuhn by OpenSpiel's ("2ppb"), read by
:func:`oppmodel.modeling.games.acpc.strategy.load_profile`.
"""

from __future__ import annotations

from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame

GAME_HELP = f"a bundled game ({', '.join(BUNDLED_GAMES)}) or an ACPC game file (default kuhn3p)"


def resolve_game(name_or_path: str) -> LimitGame:
    """The game a ``--game`` value names; InvalidArgumentError if it names none."""
    return limit_game(name_or_path)
