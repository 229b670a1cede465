"""``oppmodel demo``: the table says what its unit (milli-antes per hand) means, and a failed
demo leaves nothing behind; in Leduc the agent plays through the service at MATCHSTATE lines and
says what its model learned."""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from pathlib import Path

import numpy as np
import pytest

from oppmodel.clients.cli import main
from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.commands import demo_cmd
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.play.diluted import fixed_profile
from oppmodel.server.app import BackgroundServer, ServerConfig


def test_the_demo_explains_its_units_and_says_where_the_data_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    assert main(["demo", "--hands", "20", "--duplicates", "1", "--data-dir", str(data)]) == 0
    out, err = capsys.readouterr()
    assert "mA/h: milli-antes per hand (1000 x chips won per hand / the ante of 1 chip)" in out
    assert "s.e.: its standard error over the duplicates" in out
    assert f"data: {data / 'oppmodel.sqlite'} (6 sessions" in out
    # no progress bar (stderr is not a terminal): at most the plain lines of a run past 5 s
    assert all(
        re.fullmatch(r"oppmodel demo: \d+/\d+ hands done, \d+ s", line) for line in err.splitlines()
    )


def test_a_demo_that_fails_removes_the_folder_it_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug mid-match")

    monkeypatch.setattr(demo_cmd, "run_duplicate", broken)
    with pytest.raises(RuntimeError, match="a bug mid-match"):  # a bug keeps its traceback
        main(["demo", "--hands", "20", "--duplicates", "1"])
    assert list(tmp_path.iterdir()) == []


def test_the_leduc2p_demo_learns_an_always_bet_player_through_the_service(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--game", "leduc2p", "--opponents", "always-bet", "--hands", "100"]
    argv += ["--duplicates", "2", "--json", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    report = json.loads(out)
    assert err == "" and report["game"] == "leduc2p" and report["hands"] == 2 * 2 * 100
    assert len(report["sessions"]) == 4  # a session per match: 2 duplicates x 2 seatings
    mbbr, opponent = report["results"]
    assert mbbr["name"] == "mbbr (service)" and opponent["name"] == "always-bet"
    assert mbbr["milli_antes_per_hand"] == pytest.approx(
        -opponent["milli_antes_per_hand"]
    )  # zero-sum
    assert mbbr["standard_error"] is not None
    game = limit_game("leduc2p")
    cfr, always_bet = fixed_profile(game, "cfr"), fixed_profile(game, "always-bet")
    assert [row["hole"][0] for row in report["learned"]] == ["Q", "K", "A"]
    for row in report["learned"]:
        infoset = game.infoset_from_string(0, f"{row['hole']}:")
        assert row["opponent"] == "always-bet"
        np.testing.assert_allclose(row["actual"], always_bet[0, infoset])
        assert sum(row["model"]) == pytest.approx(1.0)
        assert row["model"][2] > cfr[0, infoset, 2]  # learned: from the prior mean (cfr) ...
    assert np.mean([row["model"][2] for row in report["learned"]]) > 0.8  # ... toward raising


def test_the_leduc3p_demo_prints_the_table_and_what_the_model_learned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--game", "leduc3p", "--hands", "8", "--duplicates", "1"]
    assert main([*argv, "--data-dir", str(tmp_path)]) == 0
    out, _ = capsys.readouterr()
    assert "3-player Leduc hold'em duplicate match: 48 hands (1 duplicate x 6 seatings" in out
    assert "What MBBR's model learned" in out
    rows = [line.split() for line in out.splitlines()]
    learned = [row[0] for row in rows if len(row) == 4 and row[2].count("/") == 2]
    assert sorted(set(learned)) == ["cfr", "maniac"] and len(learned) == 8  # 4 ranks each
    assert f"data: {tmp_path / 'oppmodel.sqlite'} (6 sessions" in out


def _seated_by_behaviour(
    db: Path, session_id: str, first_actor: int, players: int
) -> dict[int, str]:
    """{seat offset from MBBR: the opponent that sat there}, read from the hands the session
    stored: whoever opens a hand acts first with no bet before it, and there always-bet bets
    (Kuhn "b", Leduc "r") while calling-station checks ("p", "c")."""
    with sqlite3.connect(db) as conn:
        hands = conn.execute(
            "SELECT position, history FROM observations WHERE session_id = ?", (session_id,)
        ).fetchall()
    opener = {"b": "always-bet", "r": "always-bet", "p": "calling-station", "c": "calling-station"}
    seated: dict[int, set[str]] = {}
    for our_position, history in hands:
        offset = (first_actor - our_position) % players
        if offset:
            seated.setdefault(offset, set()).add(opener[history[0]])
    assert all(len(names) == 1 for names in seated.values())  # one agent per offset per match
    return {offset: names.pop() for offset, names in seated.items()}


@pytest.mark.parametrize("game_name", ["kuhn3p", "leduc3p"])
def test_every_stored_session_labels_the_opponents_of_its_own_seating(
    game_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["demo", "--game", game_name, "--opponents", "always-bet,calling-station"]
    argv += ["--hands", "6", "--duplicates", "1", "--json", "--data-dir", str(tmp_path)]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    game = kuhn_game(3) if game_name == "kuhn3p" else limit_game(game_name)
    tree = game if game_name == "kuhn3p" else game.tree
    first_actor = int(tree.node_player[0])
    db = tmp_path / "oppmodel.sqlite"
    with (
        BackgroundServer(ServerConfig(db_path=str(db), port=0)) as port,
        OpponentModelClient(f"127.0.0.1:{port}") as client,
    ):
        stored = {s.session_id: s.opponent_labels for s in client.list_sessions()}
    assert sorted(stored) == sorted(report["sessions"]) and len(stored) == 6
    tables = []
    for session_id, labels in stored.items():
        seated = _seated_by_behaviour(db, session_id, first_actor, 3)
        assert seated == {1: labels[0], 2: labels[1]}, session_id
        tables.append(labels)
    # the six seatings put each opponent right after MBBR in three of them
    assert (
        sorted(tables)
        == [("always-bet", "calling-station")] * 3 + [("calling-station", "always-bet")] * 3
    )
