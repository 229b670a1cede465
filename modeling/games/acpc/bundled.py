"""The games and solved strategies the package ships, by short name: the one table of them.

Wherever a game is asked for, a short name (``leduc3p``) or a path to an ACPC game definition
file will do; :func:`game_path` resolves either. The Leduc files are verbatim copies of the ACPC
files (``shared/data/acpc/``); the Kuhn files follow the reference ``kuhn.limit.3p.game``.

The solved strategies are strategy files (:mod:`oppmodel.modeling.games.acpc.strategy`) written by
``oppmodel solve``; each records in its ``solver`` entry the command, the iterations and the
nash_conv that produced it. ``leduc2p``'s approximates a Nash equilibrium; ``leduc3p``'s is a CFR+
average strategy of a 3-player game, with no equilibrium guarantee.
"""

from __future__ import annotations

from pathlib import Path

from oppmodel.modeling.errors import InvalidArgumentError

GAMES_FOLDER = Path(__file__).resolve().parent / "games"
# Short name -> file in GAMES_FOLDER.
BUNDLED_GAMES = {
    "kuhn2p": "kuhn.limit.2p.game",
    "kuhn3p": "kuhn.limit.3p.game",
    "kuhn4p": "kuhn.limit.4p.game",
    "leduc2p": "leduc.limit.2p.game",
    "leduc3p": "leduc.limit.3p.game",
}

# Short name -> hold'em game file in GAMES_FOLDER: too large to compile, they are played through
# an abstract game (``holdem_abstract``), so they are not among the compiled BUNDLED_GAMES.
HOLDEM_GAMES = {
    "holdem2p": "holdem.limit.2p.reverse_blinds.game",
    "holdem3p": "holdem.limit.3p.game",
}

# Short name -> solved strategy file in GAMES_FOLDER.
BUNDLED_STRATEGIES = {
    "leduc2p": "leduc2p.cfr.json",
    "leduc3p": "leduc3p.cfr.json",
}

# Short name -> hold'em blueprint in GAMES_FOLDER: a strategy file of the game's abstract game
# (``oppmodel solve holdem2p|holdem3p``, gzip-compressed), played by
# ``modeling/holdem/blueprint.py``; beside each, its flop table (``X.cfr.flops.npz``), and beside
# the 3-player one its turn table (``X.cfr.turns.npz``): ``flop_table.build`` of the blueprint's
# cards over the round's boards, saved by ``BoardTable.save`` at ``flop_table.path_beside``.
HOLDEM_BLUEPRINTS = {
    "holdem2p": "holdem2p.cfr.json.gz",
    "holdem3p": "holdem3p.cfr.json.gz",
}


def game_path(name_or_path: str | Path) -> Path:
    """The file a game argument names: a path that exists as given, else a bundled game's short
    name (``kuhn3p``); InvalidArgumentError otherwise."""
    path = Path(name_or_path).expanduser()
    if path.exists():
        return path
    bundled = (BUNDLED_GAMES | HOLDEM_GAMES).get(str(name_or_path).lower())
    if bundled is not None:
        return GAMES_FOLDER / bundled
    raise InvalidArgumentError(
        "gamefile",
        f"cannot read {name_or_path}: no such file, nor a bundled game "
        f"({', '.join(BUNDLED_GAMES)})",
    )


def short_name(path: Path) -> str | None:
    """The short name of a bundled game file, or None."""
    for name, file in (BUNDLED_GAMES | HOLDEM_GAMES).items():
        if path.resolve() == GAMES_FOLDER / file:
            return name
    return None


def strategy_path(name: str) -> Path:
    """The solved strategy bundled for a game's short name; InvalidArgumentError if none is."""
    file = BUNDLED_STRATEGIES.get(str(name).lower())
    if file is None:
        raise InvalidArgumentError("game", no_strategy_message(name))
    return GAMES_FOLDER / file


def no_strategy_message(game: str, need: str = "") -> str:
    """The one message for a game without a solved strategy, which every such error uses: it names
    the game (``game``: its short name or its file as the user gave it; ``need``: what asked for
    one, e.g. " (cfr and STYLE@S need one)") and the command that writes one, then how to use
    the file instead."""
    out = f"{Path(game).stem}.json"
    return (
        f"no solved strategy for {game}{need}: run `oppmodel solve {game} --iterations 1000 "
        f"--out {out}` and pass {out} in its place (acpc-agent --strategy, eval --profile, a match "
        "agent, MBBR's --mbbr-prior-strategy)"
    )
