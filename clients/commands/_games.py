"""The ``--game`` argument of ``eval`` and ``match``: Kuhn by its short name, or any limit game.

``kuhn2p``, ``kuhn3p`` and ``kuhn4p`` are the Kuhn games of the Kuhn kernels (the robust
3-player equilibria N1-N3), as they always were; any other bundled short name (``leduc2p``,
``leduc3p``) or an ACPC game definition file is compiled as a limit game (the game's solved
strategy as ``cfr``). Strategy files are the same in both: ``oppmodel solve``'s, keyed by the
compiled game's strings ("Js:", "Ks/Qh:rc/cr"), or in Kuhn OpenSpiel's ("2ppb"), read by
:func:`oppmodel.modeling.games.acpc.strategy.read_profile`.
"""

from __future__ import annotations

from oppmodel.modeling.games.acpc.bundled import BUNDLED_GAMES
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.play.match import Game

KUHN_GAMES = {"kuhn2p": 2, "kuhn3p": 3, "kuhn4p": 4}
GAME_HELP = f"a bundled game ({', '.join(BUNDLED_GAMES)}) or an ACPC game file (default kuhn3p)"


def resolve_game(name_or_path: str) -> Game:
    """The game a ``--game`` value names; InvalidArgumentError if it names none."""
    players = KUHN_GAMES.get(name_or_path.lower())
    return kuhn_game(players) if players is not None else limit_game(name_or_path)
