"""Bad input gets the right status (as the client's domain exception), names the field, and
changes nothing; limits give RESOURCE_EXHAUSTED; tokens keep sessions apart."""

from __future__ import annotations

import json
import math
from pathlib import Path

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_support import GAME, connected, random_observations

from oppmodel.clients.client import OpponentModelClient, observation_message
from oppmodel.modeling.errors import (
    IllegalActionError,
    InvalidArgumentError,
    InvalidStrategyError,
    NotFoundError,
    ResourceExhaustedError,
    UnauthenticatedError,
    UnknownGameError,
)
from oppmodel.modeling.games.acpc import strategy as limit_strategy
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.kuhn3p import robust_profile
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import HandObservation, validate_observation
from oppmodel.modeling.strategy import strategy_to_dict
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc

CONFIG = MBBRConfig(k=4, hands_default=0, seed=3)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for the module, with small limits, and a session with a few hands in it."""
    db = tmp_path_factory.mktemp("errors") / "db.sqlite"
    with connected(db, max_message_bytes=4096) as (client, port):
        sid = client.create_session(config=CONFIG).session_id
        client.observe(sid, random_observations(6, seed=1), first_sequence=1)
        yield client, sid, port


def _state(client: OpponentModelClient, sid: str) -> tuple:
    """Everything observable about the session's posterior."""
    session = client.get_session(sid)
    models = tuple(
        tuple(map(tuple, client.model(sid, label, q).strategy.probabilities))
        for label in session.opponent_labels
        for q in range(3)
    )
    return session.hands_observed, models, len(client.list_sessions())


def _raw_observe(client: OpponentModelClient, sid: str, observation: pb.Observation) -> None:
    for _ in client.observe_stream(
        iter([pb.ObserveRequest(session_id=sid, observation=observation)])
    ):
        pass


def _obs(**fields) -> pb.Observation:
    base = dict(sequence=7, position=0, our_card=1, history="ppp")
    base.update(fields)
    revealed = base.pop("revealed", [(1, 2), (2, 3)])
    return pb.Observation(
        **base, revealed=[pb.RevealedCard(position=p, card=c) for p, c in revealed]
    )


BAD_OBSERVATIONS = [
    (_obs(position=3), InvalidArgumentError, "observation.position"),
    (_obs(position=-1), InvalidArgumentError, "observation.position"),
    (_obs(history="ppx"), InvalidArgumentError, "observation.history"),
    (_obs(history="pp"), IllegalActionError, "observation.history"),
    (_obs(history="bbbb"), IllegalActionError, "observation.history"),
    (
        pb.Observation(sequence=7, position=0, our_card=1, acpc_betting="ccx"),
        IllegalActionError,
        "observation.acpc_betting",
    ),
    (
        pb.Observation(sequence=7, position=0, history="ppp"),
        InvalidArgumentError,
        "observation.our_card",
    ),
    (
        pb.Observation(sequence=7, position=0, our_card=1),
        InvalidArgumentError,
        "observation.history",
    ),
    (_obs(our_card=4), InvalidArgumentError, "observation.our_card"),
    (_obs(revealed=[(1, 1), (2, 3)]), InvalidArgumentError, "observation.revealed[0].card"),
    (_obs(revealed=[(1, 2), (2, 9)]), InvalidArgumentError, "observation.revealed[1].card"),
    (_obs(revealed=[(1, 2)]), InvalidArgumentError, "observation.revealed"),
    (_obs(revealed=[(0, 2), (2, 3)]), InvalidArgumentError, "observation.revealed[0].position"),
    (_obs(revealed=[(1, 2), (5, 3)]), InvalidArgumentError, "observation.revealed[1].position"),
    # bpp: position 0 bet, both folded: nothing may be revealed.
    (_obs(history="bpp"), InvalidArgumentError, "observation.revealed[0].card"),
]


@pytest.mark.parametrize(("observation", "error", "field"), BAD_OBSERVATIONS)
def test_bad_observation(server, observation, error, field) -> None:
    client, sid, _ = server
    before = _state(client, sid)
    with pytest.raises(error) as info:
        _raw_observe(client, sid, observation)
    assert type(info.value) is error and info.value.field == field, str(info.value)
    assert _state(client, sid) == before


PAPER_TYPED = MBBRConfig(prior="typed", posterior="samples")  # typed has no sample form
BAD_CONFIGS = [
    (dict(config=MBBRConfig(k=0)), InvalidArgumentError, "config.mbbr.k"),
    (dict(config=MBBRConfig(hands_default=-1)), InvalidArgumentError, "config.mbbr.hands_default"),
    (dict(config=MBBRConfig(epsilon=0.7)), InvalidArgumentError, "config.mbbr.epsilon"),
    (dict(config=MBBRConfig(eta=-1.0)), InvalidArgumentError, "config.mbbr.eta"),
    (dict(config=MBBRConfig(change_hazard=0.5)), InvalidArgumentError, "config.mbbr.change_hazard"),
    (
        dict(config=MBBRConfig(change_hazard=math.nan)),
        InvalidArgumentError,
        "config.mbbr.change_hazard",
    ),
    (dict(config=PAPER_TYPED), InvalidArgumentError, "config.mbbr.prior"),
    # the tilted prior, the Dirichlet posterior's default, has no sample form either
    (
        dict(config=MBBRConfig(prior="tilted", posterior="samples")),
        InvalidArgumentError,
        "config.mbbr.prior",
    ),
    # the mixture prior is for limit games; this session is Kuhn's
    (dict(config=MBBRConfig(prior="mixture")), InvalidArgumentError, "config.mbbr.prior"),
    (dict(config=MBBRConfig(seed=2**63)), InvalidArgumentError, "config.seed"),
    (dict(game="chess"), InvalidArgumentError, "config.game"),
    (dict(game="kuhn_poker(players=7)"), UnknownGameError, "config.game"),
    (dict(opponent_labels=("a",)), InvalidArgumentError, "config.opponent_labels"),
    (dict(opponent_labels=("a", "a")), InvalidArgumentError, "config.opponent_labels[1]"),
    (dict(our_label=""), InvalidArgumentError, "config.our_label"),
]


@pytest.mark.parametrize(("kwargs", "error", "field"), BAD_CONFIGS)
def test_bad_session_config(server, kwargs, error, field) -> None:
    client, sid, _ = server
    before = _state(client, sid)
    with pytest.raises(error) as info:
        client.create_session(**kwargs)
    assert type(info.value) is error and info.value.field == field, str(info.value)
    assert _state(client, sid) == before


def test_unknown_posterior_is_refused_naming_the_field(server) -> None:
    client, sid, port = server
    before = _state(client, sid)
    config = pb.SessionConfig(
        game="kuhn_poker(players=3)",
        our_label="us",
        opponent_labels=["a", "b"],
        mbbr=pb.MbbrParams(posterior=7),
    )
    with (
        grpc.insecure_channel(f"127.0.0.1:{port}") as channel,
        pytest.raises(grpc.RpcError) as info,
    ):
        pb_grpc.OpponentModelServiceStub(channel).CreateSession(
            pb.CreateSessionRequest(config=config), timeout=10
        )
    assert info.value.code() is grpc.StatusCode.INVALID_ARGUMENT
    assert info.value.details().startswith("config.mbbr.posterior:")
    assert _state(client, sid) == before


def _prior(tweak=None) -> dict:
    """N3 (the default prior mean) as {position: {infostate: probabilities}}, maybe tweaked."""
    n3 = robust_profile("N3")
    prior = {p: strategy_to_dict(GAME, p, n3[p]) for p in range(3)}
    if tweak:
        tweak(prior)
    return prior


def test_supplied_prior_is_used_and_nan_refused(server) -> None:
    client, sid, _ = server
    config = MBBRConfig(k=3, seed=5)
    supplied = client.create_session(config=config, prior_mean=_prior()).session_id
    default = client.create_session(config=config).session_id

    def opens(prior):
        prior[0]["3"] = [0.0, 1.0]

    changed = client.create_session(config=config, prior_mean=_prior(opens)).session_id
    models = [
        client.model(s, "opp_B", 0).strategy.probabilities for s in (supplied, default, changed)
    ]
    assert (models[0] == models[1]).all() and not (models[0] == models[2]).all()
    for s in (supplied, default, changed):
        client.delete_session(s)
    before = _state(client, sid)

    def nan(prior):
        prior[1]["0p"] = [math.nan, 0.5]

    with pytest.raises(InvalidStrategyError, match="NaN") as info:
        client.create_session(prior_mean=_prior(nan))
    assert info.value.field.startswith("config.mbbr.prior_mean[1].infosets[")
    assert info.value.field.endswith("].probabilities")

    def missing(prior):
        del prior[2]["3pp"]

    with pytest.raises(InvalidStrategyError, match="missing"):
        client.create_session(prior_mean=_prior(missing))

    # '²'.isdigit() but int('²') fails, and a field quoting it cannot travel as gRPC metadata
    # unescaped: both made this INTERNAL
    for key in ("9zz", "²p"):

        def unknown(prior, key=key):
            prior[0][key] = [0.5, 0.5]

        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(prior_mean=_prior(unknown))
        assert info.value.field == f"config.mbbr.prior_mean[0].infosets[{key!r}]"
    with pytest.raises(InvalidArgumentError) as info:
        client.create_session(config=MBBRConfig(prior="uninformed"), prior_mean=_prior())
    assert info.value.field == "config.mbbr.prior_mean"
    assert _state(client, sid) == before


def test_bad_queries(server) -> None:
    client, sid, _ = server
    before = _state(client, sid)
    with pytest.raises(NotFoundError):
        client.model("no-such-session", "opp_A", 0)
    with pytest.raises(NotFoundError):
        client.observe("no-such-session", random_observations(1, seed=0), first_sequence=1)
    cases = [
        (lambda: client.model(sid, "nobody", 0), "opponent_label"),
        (lambda: client.model(sid, "opp_A", 3), "opponent_position"),
        (lambda: client.response(sid, -1), "our_position"),
        (lambda: client.action(sid, position=0, card=1, history="b"), "history"),
        (lambda: client.action(sid, position=0, card=1, history="ppp"), "history"),
        (lambda: client.action(sid, position=0, card=9, history=""), "card"),
        (lambda: client.action(sid, position=4, card=1, history=""), "position"),
        (lambda: client.action(sid, matchstate="MATCHSTATE:0:0::Xs||"), "matchstate"),
        (lambda: client.action(sid, matchstate="MATCHSTATE:0:0:x:Ks||"), "matchstate"),
        (lambda: client.action(sid, matchstate="HELLO"), "matchstate"),
        (lambda: client.action(sid, matchstate="MATCHSTATE:9:0::Ks||"), "matchstate"),
        # str.isdigit() accepts '²' and int() refuses it: this was INTERNAL
        (lambda: client.action(sid, matchstate="MATCHSTATE:²:0::Ks||"), "matchstate"),
        (lambda: client.action(sid, matchstate="MATCHSTATE:0:²::Ks||"), "matchstate"),
    ]
    for call, field in cases:
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.field == field, str(info.value)
    assert _state(client, sid) == before


def test_limits(tmp_path: Path) -> None:
    from oppmodel.server.session_spec import Limits

    with connected(
        tmp_path / "db.sqlite", limits=Limits(max_sessions=2, max_k=50), max_message_bytes=2048
    ) as (client, _):
        with pytest.raises(ResourceExhaustedError, match=r"config\.mbbr\.k"):
            client.create_session(config=MBBRConfig(k=51))
        client.create_session(config=MBBRConfig(k=50))
        client.create_session()
        with pytest.raises(ResourceExhaustedError, match="sessions"):
            client.create_session()
        sid = client.list_sessions()[0].session_id
        with pytest.raises(ResourceExhaustedError):
            client.action(sid, matchstate="M" * 4000)
        assert len(client.list_sessions()) == 2


def test_tokens_keep_sessions_apart(store_location: str) -> None:
    tokens = frozenset({"alice-token", "bob-token"})
    db = store_location
    with connected(db, token="alice-token", auth_tokens=tokens) as (alice, port):
        sid = alice.create_session(config=CONFIG).session_id
        alice.observe(sid, random_observations(3, seed=2), first_sequence=1)
        with OpponentModelClient(f"127.0.0.1:{port}", token="bob-token") as bob:
            assert bob.list_sessions() == []
            for call in (
                lambda: bob.get_session(sid),
                lambda: bob.model(sid, "opp_A", 0),
                lambda: bob.response(sid, 0),
                lambda: bob.action(sid, position=0, card=0, history=""),
                lambda: bob.observe(sid, random_observations(1, seed=3), first_sequence=4),
                lambda: bob.delete_session(sid),
            ):
                with pytest.raises(NotFoundError):
                    call()
        for token in (None, "mallory-token"):
            with OpponentModelClient(f"127.0.0.1:{port}", token=token) as stranger:
                with pytest.raises(UnauthenticatedError):
                    stranger.list_sessions()
                with pytest.raises(UnauthenticatedError):
                    stranger.get_session(sid)
        assert alice.get_session(sid).hands_observed == 3


def test_two_authorization_headers_are_refused_whichever_holds_the_token(tmp_path: Path) -> None:
    """Ambiguous credentials: a wrong token and the right one (in either order, or the right one
    twice) are refused, on a unary call and on the Observe stream, saying why."""
    tokens = frozenset({"alice-token"})
    db = tmp_path / "db.sqlite"
    with connected(db, token="alice-token", auth_tokens=tokens) as (alice, port):
        sid = alice.create_session(config=CONFIG).session_id
        hand = observation_message(1, random_observations(1, seed=2)[0])
        right, wrong = ("authorization", "Bearer alice-token"), ("authorization", "Bearer x")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            for metadata in ((wrong, right), (right, wrong), (right, right)):
                for method in ("GetSession", "Observe"):
                    with pytest.raises(grpc.RpcError) as info:
                        if method == "GetSession":
                            request = pb.GetSessionRequest(session_id=sid)
                            stub.GetSession(request, metadata=metadata, timeout=10)
                        else:
                            requests = iter([pb.ObserveRequest(session_id=sid, observation=hand)])
                            list(stub.Observe(requests, metadata=metadata, timeout=10))
                    assert info.value.code() is grpc.StatusCode.UNAUTHENTICATED, method
                    assert "2 authorization headers" in info.value.details()
        assert alice.get_session(sid).hands_observed == 0


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"seed": -3}, "config.seed"),
        ({"seed": 2**64}, "config.seed"),
        ({"k": 2**31}, "config.mbbr.k"),
        ({"k": 1.5}, "config.mbbr.k"),
        ({"hands_default": 2**40}, "config.mbbr.hands_default"),
        ({"eta": "4"}, "config.mbbr.eta"),
        ({"epsilon": math.nan}, "config.mbbr.epsilon"),  # sent; the server names it
        ({"eta": math.nan}, "config.mbbr.eta"),
        ({"safety_budget": math.nan}, "config.mbbr.safety_budget"),
        ({"change_hazard": math.nan}, "config.mbbr.change_hazard"),
    ],
)
def test_a_config_the_api_cannot_carry_is_refused_naming_the_field(server, settings, field):
    """The client's conversion of every MBBRConfig field: out-of-range integers and the wrong
    types raised protobuf's ValueError or TypeError; now, as NaN, InvalidArgumentError."""
    client, _, _ = server
    with pytest.raises(InvalidArgumentError) as info:
        client.create_session(config=MBBRConfig(**settings))
    assert info.value.field == field


def test_a_query_the_api_cannot_carry_is_refused_naming_the_argument(server):
    client, sid, _ = server
    for call, field in (
        (lambda: client.model(sid, "opp_A", 2**40), "opponent_position"),
        (lambda: client.response(sid, 2**40), "our_position"),
        (lambda: client.action(sid, position=0, card=0, draw=-1), "draw"),
        (lambda: client.action(sid, position=2**40, card=0), "info_state.position"),
        (lambda: client.action(sid, position=0, card=2**40), "info_state.card"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            call()
        assert info.value.field == field
    assert client.action(sid, position=0, card=0, draw=1).infostate  # what is valid still goes


def test_a_strategy_the_api_cannot_carry_is_refused_naming_where(server):
    client, _, _ = server
    for prior_mean, field in (
        ({2**40: {"0": [0.5, 0.5]}}, "prior_mean[1099511627776]"),
        ({1: {"0": ["a", 0.5]}}, "prior_mean[1]['0']"),
    ):
        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(prior_mean=prior_mean)
        assert info.value.field == field


@pytest.mark.parametrize("game", ["kuhn_poker(players=3)", "leduc2p"])
def test_a_nan_probability_is_named_not_finite_at_its_information_set(
    tmp_path: Path, game: str
) -> None:
    """A strategy file (here a session's prior_mean_json) with NaN: read as a missing row, it
    was reported as "missing information sets"."""
    limit = limit_game("kuhn3p" if game.startswith("kuhn") else game)
    document = limit_strategy.profile_to_json(limit, limit_strategy.uniform_profile(limit))
    table = document["positions"][1]
    infostate = next(iter(table))
    table[infostate] = [math.nan, *table[infostate][1:]]
    labels = ("a",) if game == "leduc2p" else ("a", "b")
    with (
        connected(tmp_path / "db.sqlite") as (client, _),
        pytest.raises(InvalidArgumentError) as info,
    ):
        client.create_session(game=game, opponent_labels=labels, prior_mean=json.dumps(document))
    message = str(info.value)
    assert "not finite" in message and infostate in message and "missing" not in message


observation_fields = st.fixed_dictionaries(
    {
        "sequence": st.integers(0, 12),
        "position": st.integers(-2, 4),
        "our_card": st.one_of(st.none(), st.integers(-1, 5)),
        "history": st.one_of(st.none(), st.text("pbx", max_size=6)),
        "acpc_betting": st.one_of(st.none(), st.text("crfx", max_size=6)),
        "revealed": st.lists(st.tuples(st.integers(-1, 4), st.integers(-1, 5)), max_size=4),
    }
)


def _message(fields: dict) -> pb.Observation:
    message = pb.Observation(sequence=fields["sequence"], position=fields["position"])
    if fields["our_card"] is not None:
        message.our_card = fields["our_card"]
    if fields["acpc_betting"] is not None:
        message.acpc_betting = fields["acpc_betting"]
    elif fields["history"] is not None:
        message.history = fields["history"]
    for p, c in fields["revealed"]:
        message.revealed.add(position=p, card=c)
    return message


def _valid_new_observation(fields: dict) -> bool:
    """Would the server accept this as the next observation (sequence 7)?"""
    if fields["sequence"] != 7 or fields["our_card"] is None or not 0 <= fields["position"] < 3:
        return False
    try:
        if fields["acpc_betting"] is not None:
            history = GAME.acpc_to_history(fields["acpc_betting"])
        elif fields["history"] is not None and set(fields["history"]) <= set("pb"):
            history = fields["history"]
        else:
            return False
        cards: list[int | None] = [None] * 3
        cards[fields["position"]] = fields["our_card"]
        for p, c in fields["revealed"]:
            if not 0 <= p < 3 or cards[p] is not None or p == fields["position"]:
                return False
            cards[p] = c
        validate_observation(GAME, HandObservation(fields["position"], history, tuple(cards)))
    except InvalidArgumentError:
        return False
    return True


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(fields=observation_fields)
def test_random_malformed_observations_change_nothing(server, fields) -> None:
    client, sid, port = server
    if _valid_new_observation(fields):
        return  # a well-formed new hand would (rightly) be applied
    before = _state(client, sid)
    message = _message(fields)
    try:
        _raw_observe(client, sid, message)
    except (InvalidArgumentError, ResourceExhaustedError) as exc:
        assert str(exc)
    except Exception as exc:  # FailedPrecondition for gaps and conflicting resends
        assert type(exc).__name__ == "FailedPreconditionError", repr(exc)
    else:
        # Only an exact resend of an applied hand is accepted, and it is not applied again.
        assert 1 <= fields["sequence"] <= 6
    assert _state(client, sid) == before
    # The server is alive and serving.
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        pb_grpc.OpponentModelServiceStub(channel).GetSession(
            pb.GetSessionRequest(session_id=sid), timeout=5
        )


def test_observation_message_round_trip_is_what_client_sends() -> None:
    obs = random_observations(1, seed=4)[0]
    message = observation_message(1, obs)
    assert message.our_card == obs.cards[obs.position]
