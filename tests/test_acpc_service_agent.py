"""The ACPC agent playing through a real service: full matches over loopback TCP through the
project's dealer, with the service up, killed mid-match, and restarted."""

from __future__ import annotations

import asyncio
import io
import json
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path

import grpc
import numpy as np
import pytest
from acpc_support import (
    GAME,
    GAME_FILE,
    AgentThread,
    log_observations,
    run_dealer,
    stop_and_restart,
)
from service_support import hands_held, kuhn_library, running_server, wait_until

from oppmodel.clients.acpc.agent import SeatHand, make_policy
from oppmodel.clients.acpc.convert import kuhn_for
from oppmodel.clients.acpc.log import parse_log
from oppmodel.clients.acpc.service_policy import ServicePolicy
from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.commands.acpc_agent_cmd import main as agent_main
from oppmodel.clients.commands.acpc_script_cmd import script_text
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation
from oppmodel.server.app import BackgroundServer, ServerConfig, free_ports

CONFIG = MBBRConfig(k=6, hands_default=20, seed=5)


def stored_observations(db: Path, session_id: str) -> list[tuple[int, str, tuple]]:
    """(position, history, cards) of every observation the server stored, in sequence order,
    read straight from its SQLite file (cards: a JSON list, null where hidden)."""
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT position, history, cards FROM observations WHERE session_id = ?"
            " ORDER BY sequence",
            (session_id,),
        ).fetchall()
    return [(position, history, tuple(json.loads(cards))) for position, history, cards in rows]


def acpc_view(view: HandObservation) -> tuple[int, str, tuple]:
    """(position, ACPC betting, hole cards as text then the board, "" in Kuhn) of a seat's Kuhn
    view, as a kuhn3p session stores it."""
    betting = kuhn_for(GAME).history_to_acpc(view.history)
    hole = tuple(None if c is None else GAME.deck[c] for c in view.cards)
    return view.position, betting, (*hole, "")


# the decision budget of the tests that count outages or fallback decisions: a bound on a hang,
# not a speed check (with both cores busy a decision took over 4 s, DEADLINE_EXCEEDED being an
# outage of its own); under the tests' dealer's reply limit (acpc_support.LOADED_LIMIT_MS). The
# background calls keep the agent's own deadline: one it misses is no outage.
AGENT_DEADLINE = 30.0


def play(tmp_path: Path, policy, hands: int):
    """A match: ``policy`` in seat 0 (Alice) against N1 and always-bet agents."""
    policies = [policy, make_policy("n1", GAME, 1), make_policy("always-bet", GAME, 2)]
    captured, agents = run_dealer(
        tmp_path,
        hands=hands,
        clients=lambda ports: [AgentThread(p, q) for p, q in zip(ports, policies, strict=True)],
        quiet=True,
    )
    return captured, agents


def test_a_match_through_the_service_sends_only_what_the_seat_saw_and_models_exactly(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite"
    hands = 60
    with running_server(db, synchronous="NORMAL") as port:
        err = io.StringIO()
        policy = ServicePolicy(
            GAME,
            f"127.0.0.1:{port}",
            config=CONFIG,
            stderr=err,
            deadline=AGENT_DEADLINE,
        )
        captured, agents = play(tmp_path, policy, hands)
        policy.close()
        assert captured.result.status == 0, captured.stderr
        assert err.getvalue() == ""
        assert policy.fallback_decisions == 0
        assert policy.service_decisions == agents[0].result.actions > 0
        log = parse_log(captured.log)
        assert agents[0].result.total == log.score.totals[0]
        # the service's model equals an in-process MBBR model fed the same seat's view
        views = [observation for _, observation in log_observations(GAME, log, "Alice")]
        replayed = kuhn_library(CONFIG, views)
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
            session = client.get_session(policy.session_id)
            assert session.hands_observed == hands
            assert session.game == "kuhn3p"  # the compiled game, as every game's session plays
            for position in range(3):
                for d, label in enumerate(policy.opponent_labels, start=1):
                    q = (position + d) % 3
                    model = client.model(policy.session_id, label, q)
                    expected, ess = replayed.served_opponent_model(position, q)
                    assert np.allclose(model.strategy.probabilities, expected, atol=1e-12)
                    assert model.effective_sample_size == np.float64(ess)
    # what reached the store is exactly the seat's view: no folded or uncontested card (the
    # session plays the compiled kuhn3p: ACPC betting, cards as text)
    views = [obs for _, obs in log_observations(GAME, log, "Alice")]
    assert stored_observations(db, policy.session_id) == [acpc_view(v) for v in views]
    hidden = sum(c is None for v in views for c in v.cards)
    assert hidden > hands // 2  # the check above compared plenty of hidden cards


def test_killing_the_service_mid_match_falls_back_to_n1_once_and_the_match_completes(
    tmp_path: Path,
) -> None:
    db = tmp_path / "s.sqlite"
    port = free_ports(1)[0]
    server = BackgroundServer(ServerConfig(db_path=str(db), port=port, synchronous="NORMAL"))
    server.start()
    err = io.StringIO()

    killed_after: list[int] = []

    class KillAt(ServicePolicy):
        def observe(self, hand: SeatHand) -> None:
            super().observe(hand)
            # from hand 25 on, once the service has decided (a loaded machine may miss the
            # first budgets and start on the fallback)
            if hand.hand >= 25 and self.service_decisions > 0 and not killed_after:
                killed_after.append(hand.hand)
                server.stop()

    policy = KillAt(
        GAME,
        f"127.0.0.1:{port}",
        config=CONFIG,
        stderr=err,
        deadline=AGENT_DEADLINE,
    )
    try:
        captured, agents = play(tmp_path, policy, 70)
    finally:
        policy.close()
        server.stop()
    assert captured.result.status == 0, captured.stderr
    assert len(parse_log(captured.log).hands) == 70
    assert agents[0].result.hands == 70
    assert policy.service_decisions > 0 and policy.fallback_decisions > 0
    # a call in flight when the server stops is cancelled by it, a later one finds no server:
    # either way the service is unavailable
    failures = re.findall(r"the service failed \((\w+): ", err.getvalue())
    assert failures == ["UNAVAILABLE"], err.getvalue()
    assert not policy.healthy
    outage = policy.outages[-1]  # from the first decision after the kill; never back
    assert outage.first_hand in (killed_after[0] + 1, killed_after[0] + 2)
    assert outage.back_at_hand is None


def test_a_restarted_service_gets_every_missed_hand_and_plays_again(tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    port = free_ports(1)[0]
    config = ServerConfig(db_path=str(db), port=port, synchronous="NORMAL")
    servers = [BackgroundServer(config)]
    servers[0].start()
    err = io.StringIO()

    policy_class = stop_and_restart(servers, config, stop_at=20, start_at=40)
    policy = policy_class(
        GAME,
        f"127.0.0.1:{port}",
        config=CONFIG,
        stderr=err,
        retry_interval=0.05,
        deadline=AGENT_DEADLINE,
    )
    try:
        captured, agents = play(tmp_path, policy, 120)
        policy.close()
        assert captured.result.status == 0, captured.stderr
        (outage,) = policy.outages
        assert 20 < outage.first_hand <= 21 < 40 < outage.back_at_hand <= 42
        assert f"hand {outage.back_at_hand}: back on the service" in err.getvalue()
        assert policy.healthy
        # back on the service after the restart, and the session holds every hand
        assert policy.service_decisions + policy.fallback_decisions == agents[0].result.actions
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
            assert client.get_session(policy.session_id).hands_observed == 120
    finally:
        for server in servers:
            server.stop()
    views = [obs for _, obs in log_observations(GAME, parse_log(captured.log), "Alice")]
    assert stored_observations(db, policy.session_id) == [acpc_view(v) for v in views]


class LateSends(grpc.aio.ServerInterceptor):
    """Holds the first ``calls`` Observe and ObserveBatch calls past their client's deadline,
    answering nothing: what a background send meets on a server too busy to answer in time."""

    def __init__(self, calls: int) -> None:
        self.left = calls
        self.missed = 0  # calls held until their client's deadline had passed

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[grpc.RpcMethodHandler]],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler:
        handler = await continuation(details)
        if details.method.rsplit("/", 1)[-1] not in ("Observe", "ObserveBatch") or not self.left:
            return handler
        self.left -= 1

        async def late(request: object, context: grpc.aio.ServicerContext) -> None:
            try:  # gRPC cancels the call at its deadline, or it is refused after it
                await asyncio.sleep(context.time_remaining() + 0.1)
                await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "held past the deadline")
            finally:
                self.missed += 1

        make = (
            grpc.stream_stream_rpc_method_handler
            if handler.request_streaming
            else grpc.unary_unary_rpc_method_handler
        )
        return make(
            late,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


@pytest.mark.parametrize("batches", [False, True], ids=["stream", "batches"])
def test_a_send_that_misses_its_deadline_is_no_outage_and_its_hands_go_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batches: bool
) -> None:
    """A busy server answers two background sends after their deadline: the hands are sent
    again with a longer one, and the decisions stay on the service (only a decision call
    decides an outage)."""
    late = LateSends(calls=2)
    server = grpc.aio.server
    monkeypatch.setattr(
        grpc.aio, "server", lambda **options: server(interceptors=[late], **options)
    )
    db = tmp_path / "s.sqlite"
    hands = 30
    with running_server(db, synchronous="NORMAL") as port:
        err = io.StringIO()

        class HeldAt(ServicePolicy):
            def observe(self, hand: SeatHand) -> None:
                super().observe(hand)
                if hand.hand == 5:  # the match goes on once two sends missed their deadline
                    wait_until(lambda: late.missed == 2, "two sends held past their deadline")

        policy = HeldAt(
            GAME,
            f"127.0.0.1:{port}",
            config=CONFIG,
            stderr=err,
            deadline=AGENT_DEADLINE,
            connect_timeout=0.5,
            observe_batches=batches,
        )
        captured, agents = play(tmp_path, policy, hands)
        policy.close()
        assert captured.result.status == 0, captured.stderr
        assert err.getvalue() == "" and policy.outages == []
        assert policy.fallback_decisions == 0
        assert policy.service_decisions == agents[0].result.actions > 0
        assert hands_held(port, policy.session_id) == hands
    views = [obs for _, obs in log_observations(GAME, parse_log(captured.log), "Alice")]
    assert stored_observations(db, policy.session_id) == [acpc_view(v) for v in views]


class CommandThread:
    """``oppmodel acpc-agent ARGV`` in a thread (joined by run_dealer like the other clients)."""

    def __init__(self, argv: list[str]) -> None:
        self.status: int | None = None
        self._thread = threading.Thread(target=self._run, args=(argv,), daemon=True)
        self._thread.start()

    def _run(self, argv: list[str]) -> None:
        self.status = agent_main(argv)

    def join(self) -> None:
        self._thread.join(10)
        assert not self._thread.is_alive(), "the agent command did not finish"


def test_the_command_plays_through_the_service_and_reports_its_session(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    commands: list[CommandThread] = []
    with running_server(tmp_path / "s.sqlite", synchronous="NORMAL") as port:

        def start(ports: tuple[int, ...]) -> list:
            argv = [str(GAME_FILE), "127.0.0.1", str(ports[0]), "--service", f"127.0.0.1:{port}"]
            argv += ["--seed", "3", "--mbbr-posterior", "samples", "--mbbr-k", "4", "--mbbr-h", "5"]
            argv += ["--json"]
            argv += ["--rpc-deadline-ms", str(round(AGENT_DEADLINE * 1000))]
            commands.append(CommandThread(argv))
            others = [AgentThread(p, make_policy("n3", GAME, s)) for s, p in enumerate(ports[1:])]
            return [commands[0], *others]

        captured, _ = run_dealer(tmp_path, hands=25, clients=start, quiet=True)
        tally = json.loads(capsys.readouterr().out)
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
            session = client.get_session(tally["session_id"])
    assert captured.result.status == 0 and commands[0].status == 0
    assert tally["agent"] == "mbbr (service)" and tally["hands"] == 25
    assert tally["fallback_decisions"] == 0 and tally["service_decisions"] == tally["actions"]
    assert session.hands_observed == 25
    config = session.config
    assert (config.posterior, config.k, config.hands_default, config.seed) == ("samples", 4, 5, 3)


def test_the_wrapper_script_with_an_unreachable_service_plays_n1_and_says_so_once(
    tmp_path: Path,
) -> None:
    script = tmp_path / "mbbr.sh"
    dead = f"127.0.0.1:{free_ports(1)[0]}"
    script.write_text(
        script_text(
            gamefile=GAME_FILE,
            agent="mbbr",
            seed=1,
            python=sys.executable,
            service=dead,
            service_wait=0,  # not waited for at the start: the match begins on the fallback
        )
    )
    script.chmod(0o755)
    processes = []

    def start(ports: tuple[int, ...]) -> list:
        command = [str(script), "127.0.0.1", str(ports[0])]
        processes.append(subprocess.Popen(command, stderr=subprocess.PIPE, text=True))
        return [AgentThread(p, make_policy("always-bet", GAME, s)) for s, p in enumerate(ports[1:])]

    captured, _ = run_dealer(tmp_path, hands=40, clients=start, quiet=True)
    _, err = processes[0].communicate(timeout=60)
    assert captured.result.status == 0, captured.stderr
    assert processes[0].returncode == 0
    assert err.count("the service failed (UNAVAILABLE: ") == 1
    assert "nothing listens there" in err  # the client's UnavailableError says why
    assert "acpc-agent mbbr (service): 40 hands" in err
    tally = err[err.index("acpc-agent mbbr (service)") :]
    assert "decisions: 0 by the service (0.0%)" in tally
    assert "by the fallback n1 (100.0%); 1 outage(s), hands on the fallback: never back" in tally
    # N1 at position 0 never opens with a bet
    hands = parse_log(captured.log).hands
    assert not any(h.betting.startswith("r") for h in hands if h.names[0] == "Alice")
