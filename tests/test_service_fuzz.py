"""Fuzz every RPC of both services over a real server: no INTERNAL, no UNKNOWN, no state changed.

On every store (SQLite, PostgreSQL) here, and through Ray's proxy in ``test_service_ray.py``.
Each RPC gets an equal share of ``REQUESTS`` (600 in the suite, a few seconds per store; with
``OPPMODEL_FUZZ_REQUESTS=10000 pytest -s -k fuzz tests/test_service_fuzz.py
tests/test_service_ray.py`` the full fuzz, its counts printed), stream messages counted one by
one, a third of them raw bytes
(random, or a valid request with bytes flipped, cut or inserted, sent with identity serializers)
and the rest valid requests with fields mutated at random: sessions that do not exist, belong to
the other service or were just deleted; out-of-range positions, cards and sequences; huge,
negative, NaN and infinite numbers; odd strings (empty, NUL, superscripts and other scripts'
digits, emoji, long ones). Every answer must be OK or a documented refusal (INVALID_ARGUMENT
naming a field, NOT_FOUND, FAILED_PRECONDITION, RESOURCE_EXHAUSTED), and the server must log no
error.

State: the baseline sessions (two opponent-model sessions, one perfect-information session) are
snapshotted before and after (every session listed, each one's counts, and its GetModel,
GetResponse, GetAction and GetModelWeights answers) and must be identical. Requests that may
rightly change state are accounted for: a session created is deleted at once (and must then be
gone), scratch sessions take the new observations, and a request that would be a valid new
observation for a baseline session, or delete one, is turned into a gap or a missing session
before it is sent (so it must be refused).
"""

from __future__ import annotations

import logging
import math
import os
import random
import re
import time
from collections import Counter
from collections.abc import Callable

import grpc
import pytest
from service_support import GAME, LOADED_DEADLINE, random_observations, running_server

from oppmodel.clients.client import observation_message
from oppmodel.clients.perfect_info_client import ChoiceEvidence
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.observation import HandObservation
from oppmodel.modeling.strategy import strategy_to_dict
from oppmodel.server.app import open_storage
from oppmodel.server.perfect_info_spec import PerfectInfoLimits
from oppmodel.server.session_spec import Limits
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import perfect_info_pb2 as pi

SEED = 13
# requests per store in the suite: enough to reach every RPC past decoding, a few seconds per
# store; OPPMODEL_FUZZ_REQUESTS=10000 runs the full fuzz (the bar: minutes per store)
REQUESTS = int(os.environ.get("OPPMODEL_FUZZ_REQUESTS", "600"))
RAW_SHARE = 1 / 3
OM = pb.DESCRIPTOR.services_by_name["OpponentModelService"]
PI = pi.DESCRIPTOR.services_by_name["PerfectInfoService"]
DOCUMENTED = {
    grpc.StatusCode.OK,
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
}
# A game without a bundled strategy is solved on first use; a call that waited its 5 s for the
# solve (a loaded machine, a Ray replica) is told when to retry, as documented
SOLVING = re.compile(
    r"config\.game: solving game \S+ \(first use of these rules\) .*: retry in \d+ s"
)
# Small limits keep what a fuzzed request may legitimately ask for cheap.
LIMITS = Limits(max_k=12, max_sessions=50)
PI_LIMITS = PerfectInfoLimits(
    max_sweeps=1000, max_chains=4, max_search_cards=3, max_gibbs_updates=2_000_000
)
GIBBS = pi.GibbsSettings(sweeps=60, burn_in=20, chains=2, level=0.9)
MAX_MESSAGE = 256 * 1024  # the server's default max_message_bytes

INTS = [0, 1, -1, 2, 3, 4, 5, 7, 12, 13, 100, 1000, 2**31 - 1, -(2**31), 2**32 - 1]
INTS += [2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1]
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, 0.1, 0.9, 2.0, 1 + 1e-15, 1e-300, 5e-324, 1e308]
FLOATS += [math.inf, -math.inf, math.nan]
STRINGS = [
    "", " ", "\x00", "²", "٣", "３", "é", "😀", "\u202e", "x" * 300, "p" * 60,
    "kuhn_poker(players=3)", "kuhn_poker(players=2)", "kuhn_poker(players=4)",
    "kuhn_poker(players=٣)", "kuhn_poker(players=99999999999999999999)", "spades3p", "chess",
    "MATCHSTATE:0:0::Ks||", "MATCHSTATE:1:3:r:|Qs|", "MATCHSTATE:²:0::Ks||",
    "MATCHSTATE:0:0:x:Ks||", "MATCHSTATE:9:0::Ks||", "MATCHSTATE:0:0::Ks", "MATCHSTATE::::",
    "p", "pb", "ppp", "bbb", "pbpb", "c", "cr", "rff", "crf", "Ks", "Js", "As", "Xs",
    "MT", "mOT", "mt", "w", "e", "us", "opp_A", "opp_B", "a", "b", "0", "2pb", "3", "9zz", "²p",
    "AS", "AS 2C", "AS AS", "10S", "ſ", "AS KH 2C QD", "AS 2C 3C 4C 5C",
]  # fmt: skip


def _identity(data: bytes) -> bytes:
    return data


class Fuzzer:
    """Seeded mutations of protobuf messages and of their bytes."""

    def __init__(self, rng: random.Random, ids: list[str]) -> None:
        self.rng = rng
        self.ids = ids  # session ids worth trying (real ones of both kinds, deleted ones)

    def string(self) -> str:
        r = self.rng.random()
        if r < 0.35 and self.ids:
            return self.rng.choice(self.ids)
        if r < 0.352:  # rare: each costs ~0.3 s of flow control before the refusal
            return "y" * (MAX_MESSAGE + 10)  # over the message limit
        return self.rng.choice(STRINGS)

    def scalar(self, field) -> object:
        kind = field.type
        if kind == field.TYPE_STRING:
            return self.string()
        if kind == field.TYPE_BYTES:
            return self.rng.randbytes(self.rng.randint(0, 8))
        if kind == field.TYPE_BOOL:
            return self.rng.random() < 0.5
        if kind in (field.TYPE_DOUBLE, field.TYPE_FLOAT):
            return self.rng.choice(FLOATS)
        if kind == field.TYPE_ENUM:
            values = [v.number for v in field.enum_type.values]
            return self.rng.choice([*values, -1, 99, 2**31 - 1])
        return self.rng.choice([*INTS, *range(-3, 10)])

    def mutate(self, message, *, p: float = 0.3, depth: int = 0):
        """``message`` with each field mutated with probability ``p`` (in place; returned)."""
        for field in message.DESCRIPTOR.fields:
            if self.rng.random() < p:
                self._mutate_field(message, field, depth)
        return message

    def _mutate_field(self, message, field, depth: int) -> None:
        if field.is_repeated:
            items = getattr(message, field.name)
            op = self.rng.choice(["clear", "add", "copy", "mutate", "drop"])
            if op == "clear":
                message.ClearField(field.name)
            elif op == "drop" and len(items):
                del items[self.rng.randrange(len(items))]
            elif field.message_type is not None:
                if op == "copy" and len(items):
                    items.add().CopyFrom(self.rng.choice(list(items)))
                elif op == "mutate" and len(items) and depth < 4:
                    self.mutate(self.rng.choice(list(items)), p=0.5, depth=depth + 1)
                elif depth < 4:
                    self.mutate(items.add(), p=0.5, depth=depth + 1)
            elif op == "copy" and len(items):
                items.append(self.rng.choice(list(items)))
            elif op == "mutate" and len(items):
                self._assign(lambda v: items.__setitem__(self.rng.randrange(len(items)), v), field)
            else:
                self._assign(items.append, field)
        elif field.message_type is not None:
            if self.rng.random() < 0.2 or depth >= 4:
                message.ClearField(field.name)
            else:
                self.mutate(getattr(message, field.name), p=0.5, depth=depth + 1)
                getattr(message, field.name).SetInParent()
        else:
            self._assign(lambda v: setattr(message, field.name, v), field)

    def _assign(self, put: Callable[[object], None], field) -> None:
        for _ in range(8):  # a value the field's type cannot hold: draw another
            try:
                put(self.scalar(field))
            except (ValueError, TypeError):
                continue
            return

    def raw(self, data: bytes) -> bytes:
        """Random bytes, or ``data`` with a few bytes flipped, cut or inserted."""
        if self.rng.random() < 0.25:
            return self.rng.randbytes(self.rng.randint(0, 48))
        out = bytearray(data)
        for _ in range(self.rng.randint(1, 4)):
            at = self.rng.randint(0, len(out))
            op = self.rng.random()
            if op < 0.4 and out:
                out[min(at, len(out) - 1)] = self.rng.randrange(256)
            elif op < 0.6:
                del out[at:]
            elif op < 0.85:
                out[at:at] = self.rng.randbytes(self.rng.randint(1, 4))
            else:
                del out[at : at + self.rng.randint(1, 3)]
        return bytes(out)


def _prior_mean() -> list[pb.PositionStrategy]:
    n3 = robust_profile("N3")
    return [
        pb.PositionStrategy(
            position=p,
            infosets=[
                pb.InfosetPolicy(infostate=s, probabilities=list(v))
                for s, v in strategy_to_dict(GAME, p, n3[p]).items()
            ],
        )
        for p in range(3)
    ]


PRIOR_MEAN = _prior_mean()
HANDS = random_observations(40, seed=SEED)


def _session_config(players: int) -> pb.SessionConfig:
    return pb.SessionConfig(
        game=f"kuhn_poker(players={players})",
        our_label="us",
        opponent_labels=["opp_A", "opp_B", "opp_C"][: players - 1],
        mbbr=pb.MbbrParams(k=3, hands_default=2),
        seed=7,
    )


def _pi_config() -> pi.PerfectInfoSessionConfig:
    return pi.PerfectInfoSessionConfig(
        game="spades3p",
        opponents=[
            pi.OpponentModels(label="w", models=["MT", "mOT"], alpha=[1.0, 2.0]),
            pi.OpponentModels(label="e", models=["mOT", "MT"]),
        ],
        gibbs=GIBBS,
        seed=5,
    )


class World:
    """The server's sessions: baseline ones (must not change), scratch ones, created ones."""

    def __init__(self, channel: grpc.Channel) -> None:
        self.channel = channel
        self.om: dict[str, list[HandObservation]] = {}  # baseline session -> its hands
        self.pi: dict[str, int] = {}  # baseline perfect-info session -> choices observed
        self.scratch_om: list[str] = []
        self.scratch_pi: list[str] = []
        self.observed: dict[str, int] = {}  # scratch session -> hands or choices observed
        self.deleted: list[str] = []

    def call(self, service, method: str, request) -> bytes:
        path = f"/{service.full_name}/{method}"
        call = self.channel.unary_unary(path, _identity, _identity)
        return call(request.SerializeToString(), timeout=LOADED_DEADLINE)

    def stream(self, service, method: str, requests: list) -> list[bytes]:
        path = f"/{service.full_name}/{method}"
        call = self.channel.stream_stream(path, _identity, _identity)
        return list(call(iter([r.SerializeToString() for r in requests]), timeout=LOADED_DEADLINE))

    def create_om(self, players: int, hands: int, *, seed: int) -> tuple[str, list]:
        reply = pb.CreateSessionResponse.FromString(
            self.call(OM, "CreateSession", pb.CreateSessionRequest(config=_session_config(players)))
        )
        sid = reply.session.session_id
        observations = random_observations(hands, seed=seed, game=kuhn_game(players))
        requests = [
            pb.ObserveRequest(session_id=sid, observation=observation_message(i, o))
            for i, o in enumerate(observations, start=1)
        ]
        assert len(self.stream(OM, "Observe", requests)) == hands
        return sid, observations

    def create_pi(self, choices: int) -> str:
        reply = pi.CreatePerfectInfoSessionResponse.FromString(
            self.call(
                PI,
                "CreatePerfectInfoSession",
                pi.CreatePerfectInfoSessionRequest(config=_pi_config()),
            )
        )
        sid = reply.session.session_id
        evidence = [
            ChoiceEvidence.from_likelihoods("we"[i % 2], [0.8, 0.3]).to_proto(i + 1)
            for i in range(choices)
        ]
        self.stream(
            PI, "ObserveChoices", [pi.ObserveChoicesRequest(session_id=sid, observations=evidence)]
        )
        return sid

    def ids(self) -> list[str]:
        # and real ids with a NUL, which PostgreSQL's text cannot hold (INTERNAL there once)
        nul = [f"{sid}\x00" for sid in (*self.om, *self.pi)]
        return [*self.om, *self.pi, *self.scratch_om, *self.scratch_pi, *self.deleted[-4:], *nul]

    def snapshot(self, store: str) -> dict:
        """Every session that exists, and everything observable about the baseline ones."""
        listed = pb.ListSessionsResponse.FromString(
            self.call(OM, "ListSessions", pb.ListSessionsRequest())
        )
        reader = open_storage(store, synchronous="NORMAL")  # the perfect-information sessions
        try:
            pi_sessions = reader.run(lambda db: db.execute("SELECT session_id FROM pi_sessions"))
            pi_sessions = pi_sessions.fetchall()
        finally:
            reader.close()
        state: dict = {
            "sessions": sorted(s.session_id for s in listed.sessions),
            "perfect-info sessions": sorted(row[0] for row in pi_sessions),
        }
        for sid, observations in self.om.items():
            state[sid] = [self.call(OM, m, r) for m, r in _queries(sid, len(observations[0].cards))]
        for sid in self.pi:
            state[sid] = [
                self.call(PI, "GetPerfectInfoSession", pi.GetPerfectInfoSessionRequest(
                    session_id=sid)),
                self.call(PI, "GetModelWeights", pi.GetModelWeightsRequest(session_id=sid)),
            ]  # fmt: skip
        return state


def _queries(sid: str, players: int) -> list[tuple[str, object]]:
    """Every read of an opponent-model session: the session, each model, response and action."""
    out: list[tuple[str, object]] = [("GetSession", pb.GetSessionRequest(session_id=sid))]
    for q in range(players):
        out += [
            (
                "GetModel",
                pb.GetModelRequest(session_id=sid, opponent_label=label, opponent_position=q),
            )
            for label in ("opp_A", "opp_B")[: players - 1]
        ]
        out += [
            (
                "GetResponse",
                pb.GetResponseRequest(
                    session_id=sid, our_position=q, kind=kind, include_played=True
                ),
            )
            for kind in (pb.RESPONSE_KIND_MEAN, pb.RESPONSE_KIND_BAYES)
        ]
        out += [
            (
                "GetAction",
                pb.GetActionRequest(
                    session_id=sid,
                    info_state=pb.InfoState(position=q, card=c, history="p" * q),
                    draw=c,
                ),
            )
            for c in range(players + 1)
        ]
    return out  # fmt: skip


class Templates:
    """A valid (or nearly valid) request of each RPC, drawn at random."""

    def __init__(self, world: World, rng: random.Random) -> None:
        self.world, self.rng = world, rng

    def om_id(self) -> str:
        return self.rng.choice([*self.world.om, *self.world.scratch_om, *self.world.ids()])

    def pi_id(self) -> str:
        return self.rng.choice([*self.world.pi, *self.world.scratch_pi, *self.world.ids()])

    def create_session(self) -> pb.CreateSessionRequest:
        config = _session_config(self.rng.choice([2, 3, 3, 4]))
        if config.game.endswith("=3)") and self.rng.random() < 0.3:
            config.mbbr.prior_mean.extend(PRIOR_MEAN)
        return pb.CreateSessionRequest(config=config)

    def observation(self) -> pb.ObserveRequest:
        sid = self.om_id()
        if sid in self.world.om and self.rng.random() < 0.7:  # a resend, exact or not
            observations = self.world.om[sid]
            k = self.rng.randrange(len(observations))
            return pb.ObserveRequest(
                session_id=sid, observation=observation_message(k + 1, observations[k])
            )
        sequence = self.rng.randint(1, 30)
        if sid in self.world.observed and self.rng.random() < 0.7:  # the next hand
            sequence = self.world.observed[sid] + 1
        return pb.ObserveRequest(
            session_id=sid, observation=observation_message(sequence, self.rng.choice(HANDS))
        )

    def observation_batch(self) -> pb.ObserveBatchRequest:
        """One to four observations of a session in one call, some as MATCHSTATE lines."""
        first = self.observation()
        messages = [first.observation]
        for _ in range(self.rng.randint(0, 3)):
            message = pb.Observation()
            message.CopyFrom(messages[-1])
            message.sequence += 1
            if self.rng.random() < 0.3:
                message.ClearField("position")
                message.ClearField("our_card")
                message.ClearField("history")
                message.ClearField("revealed")
                holes = ["", "", ""]
                holes[self.rng.randint(0, 2)] = self.rng.choice(["Js", "Qs", "Ks", "Xs"])
                betting = self.rng.choice(["ccc", "rff", "crf", "rc", "cr"])
                message.matchstate = f"MATCHSTATE:0:1:{betting}:{'|'.join(holes)}"
            messages.append(message)
        return pb.ObserveBatchRequest(session_id=first.session_id, observations=messages)

    def choices(self) -> pi.ObserveChoicesRequest:
        sid = self.pi_id()
        sequence = self.rng.randint(1, 12)
        if sid in self.world.observed and self.rng.random() < 0.7:  # the next choices
            sequence = self.world.observed[sid] + 1
        evidence = []
        for k in range(self.rng.randint(1, 3)):
            who = self.rng.choice("we")
            if self.rng.random() < 0.5:
                e = ChoiceEvidence.from_likelihoods(who, [self.rng.random(), self.rng.random()])
            else:
                e = ChoiceEvidence.from_utilities(
                    who,
                    [[1.0, 2.0], [3.0, 0.5], [0.0, 1.0]],
                    chosen=self.rng.randint(0, 2),
                    epsilon=0.1,
                )
            evidence.append(e.to_proto(sequence + k))
        return pi.ObserveChoicesRequest(session_id=sid, observations=evidence)

    def get_action(self) -> pb.GetActionRequest:
        request = pb.GetActionRequest(session_id=self.om_id(), draw=self.rng.randrange(2**64))
        if self.rng.random() < 0.5:
            position = self.rng.randint(0, 2)
            holes = ["", "", ""]
            holes[position] = self.rng.choice(["Js", "Qs", "Ks", "As"])
            betting = self.rng.choice(["", "c", "cc", "r", "cr", "crf"])
            request.matchstate = (
                f"MATCHSTATE:{position}:{self.rng.randint(0, 99)}:{betting}:{'|'.join(holes)}"
            )
        else:
            q = self.rng.randint(0, 2)
            request.info_state.CopyFrom(
                pb.InfoState(position=q, card=self.rng.randint(0, 3), history="p" * q)
            )
        return request

    def probmaxn(self) -> pi.GetProbMaxnMoveRequest:
        hands = self.rng.choice(
            [("AS 2C", "KH 3D", "QC 4S"), ("AS", "KH", "2C"), ("AS 3S", "KS 2S", "QS 4S")]
        )
        request = pi.GetProbMaxnMoveRequest(
            position=pi.SpadesPosition(hands=list(hands), leader=0, turn=0),
            searcher=self.rng.randint(0, 2),
        )
        if self.rng.random() < 0.5:
            request.given.CopyFrom(pi.GivenWeights(seats=[pi.ModelValues(values=[0.5, 0.5])] * 3))
        else:
            request.session_id = self.pi_id()
        return request

    def make(self, method: str):
        """A fresh template request of ``method``."""
        rng = self.rng
        return {
            "CreateSession": self.create_session,
            "GetSession": lambda: pb.GetSessionRequest(session_id=self.om_id()),
            "ListSessions": lambda: pb.ListSessionsRequest(),
            "DeleteSession": lambda: pb.DeleteSessionRequest(session_id=self.om_id()),
            "FitPopulation": lambda: pb.FitPopulationRequest(game=rng.choice(
                [_session_config(rng.choice([2, 3, 4])).game, "kuhn3p", "", "spades3p", "x"]),
                kind=rng.choice([0, 1, 2, 3])),
            "Observe": self.observation,
            "ObserveBatch": self.observation_batch,
            "GetModel": lambda: pb.GetModelRequest(
                session_id=self.om_id(), opponent_label=rng.choice(["opp_A", "opp_B", "x"]),
                opponent_position=rng.randint(0, 3)),
            "GetResponse": lambda: pb.GetResponseRequest(
                session_id=self.om_id(), our_position=rng.randint(0, 3), kind=rng.randint(0, 3),
                include_played=rng.random() < 0.5),
            "GetAction": self.get_action,
            "GetActions": lambda: pb.GetActionsRequest(request=self.get_action()),
            "GetWinnings": lambda: pb.GetWinningsRequest(
                session_id=self.om_id(), after_hand=rng.randint(0, 40),
                max_hands=rng.randint(0, 20)),
            "GetModels": lambda: pb.GetModelsRequest(
                session_id=self.om_id(), kind=rng.randint(0, 3), include_played=rng.random() < 0.5),
            "CreatePerfectInfoSession": lambda: pi.CreatePerfectInfoSessionRequest(
                config=_pi_config()),
            "GetPerfectInfoSession": lambda: pi.GetPerfectInfoSessionRequest(
                session_id=self.pi_id()),
            "DeletePerfectInfoSession": lambda: pi.DeletePerfectInfoSessionRequest(
                session_id=self.pi_id()),
            "ObserveChoices": self.choices,
            "GetModelWeights": lambda: pi.GetModelWeightsRequest(
                session_id=self.pi_id(), opponent=rng.choice(["", "w", "e", "x"])),
            "GetProbMaxnMove": self.probmaxn,
        }[method]()  # fmt: skip


def protect(world: World, method: str, request):
    """``request`` with whatever would rightly change a baseline or scratch session turned into
    something that must be refused: a next observation of a baseline session becomes a gap, the
    deletion of a baseline or scratch session names a session that does not exist (deleting one
    through the other service stays as it is: it must be NOT_FOUND)."""
    kept = {
        "DeleteSession": (*world.om, *world.scratch_om),
        "DeletePerfectInfoSession": (*world.pi, *world.scratch_pi),
    }
    if method in kept and request.session_id in kept[method]:
        request.session_id = f"kept-{request.session_id}"
    elif method == "Observe" and request.session_id in world.om:
        if request.observation.sequence == len(world.om[request.session_id]) + 1:
            request.observation.sequence += 1
    elif method == "ObserveBatch" and request.session_id in world.om:
        # all or nothing: with no next hand in it, the first new one is a gap and none applies
        after = len(world.om[request.session_id]) + 1
        for observation in request.observations:
            if observation.sequence == after:
                observation.sequence += 1
    elif method == "ObserveChoices" and request.session_id in world.pi:
        after = world.pi[request.session_id] + 1
        for observation in request.observations:
            if observation.sequence == after:
                observation.sequence += 1
    return request


def _request_classes() -> dict[str, tuple]:
    """method -> (service, request class, response class, streaming)."""
    out = {}
    for module, service in ((pb, OM), (pi, PI)):
        for m in service.methods:
            out[m.name] = (
                service,
                getattr(module, m.input_type.name),
                getattr(module, m.output_type.name),
                m.client_streaming,
            )
    return out


RPCS = _request_classes()


class Run:
    """Sends fuzzed requests, checks each answer, keeps the books."""

    def __init__(self, world: World, rng: random.Random, *, stream_trailers: bool = True) -> None:
        self.world, self.rng = world, rng
        # whether a refusal that ends a stream carries its trailers (not through Ray's proxy,
        # which drops them: its code and details still name the field)
        self.stream_trailers = stream_trailers
        self.fuzzer = Fuzzer(rng, [])
        self.templates = Templates(world, rng)
        self.requests: Counter = Counter()
        self.codes: Counter = Counter()
        self.raw: Counter = Counter()
        self.problems: list[str] = []

    def payload(self, method: str) -> tuple[bytes, bool]:
        """(bytes to send, whether they are raw-fuzzed)."""
        _, request_class, _, _ = RPCS[method]
        self.fuzzer.ids = self.world.ids()
        template = self.templates.make(method)
        if self.rng.random() < RAW_SHARE:
            data = self.fuzzer.raw(template.SerializeToString())
            try:
                parsed = request_class.FromString(data)
            except Exception:
                return data, True  # the server cannot parse it either
            guarded = protect(self.world, method, request_class.FromString(data))
            return (data if guarded == parsed else guarded.SerializeToString()), True
        message = self.fuzzer.mutate(template, p=self.rng.choice([0.0, 0.1, 0.3, 0.6]))
        return protect(self.world, method, message).SerializeToString(), False

    def send(self, method: str) -> None:
        service, _, response_class, streaming = RPCS[method]
        count = self.rng.randint(1, 4) if streaming else 1
        payloads = [self.payload(method) for _ in range(count)]
        path = f"/{service.full_name}/{method}"
        replies: list[bytes] = []
        code, details, metadata = grpc.StatusCode.OK, "", ()
        try:
            if streaming:
                call = self.world.channel.stream_stream(path, _identity, _identity)
                for reply in call(iter([p for p, _ in payloads]), timeout=LOADED_DEADLINE):
                    replies.append(reply)
            else:
                call = self.world.channel.unary_unary(path, _identity, _identity)
                replies.append(call(payloads[0][0], timeout=LOADED_DEADLINE))
        except grpc.RpcError as exc:
            code, details = exc.code(), exc.details() or ""
            metadata = tuple(exc.trailing_metadata() or ())
        self.requests[method] += count
        self.raw[method] += sum(raw for _, raw in payloads)
        self.codes[method, code.name] += 1
        where = f"{method} {code.name} {details!r} <- {[p[:80] for p, _ in payloads]}"
        if code not in DOCUMENTED and not SOLVING.fullmatch(details):
            self.problems.append(where)
        if (
            code is grpc.StatusCode.INVALID_ARGUMENT
            and not dict(metadata).get("oppmodel-field")
            and (self.stream_trailers or not streaming)
        ):
            self.problems.append(f"no field named: {where}")
        self.account(method, [response_class.FromString(r) for r in replies])

    def account(self, method: str, replies: list) -> None:
        """Book what an accepted request rightly changed (and check it touched no baseline)."""
        world = self.world
        for reply in replies:
            if method == "CreateSession":
                sid = reply.session.session_id
                world.call(OM, "DeleteSession", pb.DeleteSessionRequest(session_id=sid))
                world.deleted.append(sid)
            elif method == "CreatePerfectInfoSession":
                sid = reply.session.session_id
                world.call(
                    PI,
                    "DeletePerfectInfoSession",
                    pi.DeletePerfectInfoSessionRequest(session_id=sid),
                )
                world.deleted.append(sid)
            elif method == "Observe" and reply.session_id in world.observed:
                world.observed[reply.session_id] = reply.hands_observed
            elif method == "ObserveBatch":
                for ack in reply.acks:
                    if ack.session_id in world.observed:
                        world.observed[ack.session_id] = ack.hands_observed
                    elif not ack.duplicate:
                        self.problems.append(f"a new hand reached baseline {ack.session_id}")
            elif method == "ObserveChoices" and reply.session_id in world.observed:
                world.observed[reply.session_id] = reply.choices_observed
            elif method == "Observe" and not reply.duplicate:
                self.problems.append(f"a new hand reached baseline session {reply.session_id}")
            elif method == "ObserveChoices" and not all(a.duplicate for a in reply.acks):
                self.problems.append(f"a new choice reached baseline {reply.session_id}")


def fuzz(target: str, store: str, *, requests: int, stream_trailers: bool = True) -> Run:
    """Fuzz the server at ``target`` on ``store`` with at least ``requests`` requests, spread
    evenly over every RPC; returns the books. Checks every answer and that the baseline
    sessions did not change."""
    rng = random.Random(SEED)
    with grpc.insecure_channel(target) as channel:
        world = World(channel)
        for players, hands in ((3, 9), (2, 5)):
            sid, observations = world.create_om(players, hands, seed=players)
            world.om[sid] = observations
        world.scratch_om.append(world.create_om(3, 2, seed=9)[0])
        world.pi[world.create_pi(4)] = 4
        world.scratch_pi.append(world.create_pi(1))
        world.observed = {world.scratch_om[0]: 2, world.scratch_pi[0]: 1}
        before = world.snapshot(store)
        run = Run(world, rng, stream_trailers=stream_trailers)
        start = time.perf_counter()
        methods = list(RPCS)
        per_rpc = math.ceil(requests / len(methods))
        while min(run.requests[m] for m in methods) < per_rpc:
            method = rng.choice([m for m in methods if run.requests[m] < per_rpc])
            run.send(method)
        seconds = time.perf_counter() - start
        after = world.snapshot(store)
    print(f"fuzz: {sum(run.requests.values())} requests in {seconds:.1f} s")
    for method in methods:
        codes = {c: n for (m, c), n in sorted(run.codes.items()) if m == method}
        print(f"  {method}: {run.requests[method]} requests ({run.raw[method]} raw), {codes}")
    totals = Counter()
    for (_, code), n in run.codes.items():
        totals[code] += n
    print(f"  all: {dict(sorted(totals.items()))}")
    assert not run.problems, "\n".join(run.problems[:10])
    assert sum(run.requests.values()) >= requests
    assert after == before
    # every code a fuzzed request can rightly get was seen, so the fuzz reached past decoding
    seen = {c for (_, c) in run.codes}
    assert {"OK", "INVALID_ARGUMENT", "NOT_FOUND", "FAILED_PRECONDITION"} <= seen, seen
    return run


def test_fuzzing_every_rpc_gets_documented_codes_and_changes_no_state(
    store_location: str, caplog: pytest.LogCaptureFixture
) -> None:
    """On every store (a session id with a NUL was INTERNAL on PostgreSQL)."""
    with (
        running_server(
            store_location, limits=LIMITS, perfect_info_limits=PI_LIMITS, synchronous="NORMAL"
        ) as port,
        caplog.at_level(logging.ERROR),
    ):
        fuzz(f"127.0.0.1:{port}", store_location, requests=REQUESTS)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], caplog.text[:2000]
