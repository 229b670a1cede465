"""ACPC game definition files: the real 3p Kuhn file, the reference's parsing rules and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from acpc_support import DATA
from hypothesis import given
from hypothesis import strategies as st

from oppmodel.modeling.errors import InvalidArgumentError, UnknownGameError
from oppmodel.modeling.games.acpc.bundled import (
    BUNDLED_GAMES,
    GAMES_FOLDER,
    HOLDEM_GAMES,
    game_path,
)
from oppmodel.modeling.games.acpc.gamedef import (
    INT32_MAX,
    LIMIT,
    NOLIMIT,
    GameDef,
    kuhn_num_players,
    parse_game_def,
    read_game_def,
)

GAMES = Path(__file__).resolve().parent.parent / "modeling" / "games" / "acpc" / "games"

KUHN3 = GameDef(
    betting=LIMIT,
    num_players=3,
    num_rounds=1,
    stack=(INT32_MAX,) * 3,
    blind=(1, 1, 1),
    raise_size=(1,),
    first_player=(0,),
    max_raises=(1,),
    num_suits=1,
    num_ranks=4,
    num_hole_cards=1,
    num_board_cards=(0,),
)

HOLDEM = """GAMEDEF
nolimit
numPlayers = 2
numRounds = 4
stack = 20000 20000
blind = 100 50
firstPlayer = 2 1 1 1
numSuits = 4
numRanks = 13
numHoleCards = 2
numBoardCards = 0 3 1 1
END GAMEDEF
"""


def game_text(**overrides: str | None) -> str:
    """The 3p Kuhn file with some keyword lines replaced (None drops the line)."""
    lines = {
        "numPlayers": "numPlayers = 3",
        "numRounds": "numRounds = 1",
        "blind": "blind = 1 1 1",
        "raiseSize": "raiseSize = 1",
        "firstPlayer": "firstPlayer = 1",
        "maxRaises": "maxRaises = 1",
        "numSuits": "numSuits = 1",
        "numRanks": "numRanks = 4",
        "numHoleCards": "numHoleCards = 1",
        "numBoardCards": "numBoardCards = 0",
    }
    lines.update(overrides)
    body = "\n".join(v for v in lines.values() if v is not None)
    return f"GAMEDEF\nlimit\n{body}\nEND GAMEDEF\n"


def test_the_real_3p_kuhn_file_parses_to_the_known_game() -> None:
    game = read_game_def(DATA / "kuhn.limit.3p.game")
    assert game == KUHN3
    assert game.deck == ("Js", "Qs", "Ks", "As")
    assert kuhn_num_players(game) == 3


def test_the_shipped_game_files_are_kuhn() -> None:
    assert read_game_def(GAMES / "kuhn.limit.3p.game") == KUHN3
    two = read_game_def(GAMES / "kuhn.limit.2p.game")
    assert kuhn_num_players(two) == 2
    assert two.deck == ("Qs", "Ks", "As")


@pytest.mark.parametrize(
    "line",
    [
        "blind = 1 1 1",
        "blind=1 1 1",
        "blind 1 1 1",
        "BLIND=1 1 1",
        "Blind\t=\t1  1  1",
        "blind =1=1=1",
    ],
)
def test_spaces_and_equals_are_skipped_before_each_number(line: str) -> None:
    assert parse_game_def(game_text(blind=line)) == KUHN3


def test_keywords_are_case_insensitive_prefixes_and_trailing_text_is_ignored() -> None:
    text = game_text(numPlayers="NUMPLAYERS = 3 players", maxRaises="maxraises 1 per round")
    assert parse_game_def(text.replace("limit", "LIMIT betting")) == KUHN3
    # the numbers start right after the keyword: text in between stops the scan
    assert parse_game_def(game_text(maxRaises="maxRaisesPerRound = 1")).max_raises == (255,)


def test_comments_blank_and_unknown_lines_are_skipped_and_reading_stops_at_end() -> None:
    text = "# a comment\n\nsomething else = 9\n  numPlayers = 9\n" + game_text()
    text += "numPlayers = 4\n"  # after END GAMEDEF: never read
    assert parse_game_def(text) == KUHN3


def test_later_lines_override_earlier_ones_and_nolimit_sets_the_betting() -> None:
    game = parse_game_def(game_text(numRanks="numRanks = 9\nnumRanks = 4", maxRaises=None))
    assert game.num_ranks == 4
    assert game.max_raises == (255,)  # the default: unlimited
    holdem = parse_game_def(HOLDEM)
    assert holdem.betting == NOLIMIT
    assert holdem.raise_size == ()
    assert holdem.first_player == (1, 0, 0, 0)
    assert holdem.num_board_cards == (0, 3, 1, 1)
    assert holdem.deck[:2] == ("2c", "3c") and len(holdem.deck) == 52


def test_only_four_stacks_default_to_unlimited_as_in_the_reference() -> None:
    five = game_text(
        numPlayers="numPlayers = 5", blind="blind = 1 1 1 1 1", numRanks="numRanks = 6"
    )
    with pytest.raises(InvalidArgumentError, match="only read 4 stack sizes, need 5") as info:
        parse_game_def(five)
    assert info.value.field == "stack"
    game = parse_game_def(five.replace("END GAMEDEF", "stack = 9 9 9 9 9\nEND GAMEDEF"))
    assert game.stack == (9,) * 5


@pytest.mark.parametrize(
    ("overrides", "field", "message"),
    [
        ({"numRounds": None}, "numRounds", "invalid number of rounds: 0"),
        ({"numRounds": "numRounds = 5"}, "numRounds", "invalid number of rounds: 5"),
        ({"numPlayers": "numPlayers = 1"}, "numPlayers", "invalid number of players: 1"),
        ({"numPlayers": "numPlayers = 11"}, "numPlayers", "invalid number of players: 11"),
        ({"blind": "blind = 1 1"}, "blind", "only read 2 blinds, need 3"),
        ({"blind": "blind = 1 1 1\nstack = 5 0 5"}, "blind", "blind for player 2 is greater"),
        ({"raiseSize": None}, "raiseSize", "only read 0 raise sizes, need 1"),
        ({"firstPlayer": "firstPlayer = 4"}, "firstPlayer", "invalid first player 4 on round 1"),
        ({"firstPlayer": "firstPlayer = 0"}, "firstPlayer", "invalid first player 0 on round 1"),
        ({"numSuits": "numSuits = 5"}, "numSuits", "invalid number of suits: 5"),
        ({"numRanks": None}, "numRanks", "invalid number of ranks: 0"),
        ({"numRanks": "numRanks = 14"}, "numRanks", "invalid number of ranks: 14"),
        ({"numHoleCards": "numHoleCards = 4"}, "numHoleCards", "invalid number of hole cards: 4"),
        ({"numBoardCards": None}, "numBoardCards", "only read 0 board card numbers, need 1"),
        ({"numRanks": "numRanks = 2"}, "numHoleCards", "too many hole and board cards"),
        ({"numPlayers": "numPlayers = 300"}, "numPlayers", "outside 0..255"),
    ],
)
def test_sanity_checks_name_the_keyword(overrides: dict, field: str, message: str) -> None:
    with pytest.raises(InvalidArgumentError, match=message) as info:
        parse_game_def(game_text(**overrides))
    assert info.value.field == field


def test_games_the_project_cannot_model_are_refused_naming_every_problem() -> None:
    with pytest.raises(UnknownGameError) as info:
        kuhn_num_players(parse_game_def(HOLDEM))
    message = str(info.value)
    assert info.value.field == "game"
    for problem in (
        "no-limit",
        "numRounds = 4",
        "numHoleCards = 2",
        "numBoardCards = 0 3 1 1",
        "numSuits = 4",
        "numRanks = 13",
        "blind = 100 50",
        "firstPlayer = 2",
    ):
        assert problem in message
    with pytest.raises(UnknownGameError, match=r"maxRaises = 255 \(only 1\)"):
        kuhn_num_players(parse_game_def(game_text(maxRaises=None)))
    with pytest.raises(UnknownGameError, match="numRanks = 5"):
        kuhn_num_players(parse_game_def(game_text(numRanks="numRanks = 5")))
    with pytest.raises(UnknownGameError, match="raiseSize = 2"):
        kuhn_num_players(parse_game_def(game_text(raiseSize="raiseSize = 2")))


def test_a_missing_file_is_an_error_naming_the_file(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgumentError, match="cannot read") as info:
        read_game_def(tmp_path / "nope.game")
    assert info.value.field == "gamefile"


@given(
    players=st.integers(2, 10),
    rounds=st.integers(1, 4),
    suits=st.integers(2, 4),
    data=st.data(),
)
def test_to_text_parses_back_to_the_same_game(
    players: int, rounds: int, suits: int, data: st.DataObject
) -> None:
    ranks = 13
    board = tuple(data.draw(st.lists(st.integers(0, 3), min_size=rounds, max_size=rounds)))
    game = GameDef(
        betting=data.draw(st.sampled_from([LIMIT, NOLIMIT])),
        num_players=players,
        num_rounds=rounds,
        stack=tuple(
            data.draw(st.lists(st.integers(100, 10**6), min_size=players, max_size=players))
        ),
        blind=tuple(data.draw(st.lists(st.integers(0, 100), min_size=players, max_size=players))),
        raise_size=(),
        first_player=tuple(
            data.draw(st.lists(st.integers(0, players - 1), min_size=rounds, max_size=rounds))
        ),
        max_raises=tuple(
            data.draw(st.lists(st.integers(0, 255), min_size=rounds, max_size=rounds))
        ),
        num_suits=suits,
        num_ranks=ranks,
        num_hole_cards=1,
        num_board_cards=board,
    )
    if game.betting == LIMIT:
        sizes = data.draw(st.lists(st.integers(1, 50), min_size=rounds, max_size=rounds))
        game = GameDef(**{**game.__dict__, "raise_size": tuple(sizes)})
    assert parse_game_def(game.to_text()) == game


@pytest.mark.parametrize("name", sorted(BUNDLED_GAMES))
def test_every_bundled_game_has_a_short_name(name: str) -> None:
    family, players = name[:-2], int(name[-2])
    game = read_game_def(name)
    assert game == read_game_def(GAMES / BUNDLED_GAMES[name])
    assert game_path(name.upper()) == GAMES / BUNDLED_GAMES[name]
    assert game.num_players == players
    if family == "kuhn":
        assert kuhn_num_players(game) == players
    else:
        assert game.num_rounds == 2 and game.num_ranks == players + 1


def test_the_short_names_cover_every_bundled_file() -> None:
    assert GAMES_FOLDER == GAMES
    named = [*BUNDLED_GAMES.values(), *HOLDEM_GAMES.values()]
    assert sorted(named) == sorted(p.name for p in GAMES.glob("*.game"))


def test_an_existing_path_beats_a_short_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "kuhn3p").write_text((GAMES / "kuhn.limit.2p.game").read_text())
    monkeypatch.chdir(tmp_path)
    assert read_game_def("kuhn3p").num_players == 2


def test_an_unknown_name_lists_the_bundled_games() -> None:
    with pytest.raises(
        InvalidArgumentError,
        match=r"nor a bundled game \(kuhn2p, kuhn3p, kuhn4p, leduc2p, leduc3p\)",
    ):
        read_game_def("kuhn.limit.3p.game")  # a file name only the package folder holds


def test_a_file_that_is_not_a_game_is_refused_naming_the_file(tmp_path: Path) -> None:
    junk = tmp_path / "notes.txt"
    junk.write_text("shopping list\n")
    with pytest.raises(InvalidArgumentError, match=f"{junk} is not a valid game definition"):
        read_game_def(junk)
