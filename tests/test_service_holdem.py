"""2-player limit hold'em through the service (issue 35): a session by the bundled name, its model
MBBR over the bundled blueprint's abstract game (modeling/holdem/served.py). Driven only through
the client and checked against the same model in this process fed the same hands: GetModel,
GetResponse and GetAction answer exactly as it does, before and after the server restarts (the
session reloads from its snapshot and stored hands). A snapshot restored and fed the rest of the
hands is the model fed them all, bit for bit. What hold'em cannot run is refused naming the field,
and malformed hold'em observations (seeded mutations of real ones) are refused naming
``observation.matchstate`` with nothing applied."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import random
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from acpc_support import AgentThread, run_dealer
from service_support import LOADED_DEADLINE, connected, running_server
from test_acpc_service_agent import CommandThread

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.acpc.convert import logged_limit_observation
from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.holdem import response, served
from oppmodel.modeling.holdem.served import HoldemServedModel, holdem_served
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.snapshot import SnapshotError, decode, encode
from oppmodel.modeling.observation import LimitObservation
from oppmodel.server.conversion import spec_from_proto
from oppmodel.server.metrics import Metrics
from oppmodel.server.session_spec import Limits
from oppmodel.server.sessions import SessionManager
from oppmodel.server.storage import SnapshotRow
from oppmodel.server.storage_sqlite import SQLiteStore
from oppmodel.v1 import opponent_model_pb2 as pb

DATA = Path(__file__).parent / "data" / "acpc"
HANDS = 12
CONFIG = MBBRConfig(hands_default=5, seed=7, prior="informed", safety_budget=10.0, change_hazard=0)


@pytest.fixture(autouse=True)
def short_lag(monkeypatch) -> None:
    """A solve takes effect 3 hands after it begins (a session's: 50), so that these dozen hands
    see the first one (begun after hand 5) play from hand 9 on."""
    monkeypatch.setattr(served, "SOLVE_LAG", 3)


@pytest.fixture(scope="module")
def hands() -> list[LimitObservation]:
    """Each seat's view in turn of the dealer log's first 12 hands (showdowns and folds, both
    positions)."""
    game = holdem_served("holdem2p").compiled
    log = read_log(DATA / "holdem2p-seed42-example-players.log")
    return [logged_limit_observation(game, hand, i % 2) for i, hand in enumerate(log.hands[:HANDS])]


def library(hands: list[LimitObservation], config: MBBRConfig = CONFIG) -> HoldemServedModel:
    model = holdem_served("holdem2p").build_model(config)
    for obs in hands:
        model.observe(obs)
    return model  # type: ignore[return-value]


def decision_lines(hands: list[LimitObservation]) -> list[str]:
    """MATCHSTATE lines of our seat's decisions in the hands (our cards only, the board so far)."""
    game = holdem_served("holdem2p").compiled
    lines = []
    for number, obs in enumerate(hands):
        for k in range(len(obs.betting)):
            betting = obs.betting[:k]
            if obs.betting[k] == "/" or game.current_player(betting) != obs.position:
                continue
            hole = tuple(h if p == obs.position else "" for p, h in enumerate(obs.hole))
            board = obs.board[: betting.count("/") + 1]
            lines.append(str(MatchState(obs.position, number, betting, hole, board)))
    return lines


def answers(client, sid: str, lines: list[str]) -> tuple:
    """Everything the service says of the session: both opponent models, both responses, and
    the action rows at ``lines``."""
    models = [client.model(sid, "opp", q).strategy.as_dict() for q in range(2)]
    responses = [client.response(sid, p) for p in range(2)]
    actions = [client.action(sid, matchstate=line, draw=3) for line in lines]
    return models, [(r.expected_value, r.strategy.as_dict()) for r in responses], actions


def test_a_holdem_session_answers_as_the_library_and_after_a_reload(tmp_path: Path, hands):
    db = tmp_path / "db.sqlite"
    lines = decision_lines(hands)
    model = library(hands)
    game = holdem_served("holdem2p")
    # models in this process (no model worker): the game is built once, for the library too
    with connected(db, model_workers=0) as (client, _):
        session = client.create_session(game="holdem2p", opponent_labels=("opp",), config=CONFIG)
        assert session.game == "holdem2p"
        sid = session.session_id
        assert client.observe(sid, hands[:6], first_sequence=1) == 6
        assert client.observe_batch(sid, hands[6:], first_sequence=7) == HANDS
        before = answers(client, sid, lines)
    models, responses, actions = before
    for q in range(2):
        want, _ = model.opponent_model(1 - q, q)
        rows = {game.infoset_string(q, i): tuple(want[i]) for i in game.infosets(q)}
        assert models[q] == rows
    for p in range(2):
        strategy, value = model.response(p)
        assert responses[p][0] == value
        assert responses[p][1] == {
            game.infoset_string(p, i): tuple(strategy[i]) for i in game.infosets(p)
        }
    assert model.mbbr.solved_at == 5  # the response plays: its share drawn per hand
    for line, got in zip(lines, actions, strict=True):
        decision = game.matchstate_decision(line)
        want = model.action_probabilities(decision.position, decision.infoset)
        assert got.probabilities == tuple(want)
        assert got.infostate == game.infoset_string(decision.position, decision.infoset)
        assert got.probabilities[got.action] > 0 and not got.default_policy
    # a new server: the session loads from the store
    with connected(db, model_workers=0) as (client, _):
        assert client.get_session(sid).hands_observed == HANDS
        assert answers(client, sid, lines) == before


def test_a_holdem_decision_is_looked_up_in_the_model_worker(
    tmp_path: Path, hands, monkeypatch
) -> None:
    """GetAction's MATCHSTATE lookup (a new turn board's buckets: ~2 ms) runs in the model
    worker beside the model, whose update of the hand then finds the board bucketed; the server
    process looks nothing up (it bucketed every board the worker bucketed again: ~3 ms of the
    served match's ~22 ms of server CPU a hand). The answers are the library's."""
    looked_up: list[str] = []  # by this (the server's) process; the worker is another
    real = served.HoldemServed.matchstate_decision

    def spy(self, line: str):
        looked_up.append(line)
        return real(self, line)

    monkeypatch.setattr(served.HoldemServed, "matchstate_decision", spy)
    lines = [line for line in decision_lines(hands) if line.split(":")[2] in ("4", "5")]
    assert any(line.split(":")[3].count("/") >= 2 for line in lines)  # turns and rivers
    with connected(tmp_path / "db.sqlite", model_workers=1) as (client, _):
        sid = client.create_session(game="holdem2p", opponent_labels=("opp",), config=CONFIG)
        sid = sid.session_id
        assert client.observe(sid, hands[:4], first_sequence=1) == 4
        actions = [client.action(sid, matchstate=line, draw=3) for line in lines]
        head, cards = lines[-1].rsplit(":", 1)
        bad = f"{head}:{cards.replace(cards.split('/')[0].strip('|'), 'AsAs', 1)}"
        assert _field(lambda: client.action(sid, matchstate=bad)) == "matchstate"  # the worker's
    assert looked_up == []
    model, game = library(hands[:4]), holdem_served("holdem2p")
    for line, got in zip(lines, actions, strict=True):
        decision = game.matchstate_decision(line)
        want = model.action_probabilities(decision.position, decision.infoset)
        assert got.probabilities == tuple(want)
        assert got.infostate == game.infoset_string(decision.position, decision.infoset)


def test_a_hands_draw_is_made_once_for_its_decisions(hands, monkeypatch) -> None:
    """Whether the response plays a hand is drawn with a seeded Generator (~50-130 us) once a
    hand, not again at each of its decisions; each decision plays the row of that draw."""
    model, game = library(hands[:6]), holdem_served("holdem2p")
    lines = [line for line in decision_lines(hands) if line.split(":")[2] == "6"]
    assert len(lines) >= 2 and len({line.split(":")[1] for line in lines}) == 1  # one seat's
    real = np.random.default_rng
    built: list[object] = []
    served.hand_draw.cache_clear()
    monkeypatch.setattr(np.random, "default_rng", lambda seed: built.append(seed) or real(seed))
    rows = [model.matchstate_action(line) for line in lines]
    monkeypatch.setattr(np.random, "default_rng", real)
    position = rows[0][0].position
    assert built == [[CONFIG.seed, 6, position, 0x4845]]
    u = float(real([CONFIG.seed, 6, position, 0x4845]).random())
    table = model.mbbr.strategies[position] if u < model.mbbr.shares[position] else None
    for decision, row in rows:
        want = game.blueprint[position] if table is None else table
        assert np.array_equal(row, want[decision.infoset])


def test_a_restored_snapshot_goes_on_as_the_model_fed_every_hand(hands) -> None:
    whole = library(hands)
    half = library(hands[:7])  # the first solve (begun after hand 5) is running: its copy is state
    assert half.mbbr.pending is not None and "solving" in decode(half.snapshot())[1]
    restored = library([])
    restored.restore(half.snapshot())
    assert restored.snapshot() == half.snapshot()
    for obs in hands[7:]:
        restored.observe(obs)
    assert restored.snapshot() == whole.snapshot()
    for p in range(2):
        assert np.array_equal(
            restored.opponent_model(p, 1 - p)[0], whole.opponent_model(p, 1 - p)[0]
        )
    other = library([], dataclasses.replace(CONFIG, eta=2.0))
    with pytest.raises(SnapshotError, match="other settings"):
        other.restore(half.snapshot())
    with pytest.raises(SnapshotError):
        restored.restore(b"not a snapshot")
    meta, arrays = decode(half.snapshot())
    for k, wrong in ((0, 4), (0, 9), (1, 1)):  # the solve's hand (begun after 5), its classes
        bad = {**arrays, "solving": arrays["solving"].copy()}
        bad["solving"][k] = wrong
        with pytest.raises(SnapshotError):
            restored.restore(encode(meta, bad))
    assert restored.snapshot() == whole.snapshot()  # nothing changed


def test_a_decision_during_a_solve_is_answered_by_the_old_response(
    tmp_path: Path, hands, monkeypatch
) -> None:
    """The response's solve runs beside the session's model: while it is held back here (begun
    after hand 5), the Observe of that hand and of the next two and GetAction answer from the
    response in play (the blueprint's, before the first solve), where the solve under the
    model's lock held them all (the served match's fallbacks: a ~0.3 s solve past a decision's
    292 ms budget). Released, it takes effect after hand 8: the session decides as the library
    fed the same hands."""
    held = threading.Event()
    real = response.best_response

    def held_back(*args):
        assert held.wait(LOADED_DEADLINE)
        return real(*args)

    monkeypatch.setattr(response, "best_response", held_back)
    lines = decision_lines(hands)
    hand_8 = [line for line in lines if line.split(":")[2] == "7"]
    game = holdem_served("holdem2p")
    with connected(tmp_path / "db.sqlite", model_workers=0) as (client, port):
        sid = client.create_session(game="holdem2p", opponent_labels=("opp",), config=CONFIG)
        sid = sid.session_id
        # a solve held under the model's lock holds these calls for good: 30 s tells
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=30.0) as prompt:
            try:
                assert prompt.observe(sid, hands[:7], first_sequence=1) == 7
                assert hand_8
                for line in hand_8:
                    got = prompt.action(sid, matchstate=line, draw=1)
                    decision = game.matchstate_decision(line)
                    want = game.blueprint[decision.position, decision.infoset]
                    assert got.probabilities == tuple(want) and not got.default_policy
            finally:
                held.set()
        assert client.observe(sid, hands[7:], first_sequence=8) == HANDS
        actions = [client.action(sid, matchstate=line, draw=3) for line in lines]
    model = library(hands)
    assert model.mbbr.solved_at == 5 and model.mbbr.shares != [0.0, 0.0]
    for line, got in zip(lines, actions, strict=True):
        decision = game.matchstate_decision(line)
        want = model.action_probabilities(decision.position, decision.infoset)
        assert got.probabilities == tuple(want)


FIRST_PLAY = """
import gc
from numba.core.registry import CPUDispatcher
from oppmodel.modeling.holdem.served import holdem_served
from oppmodel.modeling.mbbr.config import MBBRConfig

def loaded():
    return {
        (d.py_func.__module__, d.py_func.__name__, len(d.signatures))
        for d in gc.get_objects()
        if isinstance(d, CPUDispatcher)
    }

game = holdem_served("holdem2p")
model = game.build_model(game.played_config(MBBRConfig()))
before = loaded()
for line in ("1:0::|7h7d", "0:0:cc/:8c8d|/Ts9s2d", "0:0:cc/cc/:8c8d|/Ts9s2d/Jc",
             "0:0:cc/cc/cc/:8c8d|/Ts9s2d/Jc/3h"):
    decision = game.matchstate_decision("MATCHSTATE:" + line)
    model.action_probabilities(decision.position, decision.infoset)
for line in ("1:1:cc/cc/cc/rf:|7h7d/Ts9s2d/Jc/3h", "0:2:cc/cc/rf:8c8d|/Ts9s2d/Jc",
             "0:3:cc/cc/cc/cc:AsKd|QhQd/2c3d4h/5s/9h", "0:4:rf:AsKd|"):
    model.observe(game.matchstate_observation("MATCHSTATE:" + line))
print(sorted(loaded() - before))
"""


def test_a_fresh_process_loads_the_kernels_with_the_game_not_at_the_first_decisions() -> None:
    """A session's first decisions and updates in a fresh process (a new server's, a model
    worker's) load no kernel: the game's construction did (``HoldemServed._warm_up``). Loaded
    at the first decisions, the turn's bucketing took 56 ms and the first update 657 ms at load
    ~19 (0.4 and 32 ms after): the served match's only fallbacks, hand 1's."""
    run = subprocess.run(
        [sys.executable, "-c", FIRST_PLAY], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"


def test_a_long_holdem_session_snapshots_as_often_as_it_pays(tmp_path: Path, monkeypatch) -> None:
    """A hold'em snapshot is ~5 MB: the service weighs its cost against the replay it saves
    (``Limits.snapshot_cost_factor``: 2-3 snapshots in these 200 hands at load 11-42) instead of
    writing one every 0.2 s of updates (9-13 of them at load 6-21, every ~15-20 hands). The last
    one is the model's state at its hand: a reload restores it and replays the rest to the same
    model."""
    game = holdem_served("holdem2p").compiled
    log = read_log(DATA / "holdem2p-seed42-example-players.log")
    hands = [logged_limit_observation(game, hand, i % 2) for i, hand in enumerate(log.hands[:200])]
    spec = spec_from_proto(
        pb.SessionConfig(game="holdem2p", our_label="us", opponent_labels=["opp"]),
        max_label_length=8,
    )
    saved: list[int] = []

    async def scenario() -> tuple[bytes, bytes]:
        with ThreadPoolExecutor(1) as executor:
            store = SQLiteStore(tmp_path / "db.sqlite")
            save = store.save_snapshot_async

            def counted(sid: str, row: SnapshotRow):
                saved.append(row.hands)
                return save(sid, row)

            monkeypatch.setattr(store, "save_snapshot_async", counted)
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            sid = (await manager.create("", spec)).session_id
            session = await manager.get("", sid)
            for sequence, obs in enumerate(hands, start=1):  # one hand a call, as an agent sends
                _, error = await manager.observe(session, [(sequence, obs)])
                assert error is None
            live = await session.host.compute("snapshot")
            await manager.drain()
            store.close()
            store = SQLiteStore(tmp_path / "db.sqlite")
            manager = SessionManager(store, executor=executor, metrics=Metrics(), limits=Limits())
            reloaded = await (await manager.get("", sid)).host.compute("snapshot")
            store.close()
        return live, reloaded

    live, reloaded = asyncio.run(scenario())
    assert 1 <= len(saved) <= 5, saved
    assert reloaded == live


def _field(call) -> str:
    with pytest.raises(InvalidArgumentError) as err:
        call()
    return err.value.field


def test_what_holdem_cannot_run_is_refused_naming_the_field(tmp_path: Path, hands) -> None:
    # unset, the configuration is hold'em's: the informed prior, its budget, no change detection
    unset = spec_from_proto(
        pb.SessionConfig(game="holdem2p", our_label="us", opponent_labels=["opp"]),
        max_label_length=8,
    ).config
    assert (unset.prior, unset.safety_budget, unset.change_hazard) == ("informed", 10.0, 0.0)
    with connected(tmp_path / "db.sqlite", model_workers=0) as (client, _):

        def create(**config: object):
            return lambda: client.create_session(
                game="holdem2p", opponent_labels=("opp",),
                config=dataclasses.replace(CONFIG, **config),
            )  # fmt: skip

        assert _field(create(prior="mixture")) == "config.mbbr.prior"
        assert _field(create(posterior="samples")) == "config.mbbr.posterior"
        assert _field(create(change_hazard=0.05)) == "config.mbbr.change_hazard"
        sid = client.create_session(
            game="holdem2p", opponent_labels=("opp",), config=CONFIG
        ).session_id
        # seeded mutations of real hands' lines: each is a valid hand or refused naming the field
        good = [
            str(MatchState(o.position, 0, o.betting, tuple(h or "" for h in o.hole), o.board))
            for o in hands
        ]
        rng = random.Random(5)
        refused = 0
        applied = 0
        for _ in range(60):
            line = list(rng.choice(good))
            i = rng.randrange(len("MATCHSTATE:"), len(line))
            kind = rng.randrange(3)
            if kind == 0:
                line[i] = rng.choice("AKQJT98765432shdc/|:rcf0x")
            elif kind == 1:
                del line[i]
            else:
                line.insert(i, rng.choice("AKs/|rc:"))
            try:
                client.observe(sid, ["".join(line)], first_sequence=applied + 1)
                applied += 1
            except InvalidArgumentError as exc:
                assert exc.field == "observation.matchstate", exc
                refused += 1
        assert refused > 40  # most mutations break the hand
        assert client.get_session(sid).hands_observed == applied
        for line in decision_lines(hands)[:3]:
            head, cards = line.rsplit(":", 1)
            ours = hands[0].hole[hands[0].position]
            for hole in ("AsAs", "As", "AsKsQs", "Zz9s"):  # a pair of one card, too few, ...
                bad = f"{head}:{cards.replace(cards.split('/')[0].strip('|'), hole, 1)}"
                assert _field(lambda b=bad: client.action(sid, matchstate=b)) == "matchstate"
            assert ours


def test_acpc_agent_plays_holdem_mbbr_through_the_service(tmp_path: Path, capsys) -> None:
    """``acpc-agent --service`` on the hold'em game file against the project's dealer: every
    decision by the service (none by the fallback), the session a holdem2p one with hold'em's
    configuration and every hand the seat saw."""
    game_file = DATA / "holdem.limit.2p.reverse_blinds.game"
    game = read_game_def(game_file)
    commands: list[CommandThread] = []
    with running_server(tmp_path / "s.sqlite", model_workers=0) as port:

        def start(ports: tuple[int, ...]) -> list:
            argv = [str(game_file), "127.0.0.1", str(ports[0]), "--service", f"127.0.0.1:{port}"]
            argv += ["--seed", "3", "--mbbr-h", "4", "--json", "--rpc-deadline-ms", "120000"]
            argv += ["--service-wait", "300"]
            commands.append(CommandThread(argv))
            other = AgentThread(ports[1], make_policy("calling-station", game, 1), game)
            return [commands[0], other]

        captured, _ = run_dealer(
            tmp_path, hands=8, game=game, names=("Alice", "Bob"), clients=start, quiet=True
        )
        out, err = capsys.readouterr()
        assert commands[0].status == 0, err
        tally = json.loads(out)
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=60) as client:
            session = client.get_session(tally["session_id"])
    assert captured.result.status == 0 and commands[0].status == 0
    assert tally["agent"] == "mbbr (service)" and tally["hands"] == 8
    assert tally["fallback_decisions"] == 0 and tally["service_decisions"] == tally["actions"] > 0
    latency = tally["service_decision_ms"]  # each answered GetAction's time
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"] <= 120_000
    assert session.game == "holdem2p" and session.hands_observed == 8
    assert (session.config.prior, session.config.hands_default) == ("informed", 4)


def test_acpc_agent_plays_holdem_mbbr_in_process(tmp_path: Path, capsys) -> None:
    """``acpc-agent --in-process`` on the hold'em game file against the project's dealer: the
    service's hold'em model in the agent's process, every hand played and the match scored."""
    game_file = DATA / "holdem.limit.2p.reverse_blinds.game"
    game = read_game_def(game_file)
    commands: list[CommandThread] = []

    def start(ports: tuple[int, ...]) -> list:
        argv = [str(game_file), "127.0.0.1", str(ports[0]), "--in-process", "--seed", "3"]
        commands.append(CommandThread([*argv, "--mbbr-h", "4", "--json"]))
        return [commands[0], AgentThread(ports[1], make_policy("calling-station", game, 1), game)]

    captured, _ = run_dealer(
        tmp_path, hands=8, game=game, names=("Alice", "Bob"), clients=start, quiet=True
    )
    out, err = capsys.readouterr()
    assert captured.result.status == 0 and commands[0].status == 0, err
    tally = json.loads(out)
    assert tally["agent"] == "mbbr" and tally["hands"] == 8 and tally["actions"] > 0
    assert "fallback_decisions" not in tally  # no service, no fallback
