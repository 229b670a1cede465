"""The service's population prior (``server/populations.py``): stored in versions per owner and
game in both stores, fitted only from the caller's own sessions, recorded by each session and
kept across a restart, and the informed prior where none was fitted."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from service_support import connected, random_observations, wait_until

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.server.app import open_storage

INFORMED = MBBRConfig(hands_default=0, seed=5, change_hazard=0.0)
POPULATION = dataclasses.replace(INFORMED, prior=Prior.POPULATION)
KUHN = "kuhn_poker(players=3)"


def test_populations_are_versioned_per_owner_and_game(store_location: str) -> None:
    store = open_storage(store_location, synchronous="NORMAL")
    try:
        save, load = store.save_population_async, store.load_population_async
        assert save("alice", "g1", b"one").result() == 1
        assert save("alice", "g1", b"two").result() == 2
        assert save("alice", "g2", b"other game").result() == 1
        assert save("bob", "g1", b"bob's").result() == 1
        assert load("alice", "g1").result() == (2, b"two")
        assert load("alice", "g1", 1).result() == (1, b"one")
        assert load("alice", "g1", 3).result() is None
        assert load("bob", "g1").result() == (1, b"bob's")
        assert load("carol", "g1").result() is None
    finally:
        store.close()


def opponent_models(client: OpponentModelClient, session_id: str) -> np.ndarray:
    """Every opponent's model in every position it plays, stacked."""
    return np.array(
        [
            client.model(session_id, label, position).strategy.probabilities
            for label in ("opp_A", "opp_B")
            for position in range(3)
        ]
    )


def played(client: OpponentModelClient, config: MBBRConfig, hands: int, seed: int) -> str:
    """A new Kuhn session that observed ``hands`` hands of maniacs; its id."""
    sid = client.create_session(config=config).session_id
    client.observe_batch(sid, random_observations(hands, seed=seed), first_sequence=1)
    return sid


def test_a_population_is_the_owner_s_own_versioned_and_kept_across_a_restart(store_location: str):
    tokens = frozenset({"token-a", "token-b"})
    db = store_location
    with (
        connected(db, token="token-a", auth_tokens=tokens) as (a, port),
        OpponentModelClient(f"127.0.0.1:{port}", token="token-b", timeout=120) as b,
    ):
        # no population fitted yet: the informed prior, said as version 0
        early = b.create_session(config=POPULATION)
        assert early.population_version == 0 and early.config.prior == Prior.POPULATION
        informed_b = b.create_session(config=INFORMED).session_id
        assert np.array_equal(opponent_models(b, early.session_id), opponent_models(b, informed_b))
        for seed in (1, 2):  # owner A: two sessions, four opponents, all maniacs
            played(a, INFORMED, 150, seed)
        with pytest.raises(InvalidArgumentError) as info:
            a.fit_population("chess")
        assert info.value.field == "game"
        fit = a.fit_population(KUHN)
        assert (fit.version, fit.opponents, fit.sessions) == (1, 4, 2) and fit.fitted_infosets > 0
        first = a.create_session(config=POPULATION)
        assert first.population_version == 1
        informed_a = a.create_session(config=INFORMED).session_id
        learned = opponent_models(a, first.session_id)
        assert not np.allclose(learned, opponent_models(a, informed_a))
        # owner B's fit reads nothing of A's sessions: no opponent of its own has acted
        fit_b = b.fit_population(KUHN)
        assert (fit_b.version, fit_b.opponents, fit_b.fitted_infosets) == (1, 0, 0)
        late = b.create_session(config=POPULATION)
        assert late.population_version == 1
        assert np.array_equal(opponent_models(b, late.session_id), opponent_models(b, informed_b))
        # a new version for A: the session made before keeps version 1
        played(a, INFORMED, 150, 3)
        assert a.fit_population(KUHN).version == 2
        assert a.get_session(first.session_id).population_version == 1
        a.observe_batch(first.session_id, random_observations(20, seed=4), first_sequence=1)
        before = opponent_models(a, first.session_id)
    with connected(db, token="token-a", auth_tokens=tokens) as (a, _):  # a restart
        assert a.get_session(first.session_id).population_version == 1
        assert np.array_equal(opponent_models(a, first.session_id), before)
        assert a.create_session(config=POPULATION).population_version == 2


def test_a_session_s_end_refits_its_owner_s_population_and_keeps_its_opponents(
    store_location: str,
) -> None:
    tokens = frozenset({"token-a", "token-b"})
    with (
        connected(store_location, token="token-a", auth_tokens=tokens) as (a, port),
        OpponentModelClient(f"127.0.0.1:{port}", token="token-b", timeout=120) as b,
    ):
        # owner B has no population of the game: a deleted session leaves nothing behind
        b.delete_session(played(b, INFORMED, 150, 9))
        assert (b.fit_population(KUHN).opponents, b.fit_population(KUHN).sessions) == (0, 0)
        for seed in (1, 2):
            played(a, INFORMED, 150, seed)
        assert a.fit_population(KUHN).version == 1
        v1 = a.create_session(config=POPULATION)
        ended = played(a, INFORMED, 150, 3)
        a.delete_session(ended)  # its end refits A's population in the background: version 2
        sessions = [v1.session_id]  # every POPULATION session made here, none with a hand

        def refitted() -> bool:
            time.sleep(0.2)  # a session per look: a few dozen at most
            sessions.append(a.create_session(config=POPULATION).session_id)
            return a.get_session(sessions[-1]).population_version == 2

        wait_until(refitted, "the population refitted after the session's end")
        v2 = sessions[-1]
        assert not np.allclose(opponent_models(a, v2), opponent_models(a, v1.session_id))
        # a later fit still counts the ended session's opponents, from its kept counts
        fit = a.fit_population(KUHN)
        assert (fit.version, fit.opponents, fit.sessions) == (3, 6, 3 + len(sessions))
        v3 = a.create_session(config=POPULATION).session_id
        assert np.array_equal(opponent_models(a, v3), opponent_models(a, v2))
