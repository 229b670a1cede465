"""What GetModel and GetResponse report for the web page beside the model (issue 33): the prior
mean, the concentration per information state that the credible intervals come from, change
detection's run start and the safety bankroll, each equal to the library's model fed the same
hands; and the policy played, which GetAction draws from, with its value against the models, when
asked for (the page asks; an agent's GetResponse, without the field, gets and costs none of it).
GetModels answers all of them at one posterior in one call, as the separate calls do, and so does
the Python client's ``models()``."""

from __future__ import annotations

import math
from pathlib import Path

import grpc
import pytest
from service_support import (
    GAME,
    LOADED_DEADLINE,
    CompiledKuhn,
    connected,
    kuhn_library,
    random_observations,
)

from oppmodel.clients.client import BestResponse, OpponentModel
from oppmodel.modeling import errors
from oppmodel.modeling.evaluation.limit import expected_values
from oppmodel.modeling.games.acpc.strategy import kuhn_strategy_of
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.strategy import strategy_to_dict
from oppmodel.v1 import opponent_model_pb2 as pb
from oppmodel.v1 import opponent_model_pb2_grpc as pb_grpc

LABELS = ("bob", "carol")


def _check_session(client, config: MBBRConfig, observations) -> CompiledKuhn:
    """Every opponent in every position: the fields equal the library's (returned)."""
    sid = client.create_session(opponent_labels=LABELS, config=config).session_id
    client.observe_batch(sid, observations, first_sequence=1)
    library = kuhn_library(config, observations)
    insight_of = library.model.opponent_insight
    for offset, label in enumerate(LABELS, start=1):
        for position in range(3):
            got = client.model(sid, label, position)
            ours = (position - offset) % 3
            want = insight_of(ours, position)
            prior = kuhn_strategy_of(library.compiled, position, want.prior)
            assert got.prior.as_dict() == {
                s: tuple(p) for s, p in strategy_to_dict(GAME, position, prior).items()
            }
            if config.posterior == "samples":
                assert got.concentration == ()
            else:  # the same values, on OpenSpiel's rows: the least is GetModel's spread
                rows = list(library.compiled.infosets(position))
                assert sorted(got.concentration) == sorted(want.concentration[rows].tolist())
                assert min(got.concentration) == got.effective_sample_size
            assert got.run_start == library.run_start
            bankroll = want.safety_bankroll
            assert got.safety_bankroll == (None if math.isinf(bankroll) else bankroll)
    return library


def test_model_fields_equal_the_library(tmp_path: Path) -> None:
    # maniacs turning tight-passive: change detection finds a run start after 0
    switching = random_observations(50, seed=8)
    switching += random_observations(40, seed=9, profile="tight-passive")
    equilibrium = random_observations(60, seed=4, profile="n2")  # the guards stay alive
    with connected(tmp_path / "s.sqlite") as (client, _):
        changed = MBBRConfig(hands_default=5, seed=3, change_hazard=0.1)
        assert _check_session(client, changed, switching).run_start > 0
        guarded = _check_session(client, MBBRConfig(seed=2), equilibrium)
        assert math.isfinite(guarded.model.safety_bankroll())
        _check_session(client, MBBRConfig(seed=2, k=5, posterior="samples"), equilibrium[:20])


def test_response_answers_the_policy_played_when_asked(tmp_path: Path) -> None:
    # equilibrium play keeps the safety budget's guard hypotheses alive: it binds
    hands = random_observations(80, seed=4, profile="n2")
    config = MBBRConfig(seed=2, hands_default=10)
    with connected(tmp_path / "s.sqlite") as (client, _):
        sid = client.create_session(opponent_labels=LABELS, config=config).session_id
        held_back = False
        for seen, upto in ((0, 5), (5, 80)):  # in the default phase, then after it
            client.observe_batch(sid, hands[seen:upto], first_sequence=seen + 1)
            library = kuhn_library(config, hands[:upto])
            for ours in range(3):
                got = client.response(sid, ours, "mean", played=True)
                bare = client.response(sid, ours, "mean")  # an agent's: the service skips it
                assert (bare.played, bare.played_expected_value) == (None, None)
                assert bare.strategy.as_dict() == got.strategy.as_dict()
                assert bare.expected_value == got.expected_value
                assert got.played is not None and got.played_expected_value is not None
                played = got.played.as_dict()
                assert played.keys() == got.strategy.as_dict().keys()
                for state, probabilities in played.items():  # what GetAction draws from
                    action = client.action(
                        sid, position=ours, card=int(state[0]), history=state[1:]
                    )
                    assert action.probabilities == pytest.approx(probabilities, abs=1e-12), state
                if upto <= config.hands_default:  # the default strategy, N1
                    default = library.model.default_strategy[ours]
                    want = strategy_to_dict(
                        GAME, ours, kuhn_strategy_of(library.compiled, ours, default)
                    )
                    assert played.keys() == want.keys()
                    for state, row in want.items():
                        assert played[state] == pytest.approx(row, abs=1e-12), state
                else:  # the response, mixed with the default as far as the bankroll allows
                    held_back |= played != got.strategy.as_dict()
                # its value against the posterior-mean models, and never above the response's
                profile = library.model.models_profile(ours).copy()
                profile[ours] = library.model.policy(ours)
                value = expected_values(library.compiled, profile)[ours]
                assert got.played_expected_value == pytest.approx(value, abs=1e-12)
                assert got.played_expected_value <= got.expected_value + 1e-12
        assert held_back, "the safety budget never held the played policy back"


def test_get_models_answers_every_model_and_response_of_one_posterior(tmp_path: Path) -> None:
    hands = random_observations(60, seed=5)
    with connected(tmp_path / "s.sqlite") as (client, port):
        config = MBBRConfig(seed=2, hands_default=10, change_hazard=0.1)
        sid = client.create_session(opponent_labels=LABELS, config=config).session_id
        client.observe_batch(sid, hands, first_sequence=1)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            stub = pb_grpc.OpponentModelServiceStub(channel)
            for played in (True, False):
                got = stub.GetModels(
                    pb.GetModelsRequest(
                        session_id=sid, kind=pb.RESPONSE_KIND_MEAN, include_played=played
                    ),
                    timeout=LOADED_DEADLINE,
                )
                models = [
                    stub.GetModel(
                        pb.GetModelRequest(
                            session_id=sid, opponent_label=label, opponent_position=p
                        ),
                        timeout=LOADED_DEADLINE,
                    )
                    for label in LABELS
                    for p in range(3)
                ]
                responses = [
                    stub.GetResponse(
                        pb.GetResponseRequest(
                            session_id=sid,
                            our_position=p,
                            kind=pb.RESPONSE_KIND_MEAN,
                            include_played=played,
                        ),
                        timeout=LOADED_DEADLINE,
                    )
                    for p in range(3)
                ]
                assert list(got.models) == models  # field for field, the separate calls'
                assert list(got.responses) == responses
                assert all(r.played for r in responses) == played
                assert got.hands_observed == 60 and got.players == 3
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetModels(pb.GetModelsRequest(session_id="nope"), timeout=LOADED_DEADLINE)
            assert refused.value.code() == grpc.StatusCode.NOT_FOUND
            with pytest.raises(grpc.RpcError) as refused:
                stub.GetModels(pb.GetModelsRequest(session_id=sid, kind=7), timeout=LOADED_DEADLINE)
            assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
            assert "kind" in refused.value.details()


def _fields(model: OpponentModel) -> tuple:
    """An OpponentModel's values (its tables hold numpy arrays, which compare element-wise)."""
    return (
        model.strategy.as_dict(),
        model.prior.as_dict(),
        model.effective_sample_size,
        model.our_position,
        model.hands_observed,
        model.concentration,
        model.run_start,
        model.safety_bankroll,
    )


def _response_fields(response: BestResponse) -> tuple:
    played = None if response.played is None else response.played.as_dict()
    return (
        response.strategy.as_dict(),
        response.expected_value,
        response.kind,
        response.hands_observed,
        played,
        response.played_expected_value,
    )


def test_the_clients_models_equal_its_separate_calls(tmp_path: Path) -> None:
    hands = random_observations(70, seed=6)
    with connected(tmp_path / "s.sqlite") as (client, _):
        config = MBBRConfig(seed=3, hands_default=10, change_hazard=0.1)
        sid = client.create_session(opponent_labels=LABELS, config=config).session_id
        client.observe_batch(sid, hands, first_sequence=1)
        for kind, played in (("mean", True), ("bayes", False), (None, False)):
            got = client.models(sid, kind, played=played)
            assert got.hands_observed == 70
            assert [[_fields(m) for m in row] for row in got.models] == [
                [_fields(client.model(sid, label, p)) for p in range(3)] for label in LABELS
            ]
            assert [_response_fields(r) for r in got.responses] == [
                _response_fields(client.response(sid, p, kind, played=played)) for p in range(3)
            ]
            assert all((r.played is not None) == played for r in got.responses)
        with pytest.raises(errors.NotFoundError):
            client.models("nope")
        with pytest.raises(errors.InvalidArgumentError, match="kind"):
            client.models(sid, "median")
