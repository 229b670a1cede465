"""A solved prior for every game (``modeling/games/acpc/solved.py``): a game no bundle holds is
solved with CFR+ on first use, cached on disk under a canonical key, and every command that plays
it (the ACPC agent in-process and as ``cfr``, ``match``, ``eval``) uses the solved strategy."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from acpc_support import run_dealer
from service_support import running_server
from test_service_leduc import decision_line

from oppmodel.clients.cli import main
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import GameSolvingError, UnknownGameError
from oppmodel.modeling.evaluation.limit import nash_conv
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.acpc.strategy import load_profile, parse_profile
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.play.panel import named_profile
from oppmodel.server.app import open_storage

# Blinds 1/2, raises 3/6, a deck of 4 ranks x 2 suits: unlike every bundled game (Leduc: antes
# 1/1, raises 2/4, 3 ranks; Kuhn: one round). Solved to the bound in ~450 iterations, < 1 s.
UNSEEN = """\
# a Leduc-like game with blinds
GAMEDEF
limit
numPlayers = 2
numRounds = 2
blind = 2 1
raiseSize = 3 6
firstPlayer = 2 1
maxRaises = 2 2
numSuits = 2
numRanks = 4
numHoleCards = 1
numBoardCards = 0 1
END GAMEDEF
"""
# The same rules: other order, spacing, comments and case.
UNSEEN_REWRITTEN = """\
gamedef
LIMIT
numRanks=4
numSuits  =  2   # a comment
numPlayers = 2
numRounds = 2
raiseSize = 3 6
blind = 2 1
maxRaises = 2 2
firstPlayer = 2 1
numBoardCards = 0 1
numHoleCards = 1
end gamedef
"""
NOTICE = "oppmodel: solving"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh cache folder for this test (and the processes it starts)."""
    folder = tmp_path / "cache"
    monkeypatch.setenv(solved.CACHE_ENV, str(folder))
    return folder


def _game_file(folder: Path, text: str = UNSEEN, name: str = "unseen.game") -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_the_cache_key_is_the_rules_not_the_text(tmp_path: Path) -> None:
    one = limit_game(_game_file(tmp_path))
    other = limit_game(_game_file(tmp_path, UNSEEN_REWRITTEN, "rewritten.game"))
    assert parse_game_def(UNSEEN) == parse_game_def(UNSEEN_REWRITTEN)
    assert solved.game_key(one) == solved.game_key(other)
    assert solved.cached_path(one) == solved.cached_path(other)
    bigger = limit_game(_game_file(tmp_path, UNSEEN.replace("3 6", "4 8"), "bigger.game"))
    assert solved.game_key(bigger) != solved.game_key(one)


def test_the_cache_folder_follows_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(solved.CACHE_ENV)
    monkeypatch.setenv("XDG_CACHE_HOME", "/x/cache")
    assert solved.cache_folder() == Path("/x/cache/oppmodel")
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert solved.cache_folder() == Path.home() / ".cache" / "oppmodel"
    monkeypatch.setenv(solved.CACHE_ENV, "/y")
    assert solved.cache_folder() == Path("/y")


def test_a_bundled_game_read_from_another_file_uses_the_bundled_strategy(
    tmp_path: Path, cache: Path
) -> None:
    copy = limit_game(_game_file(tmp_path, limit_game("leduc2p").gamedef.to_text(), "copy.game"))
    assert copy.name == "copy.game"
    np.testing.assert_array_equal(
        solved.solved_profile(copy), solved.solved_profile(limit_game("leduc2p"))
    )
    assert not cache.exists()  # nothing solved, nothing cached


def test_a_game_too_large_to_solve_on_first_use_is_refused_with_its_size(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    game = limit_game(_game_file(tmp_path))  # 28,896 states; a real game that large compiles slowly
    monkeypatch.setattr(solved, "MAX_SOLVE_STATES", 10_000)
    message = (
        r"no solved strategy for .*unseen.game \(28,896 states, .* bound of 10,000 .*oppmodel solve"
    )
    with pytest.raises(UnknownGameError, match=message):
        solved.solved_profile(game)
    assert not cache.exists()


_SOLVE_WHEN_TOLD = """
import hashlib, sys, time
from pathlib import Path
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import solved_profile
game = limit_game(sys.argv[1])
Path(sys.argv[2]).touch()  # ready
while not Path(sys.argv[3]).exists():
    time.sleep(0.01)
print(hashlib.sha256(solved_profile(game).tobytes()).hexdigest())
"""


def test_two_processes_solving_at_once_solve_once_and_agree(tmp_path: Path, cache: Path) -> None:
    game_file = _game_file(tmp_path)
    go = tmp_path / "go"
    ready = [tmp_path / "ready0", tmp_path / "ready1"]
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", _SOLVE_WHEN_TOLD, str(game_file), str(r), str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for r in ready
    ]
    while not all(r.exists() for r in ready):  # both started: let them ask at the same moment
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.01)
    go.touch()
    results = [p.communicate(timeout=300) for p in processes]
    assert all(p.returncode == 0 for p in processes), results
    assert sum(err.count(NOTICE) for _, err in results) == 1, results
    assert results[0][0] == results[1][0]  # the same strategy, the one in the cache
    game = limit_game(game_file)
    assert list((cache / "strategies").glob("*.json")) == [solved.cached_path(game)]


def test_every_command_plays_an_unseen_game_with_its_solved_strategy_the_second_time_cached(
    tmp_path: Path, cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    game_file = _game_file(tmp_path)
    rules = parse_game_def(UNSEEN)
    agent = [sys.executable, "-m", "oppmodel.clients.cli", "acpc-agent", str(game_file)]

    # 1. MBBR in-process and the cfr agent, two processes in one match: one solves, once
    processes = []

    def start(ports: tuple[int, ...]) -> list:
        for port, flags in zip(ports, (["--in-process"], ["--agent", "cfr"]), strict=True):
            processes.append(
                subprocess.Popen(
                    [*agent, "127.0.0.1", str(port), *flags, "--json"],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        return []

    captured, _ = run_dealer(
        tmp_path, hands=20, game=rules, names=("mbbr", "cfr"), clients=start, quiet=True,
        start_timeout_ms=120_000, t_response_ms=120_000,
    )  # fmt: skip
    results = [p.communicate(timeout=120) for p in processes]
    assert captured.result.status == 0, (captured.stderr, results)
    assert all(json.loads(out)["hands"] == 20 for out, _ in results), results
    assert sum(err.count(NOTICE) for _, err in results) == 1, results
    game = limit_game(game_file)
    path = solved.cached_path(game)
    written = path.stat().st_mtime_ns
    profile = load_profile(game, path)
    assert nash_conv(game, profile) <= solved.NASH_CONV_BOUND * 2  # the big blind is 2
    doc = json.loads(path.read_text())
    assert doc["solver"]["algorithm"] == "cfr+" and doc["solver"]["iterations"] <= 1000

    # 3. match and eval (this process has not read the game yet): from the cache
    assert main(["match", "--game", str(game_file), "--agents", "mbbr,cfr", "--hands", "10",
                 "--duplicates", "1", "--json"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert {r["name"] for r in json.loads(out)["ranking"]} == {"mbbr", "cfr"}
    assert NOTICE not in err
    assert main(["eval", "--game", str(game_file), "--profile", "cfr", "--json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["nash_conv"] == pytest.approx(nash_conv(game, profile), abs=1e-12)
    assert NOTICE not in err
    assert path.stat().st_mtime_ns == written

    # 4. demo: MBBR through the service, which solves into its own store (the same solution);
    # the cfr opponent from the cache
    demo = tmp_path / "demo"
    assert main(["demo", "--game", str(game_file), "--opponents", "cfr", "--hands", "10",
                 "--duplicates", "1", "--data-dir", str(demo), "--json"]) == 0  # fmt: skip
    out, err = capsys.readouterr()
    assert json.loads(out)["hands"] == 20 and NOTICE not in err
    store = open_storage(str(demo / "oppmodel.sqlite"), synchronous="NORMAL")
    try:
        stored = store.load_solved_async(solved.game_key(game)).result()
    finally:
        store.close()
    np.testing.assert_array_equal(parse_profile(game, stored, "stored"), profile)
    assert path.stat().st_mtime_ns == written

    # the library: cfr, STYLE@S's base and MBBR's default strategy and prior mean are the file's
    np.testing.assert_array_equal(named_profile(game, "cfr"), profile)
    model = build_model(game)
    np.testing.assert_array_equal(model.default_strategy, profile)
    np.testing.assert_array_equal(model.prior_mean, profile)
    assert path.stat().st_mtime_ns == written


@contextlib.contextmanager
def _client(store_location: str) -> Iterator[OpponentModelClient]:
    """A client of a fresh server over the store, patient: a first session of a game waits for
    its solve, and the model it builds loads kernels, on a machine that may be busy."""
    with (
        running_server(store_location) as port,
        OpponentModelClient(f"127.0.0.1:{port}", timeout=120) as client,
    ):
        yield client


def _created(client: OpponentModelClient, rules: str, messages: list[str]) -> str:
    """A session of ``rules``, asked again while the service answers that it is solving them
    (each answer kept in ``messages``)."""
    for _ in range(200):  # a solve of UNSEEN takes seconds; this bounds a broken server
        try:
            return client.create_session(
                game=rules, opponent_labels=["x"], wait_for_solve=False
            ).session_id
        except GameSolvingError as exc:
            messages.append(str(exc))
            time.sleep(0.5)
    raise AssertionError(f"still solving: {messages[-1]}")


def test_service_sessions_of_an_unseen_game_share_one_solve_kept_in_the_store(
    tmp_path: Path, cache: Path, store_location: str, caplog: pytest.LogCaptureFixture
) -> None:
    game = limit_game(_game_file(tmp_path))
    infoset = int(game.infosets(1)[0])
    line = decision_line(game, 1, infoset)
    caplog.set_level(logging.INFO, logger="oppmodel.server")
    messages: list[str] = []
    with _client(store_location) as client:
        first = _created(client, UNSEEN, messages)
        # the same rules, another text: no second solve (the client would wait for one)
        second = client.create_session(game=UNSEEN_REWRITTEN, opponent_labels=["x"]).session_id
        played = [client.action(s, matchstate=line).probabilities for s in (first, second)]
    solves = [r for r in caplog.records if r.getMessage() == "solving game"]
    assert len(solves) == 1
    for message in messages:  # if the solve outlasted the wait, the answer said so
        assert re.fullmatch(r"config\.game: solving game acpc .*: retry in \d+ s", message)
    store = open_storage(store_location, synchronous="NORMAL")
    try:
        text = store.load_solved_async(solved.game_key(game)).result()
    finally:
        store.close()
    profile = parse_profile(game, text, "stored")
    assert nash_conv(game, profile) <= solved.NASH_CONV_BOUND * 2
    row = profile[1, infoset]
    for probabilities in played:  # MBBR plays its default strategy, the stored solution
        np.testing.assert_allclose(probabilities, row, atol=1e-12)

    caplog.clear()  # a restarted server: the stored solution, no solve
    with _client(store_location) as client:
        third = _created(client, UNSEEN, messages)
        again = client.action(first, matchstate=line).probabilities  # a reloaded session
        np.testing.assert_allclose(client.action(third, matchstate=line).probabilities, row)
        np.testing.assert_allclose(again, row, atol=1e-12)
    assert not [r for r in caplog.records if r.getMessage() == "solving game"]
    assert not cache.exists()  # the service keeps its solutions in its store only
