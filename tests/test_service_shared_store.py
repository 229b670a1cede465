"""Two servers on one store (each with its own connection and its own copies of the sessions, as
two processes sharing a PostgreSQL database would be): every hand and every choice is stored and
applied exactly once whichever server receives it, and both end with the library's posterior.

On both backends: SQLite's file can be shared too (its transactions are exclusive), which is how
the version check is exercised without PostgreSQL as well."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TypeVar

import numpy as np
from service_support import GAME, kuhn_library, random_observations, running_server
from test_service_perfect_info import (
    LIMITS,
    OPPONENTS,
    assert_same,
    in_process,
    new_session,
    random_choices,
)

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.perfect_info_client import PerfectInfoClient
from oppmodel.modeling.mbbr.config import MBBRConfig

CONFIG = MBBRConfig(k=5, hands_default=0, seed=4)
C = TypeVar("C", OpponentModelClient, PerfectInfoClient)


@contextlib.contextmanager
def two_servers(client: type[C], store: str, **overrides: object) -> Iterator[tuple[C, C]]:
    """Clients of two servers (each with its own connection and session copies) on one store."""
    with (
        running_server(store, **overrides) as port_a,
        running_server(store, **overrides) as port_b,
        client(f"127.0.0.1:{port_a}", timeout=30) as a,
        client(f"127.0.0.1:{port_b}", timeout=30) as b,
    ):
        yield a, b


def _assert_matches_library(client: OpponentModelClient, sid: str, hands: int) -> None:
    library = kuhn_library(CONFIG, random_observations(hands, seed=21))
    assert client.get_session(sid).hands_observed == hands
    for position in range(3):
        got = client.model(sid, "opp_A", position)
        want, ess = library.opponent_model(got.our_position, position)
        assert got.effective_sample_size == ess
        assert np.array_equal(got.strategy.probabilities, want[GAME.infosets(position)])
        served = client.response(sid, position, "bayes").expected_value
        assert served == library.response(position, "bayes")[1]


def test_hands_sent_to_either_server_are_applied_exactly_once(store_location: str) -> None:
    """Both servers receive every hand, in random batches at once (the worst case of a session
    served by two processes plus resends): no INTERNAL, no hand twice, the library's posterior."""
    observations = random_observations(60, seed=21)
    with two_servers(OpponentModelClient, store_location) as (a, b):
        sid = a.create_session(config=CONFIG).session_id
        failures: list[BaseException] = []

        def send_all(client: OpponentModelClient, seed: int) -> None:
            rng = np.random.default_rng(seed)
            start = 0
            try:
                while start < len(observations):
                    size = int(rng.integers(1, 8))
                    batch = observations[start : start + size]
                    client.observe(sid, batch, first_sequence=start + 1)
                    start += len(batch)
            except BaseException as exc:
                failures.append(exc)

        threads = [threading.Thread(target=send_all, args=(c, i)) for i, c in enumerate((a, b))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        assert failures == []
        for client in (a, b):
            # a resend of the last hand brings a server's copy up to date (if another server
            # applied it), then both answer with the library's posterior
            client.observe(sid, observations[-1:], first_sequence=len(observations))
            _assert_matches_library(client, sid, len(observations))


def test_a_server_behind_the_store_takes_the_next_hand_instead_of_calling_it_a_gap(
    store_location: str,
) -> None:
    observations = random_observations(30, seed=21)
    with two_servers(OpponentModelClient, store_location) as (a, b):
        sid = a.create_session(config=CONFIG).session_id
        for i, start in enumerate(range(0, 30, 5)):  # alternate batches: each server is behind
            client = (a, b)[i % 2]
            assert client.observe(sid, observations[start : start + 5], first_sequence=start + 1)
        _assert_matches_library(b, sid, 30)
        a.observe(sid, observations[-1:], first_sequence=30)
        _assert_matches_library(a, sid, 30)


def test_queries_answer_with_the_hands_another_server_applied(postgres_url: str) -> None:
    """On a shared store a server's copy is checked against the stored version before it
    answers: B answers with all 30 hands although A applied the last 20 after B loaded it."""
    observations = random_observations(30, seed=21)
    with two_servers(OpponentModelClient, postgres_url) as (a, b):
        sid = a.create_session(config=CONFIG).session_id
        a.observe(sid, observations[:10], first_sequence=1)
        _assert_matches_library(b, sid, 10)  # B loads it at 10 hands
        a.observe(sid, observations[10:], first_sequence=11)
        _assert_matches_library(b, sid, 30)
        assert b.action(sid, position=0, card=1, history="").hands_observed == 30


def test_choices_sent_to_either_server_are_stored_exactly_once(store_location: str) -> None:
    choices = random_choices(24, seed=5)
    with two_servers(PerfectInfoClient, store_location, perfect_info_limits=LIMITS) as (a, b):
        session_id = new_session(a)
        for i, start in enumerate(range(0, 24, 4)):  # alternate, each batch resending one
            client = (a, b)[i % 2]
            first = max(1, start)
            (ack,) = client.observe_choices(
                session_id, choices[first - 1 : start + 4], first_sequence=first, per_message=5
            )
            assert ack.choices_observed == start + 4
        for client in (a, b):
            client.observe_choices(session_id, choices[-1:], first_sequence=24)
            weights = client.model_weights(session_id)
            for index, opponent in enumerate(OPPONENTS):
                assert_same(weights[opponent.label], in_process(choices, index), 12)
