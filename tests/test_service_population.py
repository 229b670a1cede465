"""The service's population prior (``server/populations.py``): stored in versions per owner and
game in both stores, fitted only from the caller's own sessions, recorded by each session and
kept across a restart, and the informed prior where none was fitted."""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from service_support import (
    GAME,
    CompiledKuhn,
    connected,
    kuhn_library,
    random_observations,
    wait_until,
)

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.solved import default_profile, game_key
from oppmodel.modeling.mbbr.config import MBBRConfig, Prior
from oppmodel.modeling.population import Population
from oppmodel.modeling.population_types import PopulationKind, fit_kind
from oppmodel.server.app import open_storage
from oppmodel.server.conversion import parse_game
from oppmodel.server.sessions import owner_of_token
from oppmodel.v1 import opponent_model_pb2 as pb

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


def library_models(library: CompiledKuhn) -> np.ndarray:
    """:func:`opponent_models` of a library model: each opponent label's model in each position,
    from the position the service answers it from (the label's offset before it)."""
    rows = []
    for offset in (1, 2):
        for position in range(3):
            strategy, _ = library.opponent_model((position - offset) % 3, position)
            rows.append([strategy[i] for i in GAME.infosets(position)])
    return np.array(rows)


def stored_population(location: str, token: str, version: int | None = None) -> Population | None:
    """The population of 3-player Kuhn of ``token``'s owner as the store holds it (``version``'s,
    else the latest), read from the store itself; None if there is none."""
    compiled = parse_game(KUHN)[1].compiled
    store = open_storage(location, synchronous="NORMAL")
    try:
        found = store.load_population_async(owner_of_token(token), game_key(compiled), version)
        blob = found.result()
    finally:
        store.close()
    return None if blob is None else Population.from_bytes(compiled, blob[1])


def library_fit(kind: PopulationKind, *runs: tuple[int, str]) -> Population:
    """The population the library fits as ``kind`` from sessions of 150 hands each (seed,
    everyone's profile), their opponents in that order."""
    counts = [
        kuhn_library(
            INFORMED, random_observations(150, seed=seed, profile=profile)
        ).model.opponent_counts()
        for seed, profile in runs
    ]
    game = limit_game("kuhn3p")
    mean = default_profile(game, "prior_mean")
    return fit_kind(game, np.concatenate(counts), kind, prior_mean=mean)


def test_each_owner_s_types_are_its_own_sessions_and_a_session_on_them_plays_them(
    store_location: str,
) -> None:
    tokens = frozenset({"token-a", "token-b"})
    a_runs, b_runs = [(1, "maniac"), (2, "maniac")], [(5, "tight-passive"), (6, "tight-passive")]
    with (
        connected(store_location, token="token-a", auth_tokens=tokens) as (a, port),
        OpponentModelClient(f"127.0.0.1:{port}", token="token-b", timeout=120) as b,
    ):
        for client, runs in ((a, a_runs), (b, b_runs)):
            for seed, profile in runs:
                sid = client.create_session(config=INFORMED).session_id
                observations = random_observations(150, seed=seed, profile=profile)
                client.observe_batch(sid, observations, first_sequence=1)
        fit_b = b.fit_population(KUHN)  # the default kind: the types
        assert (fit_b.version, fit_b.opponents, fit_b.types) == (1, 4, 4)
        assert fit_b.kind == pb.POPULATION_KIND_TYPES
        fit_a = a.fit_population(KUHN, "types")
        assert (fit_a.version, fit_a.types, fit_a.kind) == (1, 4, pb.POPULATION_KIND_TYPES)
        # A's session ends: its refit (version 2, the types again) counts its opponents too
        ended = played(a, INFORMED, 150, 3)
        a.delete_session(ended)
        wait_until(lambda: stored_population(store_location, "token-a", 2) is not None, "A's refit")
        # each owner's stored types are exactly the library's fit of its own sessions' opponents
        kept_a = stored_population(store_location, "token-a")
        exact_a = library_fit(PopulationKind.TYPES, *a_runs, (3, "maniac"))
        exact_b = library_fit(PopulationKind.TYPES, *b_runs)
        for kept, exact in (
            (kept_a, exact_a),
            (stored_population(store_location, "token-b"), exact_b),
        ):
            assert kept is not None and kept.types is not None and exact.types is not None
            assert np.array_equal(kept.types, exact.types)
            assert np.array_equal(kept.type_weights, exact.type_weights)
            assert np.array_equal(kept.alpha, exact.alpha)
        assert len(exact_a.types) == 8 and len(exact_b.types) == 6
        # a session of A on the population prior plays from A's types: its models are the
        # library's on them fed the same hands, whose weights found a maniac of A's sessions
        session = a.create_session(config=POPULATION)
        assert session.population_version == 2
        hands = random_observations(30, seed=7)
        a.observe_batch(session.session_id, hands, first_sequence=1)
        typed = kuhn_library(POPULATION, hands, population=exact_a)
        polya = kuhn_library(POPULATION, hands, population=dataclasses.replace(exact_a, types=None))
        served = opponent_models(a, session.session_id)
        assert np.allclose(served, library_models(typed), rtol=0, atol=1e-12)
        assert not np.allclose(served, library_models(polya), atol=1e-3)
        for p in range(3):
            for d in (1, 2):
                assert typed.model._mixture[p].weights(d)[:6].sum() > 0.99  # A's members
        b_session = b.create_session(config=POPULATION).session_id
        b.observe_batch(b_session, hands, first_sequence=1)
        b_typed = library_models(kuhn_library(POPULATION, hands, population=exact_b))
        assert np.allclose(opponent_models(b, b_session), b_typed, rtol=0, atol=1e-12)
        # the Dirichlet kind asked: no types, and a refit after an end keeps that kind
        fit = b.fit_population(KUHN, "dirichlet")
        assert (fit.version, fit.types, fit.kind) == (2, 0, pb.POPULATION_KIND_DIRICHLET)
        b.delete_session(played(b, INFORMED, 150, 8))
        wait_until(lambda: stored_population(store_location, "token-b", 3) is not None, "B's refit")
        refit = stored_population(store_location, "token-b", 3)
        assert refit is not None and refit.types is None and refit.opponents == 8  # b_session too
        before = opponent_models(a, session.session_id)
    with connected(store_location, token="token-a", auth_tokens=tokens) as (a, _):  # a restart
        assert np.array_equal(opponent_models(a, session.session_id), before)
        more = random_observations(20, seed=9)
        a.observe_batch(session.session_id, more, first_sequence=31)
        for obs in more:
            typed.observe(obs)
        served = opponent_models(a, session.session_id)
        assert np.allclose(served, library_models(typed), rtol=0, atol=1e-12)
