"""Shared helpers of the service tests: a real server on a free loopback port, random hands."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
from mbbr_support import kuhn_named_profile

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.observation import HandObservation, observe_hand
from oppmodel.server.app import BackgroundServer, ServerConfig

GAME = kuhn_game(3)


@contextlib.contextmanager
def running_server(db: Path, **overrides: object) -> Iterator[int]:
    """A server on 127.0.0.1:<free port> over the SQLite file ``db``; yields the port."""
    config = ServerConfig(db_path=str(db), port=overrides.pop("port", 0), **overrides)
    with BackgroundServer(config, grace=0.5) as port:
        yield port


@contextlib.contextmanager
def connected(db: Path, *, token: str | None = None, **overrides: object):
    """(client, port) of a fresh server over ``db``."""
    with (
        running_server(db, **overrides) as port,
        OpponentModelClient(f"127.0.0.1:{port}", token=token, timeout=10) as client,
    ):
        yield client, port


def wait_until(condition: Callable[[], bool], what: str, *, seconds: float = 60.0) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``seconds`` (generous: a
    quiet machine takes a fraction of it)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def hands_held(port: int, session_id: str) -> int:
    """How many hands the session on 127.0.0.1:``port`` has acknowledged."""
    with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
        return client.get_session(session_id).hands_observed


def random_observations(
    count: int, *, seed: int, game: KuhnGame = GAME, profile: str = "maniac"
) -> list[HandObservation]:
    """Observations of seat 0 over ``count`` hands (ACPC rotation), everyone playing ``profile``."""
    rng = np.random.default_rng(seed)
    table = kuhn_named_profile(game, profile)
    out = []
    for hand in range(count):
        cards = [int(c) for c in rng.permutation(game.num_cards)[: game.num_players]]
        history = ""
        while not game.is_terminal(history):
            p = game.current_player(history)
            index = game.infoset_index(p, cards[p], history)
            history += "pb"[int(rng.random() < table[p, index, 1])]
        out.append(observe_hand(game, (-hand) % game.num_players, history, cards))
    return out
