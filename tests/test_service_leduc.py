"""Leduc hold'em (any ACPC limit game) through the service, driven only through the client and
checked against the in-process library: a limit model built with the same configuration and fed
the same hands must answer GetModel, GetResponse and GetAction exactly as the service does.
ObserveBatch keeps the stream's exactly-once rules, all or nothing; bad input is refused naming
the field; a Kuhn session takes MATCHSTATE observations too."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from service_support import connected, kuhn_library, random_observations, running_server
from test_limit_mbbr import random_hands

from oppmodel.clients.client import OpponentModelClient, observation_message
from oppmodel.clients.commands import serve_cmd
from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    ResourceExhaustedError,
)
from oppmodel.modeling.games.acpc.bundled import GAMES_FOLDER
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.games.acpc.strategy import (
    profile_to_json,
    strategy_to_dict,
    uniform_profile,
)
from oppmodel.modeling.games.interface import compiled
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.mbbr.base import MBBRModel
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import LimitObservation
from oppmodel.server.conversion import observation_from_proto
from oppmodel.server.session_spec import Limits
from oppmodel.v1 import opponent_model_pb2 as pb

LABELS = ("opp_A", "opp_B")
LOADED_SECONDS = 300.0  # a call's deadline where it may build a Leduc model on a loaded machine


def library(game_name: str, config: MBBRConfig, hands, **profiles) -> MBBRModel:
    model = build_model(limit_game(game_name), config, **profiles)
    for obs in hands:
        model.observe(obs)
    return model


def decision_line(game, position: int, infoset: int, hand: int = 7) -> str:
    """The MATCHSTATE line a seat sees at one of its information sets."""
    view, betting = game.infoset_string(position, infoset).split(":")
    hole, *board = view.split("/")
    cards = [""] * game.num_players
    cards[position] = hole
    return str(MatchState(position, hand, betting, tuple(cards), ("", *board)))


def assert_matches_library(client, sid: str, model: MBBRModel, kinds=("mean",)) -> None:
    game = model.game
    n = game.num_players
    labels = client.get_session(sid).opponent_labels
    for offset, label in enumerate(labels, start=1):
        for q in range(n):
            got = client.model(sid, label, q)
            p = (q - offset) % n
            want, spread = model.opponent_model(p, q)
            assert got.our_position == p
            assert got.effective_sample_size == spread
            assert got.strategy.as_dict() == {
                s: tuple(x) for s, x in strategy_to_dict(game, q, want).items()
            }
    for p in range(n):
        for kind in kinds:
            got = client.response(sid, p, kind)
            strategy, value = model.response(p, kind)
            assert got.expected_value == value
            assert got.strategy.as_dict() == {
                s: tuple(x) for s, x in strategy_to_dict(game, p, strategy).items()
            }
        for infoset in range(0, game.infosets_per_position[p], 97):
            line = decision_line(game, p, infoset)
            got = client.action(sid, matchstate=line, draw=infoset)
            assert got.infostate == game.infoset_string(p, infoset)
            assert got.probabilities == tuple(model.action_probabilities(p, infoset))
            assert got.acpc_action == "fcr"[got.action]
            assert got.probabilities[got.action] > 0


@pytest.mark.parametrize(
    ("game_name", "config"),
    [
        ("leduc3p", MBBRConfig(hands_default=5, seed=11)),
        ("leduc3p", MBBRConfig(hands_default=0, seed=11, prior="typed")),
        ("leduc2p", MBBRConfig(hands_default=0, seed=11, prior="mixture")),
        ("leduc2p", MBBRConfig(hands_default=0, seed=3, posterior="samples", k=5)),
        ("leduc2p", MBBRConfig(hands_default=0, seed=3, change_hazard=0.05)),  # runs move
    ],
)
def test_service_answers_equal_the_library(tmp_path: Path, game_name, config) -> None:
    game = limit_game(game_name)
    hands = random_hands(game, 60, seed=5)
    labels = LABELS[: game.num_players - 1]
    kinds = ("mean", "bayes") if config.posterior == "samples" else ("mean",)
    with connected(tmp_path / "db.sqlite") as (client, _):
        session = client.create_session(game=game_name, opponent_labels=labels, config=config)
        assert session.game == game_name
        assert session.config.safety_budget == config.safety_budget  # MBBRConfig's if unset
        # change detection in a limit session only when asked for (the client sends a value
        # other than the default)
        want = config.change_hazard if config.change_hazard != MBBRConfig.change_hazard else 0.0
        assert session.config.change_hazard == want
        config = dataclasses.replace(config, change_hazard=want)
        sid = session.session_id
        assert client.observe(sid, hands[:30], first_sequence=1) == 30
        assert client.observe_batch(sid, hands[30:], first_sequence=31) == 60
        assert_matches_library(client, sid, library(game_name, config, hands), kinds)


def test_a_game_given_by_its_rules_and_strategies_given_as_files(tmp_path: Path) -> None:
    """The rules' text names the bundled game they are; a prior mean and default strategy
    given as strategy-file JSON or as PositionStrategy messages are the library's."""
    game = limit_game("leduc2p")
    rules = (GAMES_FOLDER / "leduc.limit.2p.game").read_text()
    uniform = uniform_profile(game)
    config = MBBRConfig(hands_default=3, seed=2)
    hands = random_hands(game, 20, seed=9)
    as_messages = {p: strategy_to_dict(game, p, uniform[p]) for p in range(2)}
    with connected(tmp_path / "db.sqlite") as (client, _):
        a = client.create_session(
            game=rules,
            opponent_labels=["x"],
            config=config,
            prior_mean=json.dumps(profile_to_json(game, uniform)),
            default_strategy=as_messages,
        )
        b = client.create_session(
            game="leduc2p", opponent_labels=["x"], config=config, prior_mean=as_messages
        )
        assert a.game == "leduc2p"
        for session in (a, b):
            client.observe(session.session_id, hands, first_sequence=1)
        assert_matches_library(
            client,
            a.session_id,
            library("leduc2p", config, hands, prior_mean=uniform, default_strategy=uniform),
        )
        assert_matches_library(
            client, b.session_id, library("leduc2p", config, hands, prior_mean=uniform)
        )
        # A game that is no bundled one is named by its rules
        other = rules.replace("raiseSize = 2 4", "raiseSize = 2 6")
        c = client.create_session(game=other, opponent_labels=["x"], config=config)
        assert c.game.startswith("GAMEDEF") and "raiseSize = 2 6" in c.game


def test_observe_batch_is_exactly_once_and_all_or_nothing(tmp_path: Path) -> None:
    game = limit_game("leduc3p")
    hands = random_hands(game, 12, seed=2)
    config = MBBRConfig(hands_default=0, seed=1)
    with connected(tmp_path / "db.sqlite") as (client, _):
        sid = client.create_session(game="leduc3p", config=config).session_id
        assert client.observe_batch(sid, hands[:6], first_sequence=1) == 6
        # the whole batch again (a lost reply): duplicates, nothing applied twice
        assert client.observe_batch(sid, hands[:6], first_sequence=1) == 6
        # a resend overlapping new hands: the new ones are applied
        assert client.observe_batch(sid, hands[4:8], first_sequence=5) == 8
        before = client.model(sid, "opp_A", 1).strategy.probabilities
        # a gap after a good new hand: refused, and the good hand is not applied either
        gap = pb.ObserveBatchRequest(
            session_id=sid,
            observations=[observation_message(9, hands[8]), observation_message(11, hands[10])],
        )
        with pytest.raises(FailedPreconditionError, match=r"observations\[1\]\.sequence"):
            client._call("ObserveBatch", gap)
        # a resend with other content between a good resend and a new hand
        with pytest.raises(FailedPreconditionError, match=r"observations\[1\]\.sequence"):
            client.observe_batch(sid, [hands[6], hands[0], hands[8]], first_sequence=7)
        # a malformed hand after a good one
        bad = "MATCHSTATE:0:0:rc/cc:Ks||/Qs"  # round 1's betting is not over
        with pytest.raises(InvalidArgumentError) as info:
            client.observe_batch(sid, [hands[8], bad], first_sequence=9)
        assert info.value.field == "observations[1].matchstate"
        assert client.get_session(sid).hands_observed == 8
        assert (client.model(sid, "opp_A", 1).strategy.probabilities == before).all()
        assert client.observe_batch(sid, hands[8:], first_sequence=9) == 12
        assert_matches_library(client, sid, library("leduc3p", config, hands))


def test_observe_batch_size_is_bounded(tmp_path: Path) -> None:
    hands = random_hands(limit_game("leduc2p"), 5, seed=2)
    with connected(tmp_path / "db.sqlite", limits=Limits(max_batch_observations=4)) as (client, _):
        sid = client.create_session(game="leduc2p", opponent_labels=["x"]).session_id
        with pytest.raises(ResourceExhaustedError, match="observations"):
            client.observe_batch(sid, hands, first_sequence=1)
        assert client.observe_batch(sid, hands[:4], first_sequence=1) == 4


def test_bad_input_is_refused_naming_the_field(tmp_path: Path) -> None:
    rules = (GAMES_FOLDER / "leduc.limit.3p.game").read_text()
    with connected(tmp_path / "db.sqlite") as (client, _):
        create = [
            ("nonsense", "config.game"),
            (rules.replace("numPlayers = 3", "numPlayers = 0"), "config.game"),
            (rules.replace("limit", "nolimit", 1), "config.game"),
            (str(GAMES_FOLDER / "leduc.limit.3p.game"), "config.game"),  # a path is no game
        ]
        for text, field in create:
            with pytest.raises(InvalidArgumentError) as info:
                client.create_session(game=text)
            assert info.value.field == field, str(info.value)
        for config, field in [
            (MBBRConfig(safety_budget=-1.0), "config.mbbr.safety_budget"),
            (MBBRConfig(change_hazard=0.5), "config.mbbr.change_hazard"),  # out of range
        ]:
            with pytest.raises(InvalidArgumentError) as info:
                client.create_session(game="leduc3p", config=config)
            assert info.value.field == field
        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(game="leduc3p", prior_mean='{"positions": []}')
        assert info.value.field.startswith("config.mbbr.prior_mean_json")
        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(prior_mean='{"positions": []}')  # Kuhn reads JSON too
        assert info.value.field == "config.mbbr.prior_mean_json.positions"
        with pytest.raises(InvalidArgumentError) as info:
            client.create_session(game="leduc3p", prior_mean={0: {"Ks:": [0, 1, 0]}})
        assert info.value.field.startswith("config.mbbr.prior_mean[0]")

        sid = client.create_session(game="leduc3p").session_id
        observations = [
            ("MATCHSTATE:0:0:cc:Ks||", "observation.matchstate"),  # not over
            ("MATCHSTATE:0:0:rff:Kc||", "observation.matchstate"),  # not this deck
            ("MATCHSTATE:0:0:rff:Ks|Ks|", "observation.matchstate"),  # a card twice
            ("MATCHSTATE:0:0:rff:Ks|Qs|", "observation.matchstate"),  # folded card shown
            ("MATCHSTATE:0:0:rcc/ccc:Ks|Qs|/Ah", "observation.matchstate"),  # showdown hidden
            ("MATCHSTATE:0:0:rff:|Qs|", "observation.matchstate"),  # our cards missing
            ("MATCHSTATE:0:0:rff:Ks||", None),  # fine
        ]
        for i, (line, field) in enumerate(observations):
            if field is None:
                assert client.observe(sid, [line], first_sequence=1) == 1
                continue
            with pytest.raises(InvalidArgumentError) as info:
                client.observe(sid, [line], first_sequence=1)
            assert info.value.field == field, (i, str(info.value))
        kuhn_fields = random_observations(1, seed=1)[0]
        with pytest.raises(InvalidArgumentError) as info:
            client.observe(sid, [kuhn_fields], first_sequence=2)
        assert info.value.field == "observation.matchstate"
        actions = [
            "MATCHSTATE:0:0:c:Ks||",  # position 1 is to act
            "MATCHSTATE:0:0::Kc||",  # not this deck
            "MATCHSTATE:0:0:cc/:Ks||/Ks",  # the board repeats our card
            "MATCHSTATE:0:0::||",  # our card missing
            "MATCHSTATE:0:0:rff:Ks||",  # the hand is over
            "MATCHSTATE:0:0::Ks|",  # a position missing
        ]
        for line in actions:
            with pytest.raises(InvalidArgumentError) as info:
                client.action(sid, matchstate=line)
            assert info.value.field == "matchstate", (line, str(info.value))
        with pytest.raises(InvalidArgumentError) as info:
            client.action(sid, position=0, card=1)
        assert info.value.field == "matchstate"
        assert client.action(sid, matchstate="MATCHSTATE:0:0::Ks||").infostate == "Ks:"
        assert client.get_session(sid).hands_observed == 1


def test_a_kuhn_session_observes_matchstate_lines_as_its_own_fields(tmp_path: Path) -> None:
    """The MATCHSTATE line of a finished Kuhn hand is the same observation as its Kuhn fields
    (3-player Kuhn's cards J Q K A are Js Qs Ks As)."""
    kuhn = kuhn_game(3)
    hands = random_observations(30, seed=4)
    config = MBBRConfig(seed=3)
    deck = ("Js", "Qs", "Ks", "As")

    def line(obs) -> str:
        hole = tuple("" if c is None else deck[c] for c in obs.cards)
        return str(MatchState(obs.position, 0, kuhn.history_to_acpc(obs.history), hole))

    with connected(tmp_path / "db.sqlite") as (client, _):
        a = client.create_session(config=config).session_id
        b = client.create_session(config=config).session_id
        client.observe(a, hands, first_sequence=1)
        client.observe(b, [line(o) for o in hands], first_sequence=1)
        # resending a hand as its line is a duplicate of the hand sent as fields
        client.observe(a, [line(hands[-1])], first_sequence=30)
        model = kuhn_library(config, hands)
        for p in range(3):
            strategy, value = model.response(p)
            for sid in (a, b):
                got = client.response(sid, p)
                assert got.expected_value == value
                assert (got.strategy.probabilities == strategy[list(kuhn.infosets(p))]).all()
        with pytest.raises(InvalidArgumentError) as info:
            client.observe(b, ["MATCHSTATE:0:0:cc:Js||"], first_sequence=31)
        assert info.value.field == "observation.matchstate"


def test_limit_observation_messages_carry_every_kind_of_hand() -> None:
    """The client's LimitObservation -> MATCHSTATE line round-trips through the server's reader
    for folds before the board, folds after it and showdowns."""
    game = limit_game("leduc3p")
    for obs in random_hands(game, 300, seed=8):
        assert isinstance(obs, LimitObservation)
        sequence, back = observation_from_proto(compiled(game), observation_message(4, obs))
        assert (sequence, back) == (4, obs)


def test_kill_9_mid_stream_and_restart_gives_the_same_posterior(tmp_path: Path) -> None:
    """``oppmodel serve`` killed while a Leduc session's hands stream in loses no acknowledged
    hand; after a restart the rest are sent and the session answers as the library fed every
    hand (the reload restores the limit model's snapshot and replays the tail). Each server's
    first calls build the Leduc model (a fresh process: its kernels, the compiled game), which
    took over 30 s at load 10-20: the calls get the deadline of a loaded machine."""
    db = tmp_path / "db.sqlite"
    game = limit_game("leduc3p")
    hands = random_hands(game, 80, seed=21)
    config = MBBRConfig(hands_default=0, seed=9)
    # snapshots every 10 hands, so the reload goes through one
    process, port = serve_cmd.spawn(db, "--snapshot-hands", "10")
    acked: list[int] = []
    try:
        with OpponentModelClient(
            f"127.0.0.1:{port}", timeout=LOADED_SECONDS, reconnect_seconds=0
        ) as client:
            sid = client.create_session(game="leduc3p", config=config).session_id
            with client.observation_stream(sid, first_sequence=1) as stream:
                for obs in hands[:50]:
                    acked.append(stream.send(obs))
                    if len(acked) == 35:
                        process.kill()  # a crash: no shutdown, no checkpoint
                        break
    finally:
        process.kill()
        process.wait(timeout=10)
    with (
        running_server(db) as port,
        OpponentModelClient(f"127.0.0.1:{port}", timeout=LOADED_SECONDS) as client,
    ):
        held = client.get_session(sid).hands_observed  # the reload
        assert held >= acked[-1] == 35
        assert client.observe(sid, hands[held:], first_sequence=held + 1) == len(hands)
        assert_matches_library(client, sid, library("leduc3p", config, hands))


@pytest.mark.parametrize(
    ("flag", "field"),
    [(("--max-message-kb", "2048"), "default_strategy"), (("--max-message-mb", "2"), "prior_mean")],
)
def test_a_3p_leduc_strategy_of_ones_own_needs_serve_max_message_kb_or_mb(
    tmp_path: Path, flag: tuple[str, str], field: str
) -> None:
    """A 3-player Leduc strategy sent as JSON (~1.8 MB) is more than the default 256 KiB request
    limit, refused with RESOURCE_EXHAUSTED and nothing stored; ``oppmodel serve --max-message-kb
    2048`` (or ``--max-message-mb 2``) takes it, and the session then plays it as its default
    (or models the opponents with it as its prior mean)."""
    table = json.loads((GAMES_FOLDER / "leduc3p.cfr.json").read_text())
    bundled = table["positions"][0]["Ks:"]  # raises 7%
    table["positions"][0]["Ks:"] = [0.0, 0.0, 1.0]  # always raise with Ks, first to act
    strategy = json.dumps(table)
    assert len(strategy.encode()) > 256 << 10
    config = MBBRConfig(hands_default=100, seed=4)
    with connected(tmp_path / "small.sqlite") as (client, _):
        with pytest.raises(ResourceExhaustedError):
            client.create_session(game="leduc3p", config=config, **{field: strategy})
        assert client.list_sessions() == []
    process, port = serve_cmd.spawn(tmp_path / "big.sqlite", *flag)
    try:
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=30) as client:
            sid = client.create_session(
                game="leduc3p", config=config, **{field: strategy}
            ).session_id
            if field == "default_strategy":
                action = client.action(sid, matchstate="MATCHSTATE:0:0::Ks||")
                assert action.default_policy
                assert tuple(action.probabilities) == (0.0, 0.0, 1.0)
            else:  # the opponent two seats after us sits in position 0 when we sit in 1
                model = client.model(sid, "opp_B", 0).strategy.as_dict()
                assert model["Ks:"][2] > 0.9 > bundled[2]  # the given mean, lightly smoothed
    finally:
        process.terminate()
        process.wait(timeout=20)
