"""Leduc through every part, each a process on 127.0.0.1: ``oppmodel dealer`` deals a 1000-hand
``leduc3p`` match between ``oppmodel acpc-agent --service`` (MBBR through ``oppmodel serve``),
``--in-process`` (MBBR) and ``--agent cfr``; the service's model then equals the library's fed
what the service agent's seat saw in the dealer's log. The same three agents play a
``oppmodel tournament``."""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from acpc_support import AgentThread, run_dealer, stop_and_restart
from test_acpc_service_recovery import TIMEOUT, oppmodel, serve

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.log import LoggedHand, check_log, parse_log, read_log
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation, observe_limit_hand
from oppmodel.server.app import BackgroundServer, ServerConfig, free_ports

HANDS = 1000
# The service agent's decision budget here: no loaded machine misses it, so a decision on the
# fallback means the service failed, not that the machine was slow (the default budget, the
# reference dealer's 7000 ms / 2 / 6 decisions = 583 ms, is test_acpc_limit_agent's; the pace
# a quiet machine keeps is benchmarks/acpc.py's).
BUDGET_MS = 20_000
AGENT = f"{sys.executable} -m oppmodel.clients.cli acpc-agent leduc3p"  # HOST PORT appended


def seat_view(game: LimitGame, hand: LoggedHand, name: str) -> LimitObservation:
    """What ``name``'s seat saw of a logged hand (a hand that ended before the board shows no
    board: any card completes the deal)."""
    position = hand.names.index(name)
    node = game.node(hand.betting)
    taken = "".join((*hand.hole, *hand.board))
    spare = iter(
        c for c in game.deck if c not in {taken[i : i + 2] for i in range(0, len(taken), 2)}
    )
    sizes = game.gamedef.num_board_cards[1:]
    board = [
        *hand.board,
        *("".join(next(spare) for _ in range(k)) for k in sizes[len(hand.board) :]),
    ]
    deal = game.deal_index(hand.hole, ["", *board])
    return observe_limit_hand(game, position, deal, int(game.tree.node_terminal[node]))


@pytest.mark.slow  # five processes, 1000 hands of two MBBR agents: ~20 s on an idle machine
def test_a_1000_hand_leduc3p_match_through_the_dealer_with_service_and_in_process_mbbr(
    tmp_path: Path,
) -> None:
    server_port, *seats = free_ports(4)
    server = serve(tmp_path / "s.sqlite", server_port)
    dealer = oppmodel(
        "dealer", tmp_path / "m", "leduc3p", HANDS, 42, "Alice", "Bob", "Carol",
        "-p", ",".join(map(str, seats)), "-q", "--start_timeout", int(TIMEOUT * 1000),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    agents = []
    try:
        dealer.stdout.readline()  # the ports: it listens
        options = (
            (
                "--service",
                f"127.0.0.1:{server_port}",
                "--decision-budget-ms",
                BUDGET_MS,
                "--seed",
                1,
            ),
            ("--in-process", "--seed", 2),
            ("--agent", "cfr", "--seed", 3),
        )
        agents = [
            oppmodel(
                *("acpc-agent", "leduc3p", "127.0.0.1", seat, *option, "--json"),
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
            for seat, option in zip(seats, options, strict=True)
        ]
        outputs = [agent.communicate(timeout=20 * TIMEOUT) for agent in agents]
        assert dealer.wait(TIMEOUT) == 0
        for agent, (_, err) in zip(agents, outputs, strict=True):
            assert agent.returncode == 0, err
        tallies = [json.loads(out) for out, _ in outputs]
        service, in_process, cfr = tallies
        assert [t["hands"] for t in tallies] == [HANDS] * 3
        assert (service["agent"], in_process["agent"], cfr["agent"]) == (
            "mbbr (service)",
            "mbbr",
            "cfr",
        )
        assert service["decisions"] == {
            "service": service["service_decisions"],
            "fallback:cfr": service["fallback_decisions"],
        }
        assert service["service_decisions"] + service["fallback_decisions"] == service["actions"]
        assert service["service_share"] >= 0.99, service
        assert service["decision_budget_ms"] == BUDGET_MS
        game = limit_game("leduc3p")
        log = read_log(tmp_path / "m.log")
        assert check_log(read_game_def("leduc3p"), log) == [] and len(log.hands) == HANDS
        assert sum(t["total"] for t in tallies) == pytest.approx(0.0, abs=1e-9)
        # the service's limit session: no change detection unless asked for
        library = build_model(game, MBBRConfig(seed=1, change_hazard=0.0))
        for hand in log.hands:
            library.observe(seat_view(game, hand, "Alice"))
        with OpponentModelClient(f"127.0.0.1:{server_port}", timeout=30) as client:
            session = client.get_session(service["session_id"])
            assert session.hands_observed == HANDS
            for p, label in ((0, "seat+1"), (2, "seat+2"), (1, "seat+1")):
                q = (p + int(label[-1])) % 3
                got = client.model(session.session_id, label, q)
                want, spread = library.opponent_model(p, q)
                assert got.effective_sample_size == spread
                rows = list(game.infosets(q))
                assert np.array_equal(got.strategy.probabilities, want[rows])
    finally:
        for process in (dealer, *agents):
            if process.poll() is None:
                process.kill()
                process.wait()
        server.terminate()
        server.wait(TIMEOUT)


@pytest.mark.slow  # a tournament of 6 seatings x 100 hands, one agent through the service
def test_the_same_agents_in_a_leduc3p_tournament(tmp_path: Path) -> None:
    server_port = free_ports(1)[0]
    server = serve(tmp_path / "s.sqlite", server_port)
    try:
        command = oppmodel(
            "tournament", "--game", "leduc3p",
            "--agent", f"service={AGENT} --service 127.0.0.1:{server_port}",
            "--agent", "mbbr=builtin:mbbr", "--agent", "cfr=builtin:cfr",
            "--hands", 100, "--duplicates", 1, "--seed", 42, "--out", tmp_path / "t", "--json",
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )  # fmt: skip
        out, err = command.communicate(timeout=20 * TIMEOUT)
        assert command.returncode == 0, err
    finally:
        server.terminate()
        server.wait(TIMEOUT)
    report = json.loads(out)
    assert [r["agent"] for r in report["results"]] == ["service", "mbbr", "cfr"]
    assert all(r["hands"] == 6 * 100 for r in report["results"])
    assert abs(sum(r["milli_antes_per_hand"] for r in report["results"])) < 1e-9
    assert len(report["matches"]) == 6


def test_in_leduc_the_service_agent_falls_back_to_cfr_and_returns(tmp_path: Path) -> None:
    """The Kuhn agent's fallback rules hold in Leduc: the service stopped mid-match, decisions go
    to the bundled cfr strategy at once; restarted, they come back to the service and it gets
    every hand it missed (the same session, the library's model of the seat's view)."""
    db = tmp_path / "s.sqlite"
    port = free_ports(1)[0]
    config = ServerConfig(db_path=str(db), port=port, synchronous="NORMAL")
    servers = [BackgroundServer(config)]
    servers[0].start()
    err = io.StringIO()
    game = read_game_def("leduc2p")
    mbbr = MBBRConfig(hands_default=5, seed=4, safety_budget=math.inf, change_hazard=0.0)

    policy_class = stop_and_restart(servers, config, stop_at=15, start_at=30)
    policy = policy_class(game, f"127.0.0.1:{port}", config=mbbr, stderr=err, deadline=2.0)
    try:
        captured, _ = run_dealer(
            tmp_path,
            hands=60,
            game=game,
            names=("Alice", "Bob"),
            clients=lambda ports: [
                AgentThread(ports[0], policy, game),
                AgentThread(ports[1], make_policy("maniac", game, 2), game),
            ],
        )
        policy.close()
        assert captured.result.status == 0, captured.stderr
        assert policy.fallback_name == "cfr"
        assert policy.service_decisions > 0 and policy.fallback_decisions > 0
        (outage,) = policy.outages
        assert 15 < outage.first_hand <= 17 and outage.back_at_hand is not None
        limit = limit_game("leduc2p")
        library = build_model(limit, mbbr)
        for hand in parse_log(captured.log).hands:
            library.observe(seat_view(limit, hand, "Alice"))
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
            assert client.get_session(policy.session_id).hands_observed == 60
            got = client.model(policy.session_id, "seat+1", 1)
            want, _ = library.opponent_model(0, 1)
            assert np.array_equal(got.strategy.probabilities, want[list(limit.infosets(1))])
    finally:
        for server in servers:
            server.stop()
