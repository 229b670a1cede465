"""PerfectInfoService through a real server on a free loopback port, driven by PerfectInfoClient.

Oracles: the learned weights equal ``gibbs_posterior`` run in-process on the same likelihood
vectors with the session's settings and seed (bit for bit), and the move query equals
``oppmodel.modeling.perfect_info.spades_search.probmaxn_search`` in-process on the same position and
weights.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from service_support import running_server

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.perfect_info_client import (
    ChoiceEvidence,
    GibbsSettings,
    Opponent,
    PerfectInfoClient,
    Weights,
)
from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    ResourceExhaustedError,
    UnknownGameError,
)
from oppmodel.modeling.games.spades import bidding
from oppmodel.modeling.games.spades.cards import deal, parse_hand
from oppmodel.modeling.games.spades.scoring import UtilityModel
from oppmodel.modeling.games.spades.state import SpadesState
from oppmodel.modeling.perfect_info.model_weights import choice_likelihood, gibbs_posterior
from oppmodel.modeling.perfect_info.spades_search import ProbMaxnResult, probmaxn_search
from oppmodel.server.app import PERFECT_INFO_SERVICE_NAME
from oppmodel.server.perfect_info_spec import PerfectInfoLimits
from oppmodel.server.perfect_info_weights import opponent_seed
from oppmodel.v1 import perfect_info_pb2 as pb

GIBBS = GibbsSettings(sweeps=200, burn_in=40, chains=3, level=0.9)
SEED = 20261125
OPPONENTS = (Opponent("west", ("MT", "mOT"), (1.0, 2.0)), Opponent("east", ("mOT", "MT")))
# 50 choices per opponent: (200 sweeps + 40 burn-in) x 3 chains x 50 Gibbs updates.
LIMITS = PerfectInfoLimits(max_choices_per_message=16, max_search_cards=7, max_gibbs_updates=36_000)


@contextlib.contextmanager
def client_on(db: Path, **overrides: object) -> Iterator[PerfectInfoClient]:
    with (
        running_server(db, perfect_info_limits=LIMITS, **overrides) as port,
        PerfectInfoClient(f"127.0.0.1:{port}", timeout=20) as client,
    ):
        client.port = port  # type: ignore[attr-defined]
        yield client


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PerfectInfoClient]:
    with client_on(tmp_path_factory.mktemp("pi") / "db.sqlite") as c:
        yield c


def new_session(client: PerfectInfoClient, seed: int = SEED) -> str:
    return client.create_session(opponents=OPPONENTS, gibbs=GIBBS, seed=seed).session_id


def random_choices(count: int, *, seed: int) -> list[ChoiceEvidence]:
    """Choices of both opponents, half as likelihood vectors and half as utilities."""
    rng = np.random.default_rng(seed)
    out = []
    for t in range(count):
        who = OPPONENTS[t % 2].label
        if rng.random() < 0.5:
            out.append(ChoiceEvidence.from_likelihoods(who, rng.random(2) + 0.01))
        else:
            k = int(rng.integers(2, 6))
            utilities = rng.integers(0, 4, size=(k, 2)).astype(float)
            out.append(
                ChoiceEvidence.from_utilities(
                    who, utilities, chosen=int(rng.integers(k)), epsilon=0.3
                )
            )
    return out


def in_process(choices: list[ChoiceEvidence], index: int) -> object:
    """gibbs_posterior on opponent ``index``'s choices with the session's settings and seed."""
    rows = []
    for c in choices:
        if c.opponent != OPPONENTS[index].label:
            continue
        if c.likelihoods is not None:
            rows.append(c.likelihoods)
        else:
            rows.append(choice_likelihood(c.child_utilities, c.chosen, c.epsilon))
    alpha = OPPONENTS[index].alpha or (1.0,) * len(OPPONENTS[index].models)
    return gibbs_posterior(
        np.array(rows, dtype=np.float64).reshape(-1, 2),
        np.array(alpha),
        seed=opponent_seed(SEED, index),
        sweeps=GIBBS.sweeps,
        burn_in=GIBBS.burn_in,
        chains=GIBBS.chains,
        level=GIBBS.level,
    )


def assert_same(served: Weights, expected: object, choices: int) -> None:
    assert served.choices == choices
    assert np.array_equal(served.mean, expected.mean)
    assert np.array_equal(served.std_error, expected.std_error)
    assert np.array_equal(served.interval, expected.interval)
    assert np.array_equal(served.rhat, expected.rhat)
    assert np.array_equal(served.ess, expected.ess)
    assert served.level == expected.level


def test_health_and_reflection_list_the_service(client: PerfectInfoClient) -> None:
    with grpc.insecure_channel(f"127.0.0.1:{client.port}") as channel:
        reply = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service=PERFECT_INFO_SERVICE_NAME), timeout=5
        )
        assert reply.status == health_pb2.HealthCheckResponse.SERVING
        stub = reflection_pb2_grpc.ServerReflectionStub(channel)
        request = reflection_pb2.ServerReflectionRequest(list_services="")
        (reply,) = list(stub.ServerReflectionInfo(iter([request]), timeout=5))
        assert PERFECT_INFO_SERVICE_NAME in {s.name for s in reply.list_services_response.service}


def test_session_round_trip_and_delete(client: PerfectInfoClient) -> None:
    session = client.create_session(opponents=OPPONENTS, gibbs=GibbsSettings(), seed=3)
    assert session.game == "spades3p"
    assert session.opponents[0] == OPPONENTS[0]
    assert session.opponents[1].alpha == (1.0, 1.0)  # empty prior = all ones
    assert (session.gibbs.sweeps, session.gibbs.burn_in, session.gibbs.chains) == (1000, 200, 4)
    assert client.get_session(session.session_id) == session
    with pytest.raises(InvalidArgumentError) as info:
        client.model_weights(session.session_id, "north")
    assert info.value.field == "opponent"
    with OpponentModelClient(f"127.0.0.1:{client.port}") as other:
        assert session.session_id not in {s.session_id for s in other.list_sessions()}
    client.delete_session(session.session_id)
    with pytest.raises(NotFoundError):
        client.get_session(session.session_id)
    with pytest.raises(NotFoundError):
        client.model_weights(session.session_id)


def test_learned_weights_equal_in_process_gibbs(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    choices = random_choices(40, seed=1)
    acks = client.observe_choices(session_id, choices, first_sequence=1, per_message=3)
    assert [a.sequences for a in acks][:2] == [(1, 2, 3), (4, 5, 6)]
    assert acks[-1].choices_observed == 40
    # Each ack carries the posterior after that message's choices, for the opponents it named.
    sent = choices[:3]
    assert set(acks[0].weights) == {"west", "east"}
    assert_same(acks[0].weights["west"], in_process(sent, 0), 2)
    assert_same(acks[0].weights["east"], in_process(sent, 1), 1)
    final = client.model_weights(session_id)
    assert list(final) == ["west", "east"]
    assert_same(final["west"], in_process(choices, 0), 20)
    assert_same(final["east"], in_process(choices, 1), 20)
    assert final["east"].models == ("mOT", "MT")
    assert client.model_weights(session_id, "east")["east"].mean.tolist() == (
        final["east"].mean.tolist()
    )


def test_no_choices_give_the_prior(client: PerfectInfoClient) -> None:
    weights = client.model_weights(new_session(client))
    assert weights["west"].choices == 0
    np.testing.assert_allclose(weights["west"].mean, [1 / 3, 2 / 3])  # Dirichlet(1, 2)
    assert_same(weights["west"], in_process([], 0), 0)


def epsilon_greedy_choices(
    model: int, count: int, *, eps: float, seed: int, who: str, order: tuple[int, int] = (0, 1)
) -> list[ChoiceEvidence]:
    """Choices of an opponent that is epsilon-greedy for ``model`` (0 = MT, 1 = mOT) over random
    children whose MT and mOT utilities differ (as overtricks do); utility columns are given in
    the opponent's model ``order``."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        k = int(rng.integers(2, 6))
        tricks = rng.permutation(k)  # child c would take tricks[c] overtricks
        utilities = np.stack([30.0 + tricks, 30.0 - tricks], axis=1)
        best = int(np.argmax(utilities[:, model]))
        chosen = int(rng.integers(k)) if rng.random() < eps else best
        out.append(
            ChoiceEvidence.from_utilities(who, utilities[:, order], chosen=chosen, epsilon=eps)
        )
    return out


def test_weights_lean_to_the_true_model(client: PerfectInfoClient) -> None:
    session_id = new_session(client, seed=5)
    west = epsilon_greedy_choices(UtilityModel.MT, 40, eps=0.2, seed=2, who="west")  # MT player
    east = epsilon_greedy_choices(UtilityModel.MOT, 40, eps=0.2, seed=3, who="east", order=(1, 0))
    mixed = [c for pair in zip(west, east, strict=True) for c in pair]
    client.observe_choices(session_id, mixed, first_sequence=1, per_message=8)
    weights = client.model_weights(session_id)
    assert weights["west"].mean[0] > 0.9  # P(MT)
    assert weights["west"].interval[0, 0] > 0.7
    assert weights["east"].mean[0] > 0.9  # a mOT player; east lists mOT first
    assert weights["east"].interval[0, 0] > 0.7
    assert np.all(weights["west"].rhat < 1.1)


def test_sequence_numbers_are_idempotent_and_gaps_refused(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    choices = random_choices(4, seed=9)
    client.observe_choices(session_id, choices[:2], first_sequence=1)
    before = client.model_weights(session_id)
    (ack,) = client.observe_choices(session_id, choices[1:3], first_sequence=2, per_message=2)
    assert ack.sequences == (2, 3) and ack.duplicates == (True, False)
    assert ack.choices_observed == 3
    (again,) = client.observe_choices(session_id, choices[:3], first_sequence=1, per_message=3)
    assert again.duplicates == (True, True, True) and again.choices_observed == 3
    with pytest.raises(FailedPreconditionError, match="gap"):
        client.observe_choices(session_id, choices[3:], first_sequence=5)
    with pytest.raises(FailedPreconditionError, match="different content"):
        client.observe_choices(session_id, [choices[2]], first_sequence=1)
    # A message with a good new choice and a gap stores nothing.
    request = pb.ObserveChoicesRequest(
        session_id=session_id, observations=[choices[3].to_proto(4), choices[3].to_proto(6)]
    )
    with pytest.raises(FailedPreconditionError):
        list(client.observe_stream(iter([request])))
    assert client.get_session(session_id).choices_observed == 3
    after = client.model_weights(session_id)
    assert_same(after["west"], in_process(choices[:3], 0), 2)
    assert before["east"].mean.tolist() == after["east"].mean.tolist()  # east's choice 2 only


def test_restart_on_the_same_database_gives_identical_weights(store_location: str) -> None:
    db = store_location
    choices = random_choices(30, seed=4)
    with client_on(db) as first:
        session_id = new_session(first)
        first.observe_choices(session_id, choices[:20], first_sequence=1, per_message=5)
        before = first.model_weights(session_id)
    with client_on(db) as second:
        after = second.model_weights(session_id)
        for index, label in enumerate(("west", "east")):
            assert_same(after[label], in_process(choices[:20], index), 10)
            assert after[label].mean.tolist() == before[label].mean.tolist()
        (ack,) = second.observe_choices(session_id, choices[20:], first_sequence=21, per_message=10)
        assert ack.choices_observed == 30
        assert_same(second.model_weights(session_id)["west"], in_process(choices, 0), 15)


# -- the prob-max^n query -------------------------------------------------------------------------
def deal_position(seed: int, hand_size: int = 6) -> SpadesState:
    hands = deal(np.random.default_rng(seed), hand_size)
    return SpadesState.start(hands, leader=seed % 3)


def assert_move_equals(served, expected: ProbMaxnResult) -> None:
    assert served.mover == expected.mover
    assert served.move == expected.move
    assert np.array_equal(served.utility, expected.u)
    assert served.u_true == expected.u_true
    assert served.moves == expected.moves
    assert served.multiplicities == expected.multiplicities
    assert np.array_equal(served.prob_choice, expected.prob_choice)
    assert np.array_equal(served.child_u_true, expected.child_true)
    assert served.n_cards == expected.n_cards
    assert served.nodes == expected.nodes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_move_equals_in_process_search(client: PerfectInfoClient, seed: int) -> None:
    pos = deal_position(seed)
    weights = np.array([[0.5, 0.5], [0.8, 0.2], [0.3, 0.7]])
    me = pos.turn if seed != 2 else (pos.turn + 1) % 3  # seed 2: an opponent moves at the root
    served = client.probmaxn_move(pos, searcher=me, weights=weights, epsilon=0.2, true_model="mOT")
    bids = bidding.bids(pos.hands)
    expected = probmaxn_search(pos, bids, me=me, true_model="mOT", weights=weights, eps=0.2)
    assert served.bids == bids
    assert_move_equals(served, expected)
    assert (served.move is None) == (seed == 2)


def test_move_mid_trick_with_given_bids(client: PerfectInfoClient) -> None:
    pos = deal_position(7, hand_size=5)
    pos = pos.play(pos.legal_moves()[0])
    pos = pos.play(pos.legal_moves()[-1])
    bids = (2, 1, 2)
    weights = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 1.0]])
    served = client.probmaxn_move(pos, searcher=pos.turn, bids=bids, weights=weights)
    expected = probmaxn_search(pos, bids, me=pos.turn, true_model="MT", weights=weights)
    assert_move_equals(served, expected)
    assert served.move in pos.legal_moves()


def test_move_under_learned_weights(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    choices = random_choices(12, seed=8)
    client.observe_choices(session_id, choices, first_sequence=1, per_message=4)
    pos = deal_position(3)
    me = pos.turn
    served = client.probmaxn_move(
        pos, searcher=me, session_id=session_id, searcher_weights=(0.25, 0.75)
    )
    west, east = in_process(choices, 0).mean, in_process(choices, 1).mean
    weights = np.zeros((3, 2))
    weights[me] = (0.25, 0.75)
    weights[(me + 1) % 3] = west  # (MT, mOT)
    weights[(me + 2) % 3] = east[::-1]  # east's models are (mOT, MT)
    assert np.array_equal(served.weights, weights)
    expected = probmaxn_search(
        pos, bidding.bids(pos.hands), me=me, true_model="MT", weights=weights
    )
    assert_move_equals(served, expected)


def test_a_search_gives_the_evidence_of_the_movers_choice(client: PerfectInfoClient) -> None:
    pos = deal_position(4, hand_size=7)
    me = (pos.turn + 2) % 3  # the mover sits right after us: the session's "west"
    weights = np.array([[0.5, 0.5], [0.6, 0.4], [0.1, 0.9]])
    served = client.probmaxn_move(pos, searcher=me, weights=weights, epsilon=0.2)
    local = probmaxn_search(
        pos, bidding.bids(pos.hands), me=me, true_model="MT", weights=weights, eps=0.2
    )
    assert served.epsilon == 0.2 and served.move is None
    evidence = []
    for card in pos.legal_moves():
        west = served.choice_evidence("west", card)
        lik = choice_likelihood(west.child_utilities, west.chosen, west.epsilon)
        assert np.array_equal(lik, local.choice_likelihood(card))
        east = served.choice_evidence("east", card, models=("mOT", "MT"))
        assert np.array_equal(choice_likelihood(east.child_utilities, east.chosen, 0.2), lik[::-1])
        evidence.append(west)
    with pytest.raises(InvalidArgumentError):
        served.choice_evidence("west", min(served.moves) - 1)  # below every legal card
    session_id = new_session(client)
    client.observe_choices(session_id, evidence, first_sequence=1, per_message=len(evidence))
    assert_same(client.model_weights(session_id)["west"], in_process(evidence, 0), len(evidence))


# -- bad input ------------------------------------------------------------------------------------
def _likelihoods(*values: float) -> pb.ChoiceObservation:
    return pb.ChoiceObservation(
        sequence=1, opponent="west", likelihoods=pb.ModelValues(values=values)
    )


def _utilities(children: list[list[float]], chosen: int, eps: float) -> pb.ChoiceObservation:
    return pb.ChoiceObservation(
        sequence=1,
        opponent="west",
        utilities=pb.ChoiceUtilities(
            children=[pb.ModelValues(values=c) for c in children], chosen=chosen, epsilon=eps
        ),
    )


BAD_CHOICES = {
    "nan likelihood": (_likelihoods(float("nan"), 1.0), "observations[1].likelihoods.values[0]"),
    "negative likelihood": (_likelihoods(0.5, -0.1), "observations[1].likelihoods.values[1]"),
    "wrong length": (_likelihoods(0.5, 0.2, 0.3), "observations[1].likelihoods"),
    "all zero": (_likelihoods(0.0, 0.0), "observations[1].likelihoods"),
    "chosen out of range": (
        _utilities([[1, 2], [2, 1]], 2, 0.1),
        "observations[1].utilities.chosen",
    ),
    "short child": (_utilities([[1, 2], [2]], 0, 0.1), "observations[1].utilities.children[1]"),
    "inf utility": (
        _utilities([[1, 2], [2, float("inf")]], 0, 0.1),
        "observations[1].utilities.children[1].values[1]",
    ),
    "nan epsilon": (
        _utilities([[1, 2], [2, 1]], 0, float("nan")),
        "observations[1].utilities.epsilon",
    ),
    "no children": (_utilities([], 0, 0.1), "observations[1].utilities.children"),
    "impossible choice": (_utilities([[1, 1], [2, 2]], 0, 0.0), "observations[1].utilities.chosen"),
    "unknown opponent": (
        pb.ChoiceObservation(
            sequence=1, opponent="north", likelihoods=pb.ModelValues(values=[1, 1])
        ),
        "observations[1].opponent",
    ),
    "no evidence": (
        pb.ChoiceObservation(sequence=1, opponent="west"),
        "observations[1].likelihoods",
    ),
}


@pytest.mark.parametrize("case", BAD_CHOICES, ids=str)
def test_bad_choices_are_refused_and_change_nothing(client: PerfectInfoClient, case: str) -> None:
    session_id = new_session(client)
    good = random_choices(3, seed=6)
    client.observe_choices(session_id, good[:2], first_sequence=1)
    before = client.model_weights(session_id)
    bad, field = BAD_CHOICES[case]
    bad.sequence = 4
    # The bad choice comes second, after a good new one: the whole message is refused.
    request = pb.ObserveChoicesRequest(
        session_id=session_id, observations=[good[2].to_proto(3), bad]
    )
    with pytest.raises(InvalidArgumentError) as info:
        list(client.observe_stream(iter([request])))
    assert info.value.field == field
    assert client.get_session(session_id).choices_observed == 2
    after = client.model_weights(session_id)
    for label in ("west", "east"):
        assert after[label].mean.tolist() == before[label].mean.tolist()


def test_too_many_choices_in_one_message(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    choices = random_choices(LIMITS.max_choices_per_message + 1, seed=2)
    with pytest.raises(ResourceExhaustedError, match="observations"):
        client.observe_choices(session_id, choices, first_sequence=1, per_message=len(choices))
    assert client.get_session(session_id).choices_observed == 0
    with pytest.raises(NotFoundError):
        client.observe_choices("no-such-session", choices[:1], first_sequence=1)


def test_gibbs_work_limit(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    west = [ChoiceEvidence.from_likelihoods("west", (0.6, 0.4))] * 51
    client.observe_choices(session_id, west[:48], first_sequence=1, per_message=16)
    with pytest.raises(ResourceExhaustedError, match="at most 50 choices per opponent"):
        client.observe_choices(session_id, west[48:], first_sequence=49, per_message=3)
    assert client.get_session(session_id).choices_observed == 48
    east = ChoiceEvidence.from_likelihoods("east", (0.5, 0.5))
    (ack,) = client.observe_choices(session_id, [west[0], east], first_sequence=48, per_message=2)
    assert ack.duplicates == (True, False) and ack.choices_observed == 49


BAD_SESSIONS = {
    "unknown model": (
        {"opponents": [Opponent("a", ("MT", "MX")), Opponent("b")]},
        "config.opponents[0].models[1]",
    ),
    "repeated model": (
        {"opponents": [Opponent("a"), Opponent("b", ("MT", "MT"))]},
        "config.opponents[1].models[1]",
    ),
    "nan alpha": (
        {"opponents": [Opponent("a", alpha=(float("nan"),)), Opponent("b")]},
        "config.opponents[0].alpha",
    ),
    "negative alpha": (
        {"opponents": [Opponent("a"), Opponent("b", alpha=(1, -1))]},
        "config.opponents[1].alpha",
    ),
    "alpha length": (
        {"opponents": [Opponent("a", alpha=(1, 2, 3)), Opponent("b")]},
        "config.opponents[0].alpha",
    ),
    "repeated label": ({"opponents": [Opponent("a"), Opponent("a")]}, "config.opponents[1].label"),
    "no models": ({"opponents": [Opponent("a", ()), Opponent("b")]}, "config.opponents[0].models"),
    "one opponent": ({"opponents": [Opponent("a")]}, "config.opponents"),
    "one chain": ({"gibbs": GibbsSettings(chains=1)}, "config.gibbs.chains"),
    "level": ({"gibbs": GibbsSettings(level=1.0)}, "config.gibbs.level"),
}


@pytest.mark.parametrize("case", BAD_SESSIONS, ids=str)
def test_bad_sessions_are_refused(client: PerfectInfoClient, case: str) -> None:
    overrides, field = BAD_SESSIONS[case]
    kwargs = {"opponents": OPPONENTS, "gibbs": GIBBS, **overrides}
    with pytest.raises(InvalidArgumentError) as info:
        client.create_session(**kwargs)
    assert info.value.field == field


def test_session_limits(client: PerfectInfoClient) -> None:
    with pytest.raises(UnknownGameError) as info:
        client.create_session(opponents=OPPONENTS, game="hearts4p")
    assert info.value.field == "config.game"
    with pytest.raises(ResourceExhaustedError, match=r"config\.gibbs"):
        client.create_session(opponents=OPPONENTS, gibbs=GibbsSettings(sweeps=10**6))
    many = Opponent("a", ("MT",) * 17)
    with pytest.raises(ResourceExhaustedError, match=r"\.models: at most 16 models per opponent"):
        client.create_session(opponents=[many, Opponent("b")])


def test_too_many_children_in_one_choice(client: PerfectInfoClient) -> None:
    session_id = new_session(client)
    choice = _utilities([[1.0, 2.0]] * 257, 0, 0.1)
    request = pb.ObserveChoicesRequest(session_id=session_id, observations=[choice])
    with pytest.raises(ResourceExhaustedError, match=r"children: at most 256 children per choice"):
        list(client.observe_stream(iter([request])))
    assert client.get_session(session_id).choices_observed == 0


START = SpadesState.start((parse_hand("AS KS 2C"), parse_hand("QS 3C 4D"), parse_hand("5H 6H 7H")))
EVEN = [[0.5, 0.5]] * 3


def _position(**changes: object) -> pb.SpadesPosition:
    message = pb.SpadesPosition(hands=["AS KS 2C", "QS 3C 4D", "5H 6H 7H"])
    for name, value in changes.items():
        field = getattr(message, name)
        if isinstance(value, list):
            del field[:]
            field.extend(value)
        else:
            setattr(message, name, value)
    return message


BAD_MOVES = {
    "duplicate card in a hand": (
        _position(hands=["AS AS 2C", "QS 3C 4D", "5H 6H 7H"]),
        InvalidArgumentError,
        "position.hands[0]",
    ),
    "card in two hands": (
        _position(hands=["AS KS 2C", "AS 3C 4D", "5H 6H 7H"]),
        InvalidArgumentError,
        "position.hands",
    ),
    "wrong counts": (
        _position(hands=["AS KS 2C", "QS 3C", "5H 6H 7H"]),
        InvalidArgumentError,
        "position.hands",
    ),
    "two hands": (
        _position(hands=["AS KS 2C", "QS 3C 4D"]),
        InvalidArgumentError,
        "position.hands",
    ),
    "bad card": (
        _position(hands=["AS KS 2C", "QS 3C 1D", "5H 6H 7H"]),
        InvalidArgumentError,
        "position.hands[1]",
    ),
    "trick out of order": (
        _position(hands=["AS KS", "QS 3C 4D", "5H 6H 7H"], trick=["", "", "2C"], bids=[1, 1, 1]),
        InvalidArgumentError,
        "position.trick",
    ),
    "two cards for a seat": (
        _position(trick=["2C 3C", "", ""], bids=[1, 1, 1]),
        InvalidArgumentError,
        "position.trick[0]",
    ),
    "wrong turn": (_position(turn=1), InvalidArgumentError, "position.turn"),
    "leader out of range": (_position(leader=3), InvalidArgumentError, "position.leader"),
    "bids needed mid-hand": (
        _position(hands=["AS KS", "QS 3C 4D", "5H 6H 7H"], trick=["2C", "", ""], turn=1),
        InvalidArgumentError,
        "position.bids",
    ),
    "bids out of range": (_position(bids=[1, 1, 40]), InvalidArgumentError, "position.bids"),
    "hand over": (
        _position(hands=["", "", ""], tricks=[1, 1, 1]),
        InvalidArgumentError,
        "position",
    ),
    "too many cards": (
        _position(
            hands=["AS KS QS JS TS 9S 8S 7S", "2C 3C 4C 5C 6C 7C 8C 9C", "2H 3H 4H 5H 6H 7H 8H 9H"]
        ),
        ResourceExhaustedError,
        None,
    ),
}


@pytest.mark.parametrize("case", BAD_MOVES, ids=str)
def test_bad_positions_are_refused(client: PerfectInfoClient, case: str) -> None:
    message, error, field = BAD_MOVES[case]
    request = pb.GetProbMaxnMoveRequest(position=message, searcher=0)
    for row in EVEN:
        request.given.seats.add(values=row)
    with pytest.raises(error) as info:
        client._call("GetProbMaxnMove", request)
    if field is not None:
        assert info.value.field == field
    else:
        assert "position.hands" in str(info.value)


def test_bad_move_parameters_are_refused(client: PerfectInfoClient) -> None:
    def field_of(**kwargs: object) -> str:
        with pytest.raises(InvalidArgumentError) as info:
            client.probmaxn_move(START, **{"searcher": 0, "weights": EVEN, **kwargs})
        return info.value.field

    assert field_of(searcher=3) == "searcher"
    assert field_of(true_model="MX") == "true_model"
    assert field_of(epsilon=1.5) == "epsilon"
    assert field_of(weights=[[0.5, 0.5], [0.6, 0.6], [1, 0]]) == "given.seats[1]"
    assert field_of(weights=[[0.5, 0.5], [1, 0]]) == "given.seats"
    assert field_of(weights=[[0.5, 0.5], [1, 0], [float("nan"), 1]]) == "given.seats[2]"
    session_id = new_session(client)
    assert (
        field_of(weights=None, session_id=session_id, searcher_weights=(0.5,)) == "searcher_weights"
    )
    with pytest.raises(InvalidArgumentError) as info:
        client._call("GetProbMaxnMove", pb.GetProbMaxnMoveRequest(position=_position()))
    assert info.value.field == "weights"
    with pytest.raises(NotFoundError):
        client.probmaxn_move(START, searcher=0, session_id="nope")


def test_tokens_keep_sessions_apart(store_location: str) -> None:
    tokens = frozenset({"alice", "bob"})
    with running_server(store_location, auth_tokens=tokens) as port:
        target = f"127.0.0.1:{port}"
        with (
            PerfectInfoClient(target, token="alice") as alice,
            PerfectInfoClient(target, token="bob") as bob,
        ):
            session_id = alice.create_session(opponents=OPPONENTS, gibbs=GIBBS).session_id
            with pytest.raises(NotFoundError):
                bob.model_weights(session_id)
            with pytest.raises(NotFoundError):
                bob.observe_choices(session_id, random_choices(1, seed=0), first_sequence=1)
            assert alice.get_session(session_id).choices_observed == 0


def test_sessions_leave_memory_and_come_back_unchanged(store_location: str) -> None:
    limits = PerfectInfoLimits(max_live_sessions=1)
    choices = random_choices(10, seed=12)
    with (
        running_server(store_location, perfect_info_limits=limits) as port,
        PerfectInfoClient(f"127.0.0.1:{port}") as client,
    ):
        first, second = new_session(client), new_session(client)  # the second evicts the first
        client.observe_choices(first, choices[:6], first_sequence=1, per_message=2)
        client.observe_choices(second, choices, first_sequence=1, per_message=5)
        client.observe_choices(first, choices[6:], first_sequence=7, per_message=2)
        for session_id in (first, second):
            weights = client.model_weights(session_id)
            assert_same(weights["west"], in_process(choices, 0), 5)
            assert_same(weights["east"], in_process(choices, 1), 5)


_NUMBERS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True, width=64),
    st.sampled_from([0.0, -0.0, 1.0, 0.5, -1.0]),
)
_VALUES = st.lists(_NUMBERS, max_size=4).map(lambda v: pb.ModelValues(values=v))
_EVIDENCE = st.one_of(
    st.none(),
    _VALUES.map(lambda v: {"likelihoods": v}),
    st.builds(
        lambda children, chosen, eps: {
            "utilities": pb.ChoiceUtilities(children=children, chosen=chosen, epsilon=eps)
        },
        st.lists(_VALUES, max_size=4),
        st.integers(-2, 5),
        _NUMBERS,
    ),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sequence=st.integers(0, 3),
    opponent=st.sampled_from(["west", "east", "north", ""]),
    evidence=_EVIDENCE,
)
def test_random_choices_never_break_the_server(
    client: PerfectInfoClient, sequence: int, opponent: str, evidence: dict | None
) -> None:
    session_id = new_session(client)
    message = pb.ChoiceObservation(sequence=sequence, opponent=opponent, **(evidence or {}))
    request = pb.ObserveChoicesRequest(session_id=session_id, observations=[message])
    try:
        (ack,) = client.observe_stream(iter([request]))
    except (InvalidArgumentError, FailedPreconditionError) as exc:
        assert str(exc).startswith("observations[0]")  # names the field; never INTERNAL
        assert client.get_session(session_id).choices_observed == 0
    else:
        assert sequence == 1 and ack.choices_observed == 1
        (weights,) = ack.weights
        assert weights.opponent == opponent and np.isclose(sum(weights.mean), 1.0)


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"seed": -3}, "config.seed"),
        ({"seed": 2**64}, "config.seed"),
        ({"gibbs": GibbsSettings(sweeps=2**40)}, "config.gibbs.sweeps"),
        ({"gibbs": GibbsSettings(chains=1.5)}, "config.gibbs.chains"),  # type: ignore[arg-type]
        ({"gibbs": GibbsSettings(level="0.9")}, "config.gibbs.level"),  # type: ignore[arg-type]
    ],
)
def test_settings_the_api_cannot_carry_are_refused_naming_the_field(
    client: PerfectInfoClient, options: dict, field: str
) -> None:
    """Not protobuf's ValueError or TypeError from the client: the field, as the server names
    what it refuses."""
    with pytest.raises(InvalidArgumentError) as info:
        client.create_session(opponents=OPPONENTS, **options)
    assert info.value.field == field
