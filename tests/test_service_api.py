"""The service driven only through the client, checked against the in-process library.

Oracle: the compiled ``kuhn3p`` model built with the same config and fed the same observations
(``service_support.CompiledKuhn``); the service's models, responses and policies must equal it
exactly (the service is a transport and a presentation, not a model).
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from service_support import (
    GAME,
    CompiledKuhn,
    connected,
    kuhn_library,
    random_observations,
    running_server,
)

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.service_agent import service_mbbr_factory
from oppmodel.modeling.errors import (
    FailedPreconditionError,
    NotFoundError,
    ResourceExhaustedError,
)
from oppmodel.modeling.games.acpc.betting import RAISE
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.play.match import fixed_strategy_factory, run_duplicate
from oppmodel.modeling.play.panel import named_profile
from oppmodel.modeling.strategy import strategy_to_dict
from oppmodel.server.session_spec import Limits

CONFIG = MBBRConfig(k=6, hands_default=5, seed=11)


def _library(observations, config: MBBRConfig = CONFIG) -> CompiledKuhn:
    return kuhn_library(config, observations)


def _assert_matches_library(client: OpponentModelClient, sid: str, model: CompiledKuhn) -> None:
    labels = client.get_session(sid).opponent_labels
    for offset, label in enumerate(labels, start=1):
        for opp_position in range(3):
            got = client.model(sid, label, opp_position)
            our_position = (opp_position - offset) % 3
            want, ess = model.opponent_model(our_position, opp_position)
            assert got.our_position == our_position
            assert got.effective_sample_size == ess
            assert got.strategy.as_dict() == {
                s: tuple(p) for s, p in strategy_to_dict(GAME, opp_position, want).items()
            }
    for position in range(3):
        for kind in ("mean", "bayes"):
            got = client.response(sid, position, kind)
            strategy, value = model.response(position, kind)
            assert got.expected_value == value
            assert got.kind == kind
            assert got.strategy.as_dict() == {
                s: tuple(p) for s, p in strategy_to_dict(GAME, position, strategy).items()
            }


def test_observe_then_query_equals_library(tmp_path: Path) -> None:
    observations = random_observations(40, seed=1)
    with connected(tmp_path / "db.sqlite") as (client, _):
        session = client.create_session(config=CONFIG)
        assert session.config == CONFIG and session.hands_observed == 0
        assert client.observe(session.session_id, observations, first_sequence=1) == 40
        model = _library(observations)
        _assert_matches_library(client, session.session_id, model)
        # The policy at every information state: the response after H hands.
        for position in range(3):
            policy = model.policy(position)
            for index, name in (
                (i, GAME.infoset_string(position, i)) for i in GAME.infosets(position)
            ):
                card, history = int(name[0]), name[1:]
                got = client.action(
                    session.session_id, position=position, card=card, history=history
                )
                assert got.probabilities == tuple(policy[index])
                assert got.infostate == name and not got.default_policy
                assert got.probabilities[got.action] > 0
                acpc = GAME.history_to_acpc(history)
                cards = ["", "", ""]
                cards[position] = "JQKA"[card] + "s"
                line = f"MATCHSTATE:{position}:7:{acpc}:{'|'.join(cards)}"
                same = client.action(session.session_id, matchstate=line)
                assert same.probabilities == got.probabilities and same.infostate == name


def test_default_policy_for_the_first_h_hands(tmp_path: Path) -> None:
    observations = random_observations(5, seed=2)
    with connected(tmp_path / "db.sqlite") as (client, _):
        sid = client.create_session(config=CONFIG).session_id
        for hand, obs in enumerate(observations, start=1):
            decision = client.action(sid, position=0, card=1, history="")
            model = _library(observations[: hand - 1])
            assert decision.default_policy
            assert decision.probabilities == tuple(model.policy(0)[GAME.infoset_index(0, 1, "")])
            client.observe(sid, [obs], first_sequence=hand)
        assert not client.action(sid, position=0, card=1, history="").default_policy


def test_actions_are_repeatable_and_follow_draw(tmp_path: Path) -> None:
    with connected(tmp_path / "db.sqlite") as (client, _):
        sid = client.create_session(config=MBBRConfig(hands_default=0, seed=4)).session_id
        draws = [client.action(sid, position=1, card=1, history="p", draw=d) for d in range(64)]
        again = [client.action(sid, position=1, card=1, history="p", draw=d) for d in range(64)]
        assert draws == again
        probabilities = draws[0].probabilities
        seen = {d.action for d in draws}
        assert seen == {a for a in (0, 1) if probabilities[a] > 0}


def test_sessions_list_get_delete(store_location: str) -> None:
    with connected(store_location) as (client, _):
        first = client.create_session(config=CONFIG)
        second = client.create_session(opponent_labels=("x", "y"), config=MBBRConfig(k=3))
        assert [s.session_id for s in client.list_sessions()] == [
            first.session_id,
            second.session_id,
        ]
        assert client.get_session(second.session_id).opponent_labels == ("x", "y")
        client.delete_session(first.session_id)
        with pytest.raises(NotFoundError):
            client.get_session(first.session_id)
        with pytest.raises(NotFoundError):
            client.delete_session(first.session_id)
        assert [s.session_id for s in client.list_sessions()] == [second.session_id]


def test_duplicates_acknowledged_once_and_gaps_refused(store_location: str) -> None:
    observations = random_observations(6, seed=3)
    with connected(store_location) as (client, _):
        sid = client.create_session(config=CONFIG).session_id
        client.observe(sid, observations[:4], first_sequence=1)
        # Resend 2..4 with 5 behind them: 2..4 are acknowledged again, only 5 is applied.
        acks = list(
            client.observe_stream(
                iter([_request(sid, s, observations[s - 1]) for s in (2, 3, 4, 5)])
            )
        )
        assert [(a.sequence, a.duplicate, a.hands_observed) for a in acks] == [
            (2, True, 4),
            (3, True, 4),
            (4, True, 4),
            (5, False, 5),
        ]
        with pytest.raises(FailedPreconditionError, match="gap"):
            client.observe(sid, [observations[5]], first_sequence=7)
        with pytest.raises(FailedPreconditionError, match="different content"):
            client.observe(sid, [observations[0]], first_sequence=2)
        assert client.get_session(sid).hands_observed == 5
        _assert_matches_library(client, sid, _library(observations[:5]))


def _request(sid, sequence, obs):
    from oppmodel.clients.client import observation_message
    from oppmodel.v1 import opponent_model_pb2 as pb

    return pb.ObserveRequest(session_id=sid, observation=observation_message(sequence, obs))


def test_restart_mid_match_resumes_the_exact_posterior(store_location: str) -> None:
    observations = random_observations(60, seed=5)
    db = store_location
    with connected(db) as (client, _):
        sid = client.create_session(config=CONFIG).session_id
        client.observe(sid, observations[:25], first_sequence=1)
    with connected(db) as (client, _):  # a new server process state: only the database is shared
        assert client.get_session(sid).hands_observed == 25
        client.observe(sid, observations[25:], first_sequence=26)
        _assert_matches_library(client, sid, _library(observations))


def test_dirichlet_posterior_sessions_equal_the_library_across_a_restart(tmp_path: Path) -> None:
    config = MBBRConfig(hands_default=5, seed=3, posterior="dirichlet", prior="typed")
    observations = random_observations(60, seed=8)
    db = tmp_path / "db.sqlite"
    with connected(db) as (client, _):
        session = client.create_session(config=config)
        assert session.config == config
        client.observe(session.session_id, observations[:30], first_sequence=1)
    with connected(db) as (client, _):
        assert client.get_session(session.session_id).config == config
        client.observe(session.session_id, observations[30:], first_sequence=31)
        _assert_matches_library(client, session.session_id, _library(observations, config))


def test_change_detection_sessions_equal_the_library_across_a_restart(tmp_path: Path) -> None:
    """A session with a high hazard, whose opponents turn from maniacs to tight-passive players,
    rebuilds its bank of runs after a restart and answers as the library does."""
    config = MBBRConfig(hands_default=5, seed=3, change_hazard=0.1)
    observations = random_observations(50, seed=8)
    observations += random_observations(40, seed=9, profile="tight-passive")
    db = tmp_path / "db.sqlite"
    with connected(db) as (client, _):
        session = client.create_session(config=config)
        assert session.config == config
        client.observe(session.session_id, observations[:55], first_sequence=1)
    with connected(db) as (client, _):
        assert client.get_session(session.session_id).config == config
        client.observe(session.session_id, observations[55:], first_sequence=56)
        model = _library(observations, config)
        assert model.run_start > 0
        _assert_matches_library(client, session.session_id, model)


def test_client_resends_unacknowledged_after_the_server_returns(store_location: str) -> None:
    observations = random_observations(30, seed=6)
    db = store_location
    with running_server(db) as port, OpponentModelClient(f"127.0.0.1:{port}") as client:
        sid = client.create_session(config=CONFIG).session_id
        client.observe(sid, observations[:10], first_sequence=1)
    # The server is down; the client keeps trying while a new one starts on the same port.
    with OpponentModelClient(f"127.0.0.1:{port}", reconnect_seconds=20) as client:
        result: list[int] = []
        sender = threading.Thread(
            target=lambda: result.append(client.observe(sid, observations[5:], first_sequence=6))
        )
        sender.start()
        with running_server(db, port=port):
            sender.join(timeout=30)
            assert result == [30]
            _assert_matches_library(client, sid, _library(observations))


def test_full_duplicate_match_through_the_service(tmp_path: Path) -> None:
    game = limit_game("kuhn3p")  # the match engine's Kuhn: its sessions are "kuhn3p"
    names = ["mbbr", "always-bet", "tight-passive"]
    with connected(tmp_path / "db.sqlite") as (client, _):
        sessions: list[str] = []
        factories = [
            service_mbbr_factory(
                client,
                name="mbbr",
                config=MBBRConfig(k=5, hands_default=10),
                sessions=sessions,
            ),
            *(fixed_strategy_factory(name, named_profile(game, name)) for name in names[1:]),
        ]
        result = run_duplicate(game, names, factories, hands=30, duplicates=1, seed=9)
        assert [r.name for r in result.agents] == names
        # Kuhn is zero-sum: the duplicate averages cancel exactly.
        assert sum(r.rate for r in result.agents) == pytest.approx(0.0, abs=1e-9)
        assert [client.get_session(s).hands_observed for s in sessions] == [30] * 6
        # The opponent always bets: when it opens, its model bets more than before any hand.
        learned = client.model(sessions[0], "always-bet", 0)
        seed = client.get_session(sessions[0]).config.seed
        fresh = build_model(game, MBBRConfig(k=5, hands_default=10, seed=seed))
        prior, _ = fresh.opponent_model(learned.our_position, 0)
        opening = [game.infoset_from_string(0, f"{card}:") for card in game.deck]
        model = learned.strategy.as_dict()
        assert sum(model[f"{card}:"][RAISE] for card in game.deck) > prior[opening, RAISE].sum()
        # Same seed, same match: a second run through the service reproduces the results.
        again = run_duplicate(game, names, factories, hands=30, duplicates=1, seed=9)
        assert again == result


def test_observation_stream_resends_after_the_server_returns(store_location: str) -> None:
    observations = random_observations(12, seed=10)
    db = store_location
    server = running_server(db)
    port = server.__enter__()
    with OpponentModelClient(f"127.0.0.1:{port}", reconnect_seconds=20) as client:
        sid = client.create_session(config=CONFIG).session_id
        stream = client.observation_stream(sid, first_sequence=1)
        assert [stream.send(obs) for obs in observations[:6]] == [1, 2, 3, 4, 5, 6]
        server.__exit__(None, None, None)  # the stream's server is gone
        with running_server(db, port=port):
            assert [stream.send(obs) for obs in observations[6:]] == [7, 8, 9, 10, 11, 12]
            stream.close()
            _assert_matches_library(client, sid, _library(observations))


def test_large_tables_are_computed_on_the_pool_and_equal_the_library(tmp_path: Path) -> None:
    config = MBBRConfig(k=40, hands_default=2, seed=3)  # 1600 joint samples > the inline limit
    observations = random_observations(8, seed=7)
    with connected(tmp_path / "db.sqlite") as (client, _):
        sid = client.create_session(config=config).session_id
        client.observe(sid, observations, first_sequence=1)
        model = kuhn_library(config, observations)
        got = client.model(sid, "opp_B", 2)
        want, ess = model.opponent_model(got.our_position, 2)
        assert got.effective_sample_size == ess
        assert (got.strategy.probabilities == want[GAME.infosets(2)]).all()
        assert client.response(sid, 1, "bayes").expected_value == model.response(1, "bayes")[1]


def test_evicted_sessions_reload_by_replay(store_location: str) -> None:
    from oppmodel.server.session_spec import Limits

    observations = random_observations(12, seed=8)
    with connected(store_location, limits=Limits(memory_bytes=450_000)) as (client, _):
        sids = [client.create_session(config=CONFIG).session_id for _ in range(4)]
        for half in (observations[:6], observations[6:]):
            for sid in sids:  # round robin: every session is evicted and reloaded in between
                first = client.get_session(sid).hands_observed + 1
                client.observe(sid, half, first_sequence=first)
        model = _library(observations)
        for sid in sids:
            _assert_matches_library(client, sid, model)


def test_queries_do_not_wait_for_a_pending_commit(tmp_path: Path, monkeypatch) -> None:
    from concurrent.futures import Future

    from oppmodel.server.storage_sqlite import SQLiteStore

    gate, entered = threading.Event(), threading.Event()
    original = SQLiteStore.append_observations_async

    def gated(self, session_id, rows):  # the commit cannot finish before the gate opens
        result: Future = Future()
        entered.set()

        def run() -> None:
            gate.wait(30)
            inner = original(self, session_id, rows)
            inner.add_done_callback(lambda f: result.set_result(f.result()))

        threading.Thread(target=run, daemon=True).start()
        return result

    monkeypatch.setattr(SQLiteStore, "append_observations_async", gated)
    observations = random_observations(2, seed=9)
    with connected(tmp_path / "db.sqlite") as (client, _):
        sid = client.create_session(config=CONFIG).session_id
        done: list[int] = []
        sender = threading.Thread(
            target=lambda: done.append(client.observe(sid, observations, first_sequence=1))
        )
        sender.start()
        assert entered.wait(30)  # the observations are in the commit
        # While the commit is held, queries answer from the last committed state.
        assert client.action(sid, position=0, card=1, history="").hands_observed == 0
        assert client.model(sid, "opp_A", 1).hands_observed == 0
        assert done == []
        gate.set()
        sender.join(timeout=30)
        assert done == [2]
        assert client.action(sid, position=0, card=1, history="").hands_observed == 2


def test_a_client_told_to_batch_observes_in_observe_batch_calls(tmp_path: Path) -> None:
    """observe_batches=True (what a Ray deployment's reply switches on): observe sends
    ObserveBatch calls of at most MAX_BATCH hands, so it works on a server that opens no
    Observe stream at all, and the model is the library's."""
    observations = random_observations(1100, seed=9)  # two calls: 1024 + 76
    config = MBBRConfig(k=3, hands_default=0, seed=2)
    with running_server(tmp_path / "s.sqlite", limits=Limits(max_streams=0)) as port:
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=30) as client:
            sid = client.create_session(config=config).session_id
            with pytest.raises(ResourceExhaustedError, match="streams"):
                client.observe(sid, observations[:1], first_sequence=1)
        batching = OpponentModelClient(f"127.0.0.1:{port}", timeout=30, observe_batches=True)
        with batching as client:
            assert client.observe(sid, observations, first_sequence=1) == 1100
            library = kuhn_library(config, observations)
            assert client.response(sid, 1).expected_value == library.response(1)[1]
