"""3-player limit hold'em through the service (issue 35; modeling/holdem/served_lazy.py): a
session of the bundled ``holdem3p``, its model the one the hold'em field plays (the posterior on
sets numbered as met, the response made at each decision). Driven only through the client on a
real server and checked against the same model in this process fed the same hands: GetModel
(the sets the session numbered, by name), GetModels (the models alone: no response table) and
GetAction answer as it does, before and after the
server restarts; a snapshot restored (the numbering with it) goes on as the model fed every hand.
Bad input is refused naming the field."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from acpc_support import AgentThread, run_dealer
from holdem_support import recording_style
from service_support import connected, running_server
from test_acpc_service_agent import CommandThread

from oppmodel.clients.acpc.agent import make_policy
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.games.acpc.matchstate import MatchState
from oppmodel.modeling.holdem.match import HoldemGame, play_holdem_match
from oppmodel.modeling.holdem.served_lazy import LazyHoldemServedModel, lazy_holdem_served
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

DATA = Path(__file__).parent / "data" / "acpc"
HANDS = 8
CONFIG = MBBRConfig(hands_default=3, seed=7, prior="informed", safety_budget=10.0, change_hazard=0)
LABELS = ("left", "right")


@pytest.fixture(scope="module")
def hands() -> list[LimitObservation]:
    """Seat 0's view of a seeded 3-player match (its position rotating; folds and showdowns)."""
    game = HoldemGame("holdem", read_game_def("holdem3p"))
    seats = [
        recording_style(name, 3 + k) for k, name in enumerate(["cfr", "maniac", "calling-station"])
    ]
    play_holdem_match(game, seats, game.deal_sequence(HANDS, 5))
    return seats[0].seen


def decision_lines(hands: list[LimitObservation], most: int) -> list[str]:
    """MATCHSTATE lines of our seat's decisions in the hands after the first, up to ``most``."""
    gamedef = read_game_def("holdem3p")
    lines = []
    for number, obs in enumerate(hands[1:], start=1):
        for k in range(len(obs.betting)):
            betting = obs.betting[:k]
            if obs.betting[k] == "/" or HandState.from_betting(gamedef, betting).current != (
                obs.position
            ):
                continue
            hole = tuple(h or "" if p == obs.position else "" for p, h in enumerate(obs.hole))
            board = obs.board[: betting.count("/") + 1]
            lines.append(str(MatchState(obs.position, number, betting, hole, board)))
    return lines[:most]


def library(hands: list[LimitObservation]) -> LazyHoldemServedModel:
    model = lazy_holdem_served("holdem3p").build_model(CONFIG)
    for obs in hands:
        model.observe(obs)
    return model  # type: ignore[return-value]


def _field(call) -> str:
    with pytest.raises(InvalidArgumentError) as err:
        call()
    return err.value.field


def answers(client, sid: str, lines: list[str]) -> tuple:
    models = [client.model(sid, label, q).strategy.as_dict() for label in LABELS for q in range(3)]
    actions = [client.action(sid, matchstate=line, draw=3) for line in lines]
    return models, [(a.probabilities, a.infostate) for a in actions]


def test_a_3p_holdem_session_answers_as_the_library_and_after_a_reload(tmp_path: Path, hands):
    db = tmp_path / "db.sqlite"
    lines = decision_lines(hands, 6)
    with connected(db, model_workers=0) as (client, _):
        session = client.create_session(game="holdem3p", opponent_labels=LABELS, config=CONFIG)
        assert session.game == "holdem3p"
        sid = session.session_id
        assert client.observe(sid, hands, first_sequence=1) == HANDS
        before = answers(client, sid, lines)
        assert _field(lambda: client.response(sid, 0)) == "kind"  # no table: decision by decision
        # GetModels: every model at one posterior, as GetModel answers each, and no response
        together = client.models(sid, "mean", played=True)
        assert together.responses == () and together.hands_observed == HANDS
        assert [m.strategy.as_dict() for row in together.models for m in row] == before[0]
        assert [[m.our_position for m in row] for row in together.models] == [
            [(q - offset) % 3 for q in range(3)] for offset in (1, 2)
        ]
        assert _field(lambda: client.models(sid, "median")) == "kind"
    model, game = library(hands), lazy_holdem_served("holdem3p")
    want_models = []
    for offset in (1, 2):
        for q in range(3):
            insight = model.opponent_insight((q - offset) % 3, q)
            assert insight.names
            want_models.append({name: tuple(insight.model[i]) for i, name in insight.names})
    assert before[0] == want_models
    want = [model.matchstate_action(line) for line in lines]
    assert before[1] == [(tuple(row), game.decision_string(d)) for d, row in want]
    assert any(0 < max(row) < 1 for _, row in want)  # the blueprint's mixed rows, drawn
    # a new server: the session loads from the store and answers the same
    with connected(db, model_workers=0) as (client, _):
        assert client.get_session(sid).hands_observed == HANDS
        assert answers(client, sid, lines) == before


def test_a_restored_3p_snapshot_goes_on_as_the_model_fed_every_hand(hands) -> None:
    game = lazy_holdem_served("holdem3p")
    part = library(hands[:5])
    part.mbbr.posterior.refit()  # a refit's tilts, saved with the snapshot
    whole_part = library(hands[:5])
    whole_part.mbbr.posterior.refit()
    restored = game.build_model(CONFIG)
    restored.restore(part.snapshot())  # type: ignore[union-attr]
    for obs in hands[5:]:
        restored.observe(obs)
        whole_part.observe(obs)
    mine = restored.mbbr.posterior  # type: ignore[attr-defined]
    assert mine.sets.bettings == whole_part.mbbr.posterior.sets.bettings
    for got, want in zip(mine.fits, whole_part.mbbr.posterior.fits, strict=True):
        assert np.array_equal(got.alpha, want.alpha) and np.array_equal(got.profile, want.profile)
    assert mine.log_odds == whole_part.mbbr.posterior.log_odds
    assert len(mine.sets.bettings) > len(part.mbbr.posterior.sets.bettings)  # numbered on


def test_bad_3p_input_is_refused_naming_the_field(tmp_path: Path, hands) -> None:
    with connected(tmp_path / "db.sqlite", model_workers=0) as (client, _):
        one = lambda: client.create_session(game="holdem3p", opponent_labels=("a",), config=CONFIG)  # noqa: E731
        assert _field(one) == "config.opponent_labels"
        budget = dataclasses.replace(CONFIG, prior="mixture")
        create = lambda: client.create_session(  # noqa: E731
            game="holdem3p", opponent_labels=LABELS, config=budget
        )
        assert _field(create) == "config.mbbr.prior"
        sid = client.create_session(
            game="holdem3p", opponent_labels=LABELS, config=CONFIG
        ).session_id
        obs = hands[0]
        good = str(
            MatchState(obs.position, 0, obs.betting, tuple(h or "" for h in obs.hole), obs.board)
        )
        for bad in (
            good.replace(obs.betting, obs.betting + "r", 1),  # a betting past the hand's end
            good.replace(obs.hole[obs.position] or "", "AsAs", 1),  # one card twice
            good.rsplit("/", 1)[0],  # a board short of its round
            good.replace("MATCHSTATE:", "MATCHSTATE:7:", 1),  # no such position
        ):
            assert _field(lambda b=bad: client.observe(sid, [b], first_sequence=1)) == (
                "observation.matchstate"
            ), bad
        assert client.observe(sid, [good], first_sequence=1) == 1
        line = decision_lines(hands, 1)[0]
        head, cards = line.rsplit(":", 1)
        ours = cards.split("/")[0].strip("|")
        for hole in ("AsAs", "As", "Zz9s"):
            bad = f"{head}:{cards.replace(ours, hole, 1)}"
            assert _field(lambda b=bad: client.action(sid, matchstate=b)) == "matchstate"


def test_acpc_agent_plays_3p_holdem_mbbr_through_the_service(tmp_path: Path, capsys) -> None:
    """``acpc-agent --service`` on the 3-player hold'em game file against the project's dealer
    and two panel seats: every decision by the service, the session a holdem3p one holding every
    hand the seat saw."""
    game_file = DATA / "holdem.limit.3p.game"
    game = read_game_def(game_file)
    commands: list[CommandThread] = []
    with running_server(tmp_path / "s.sqlite", model_workers=0) as port:

        def start(ports: tuple[int, ...]) -> list:
            argv = [str(game_file), "127.0.0.1", str(ports[0]), "--service", f"127.0.0.1:{port}"]
            argv += ["--seed", "3", "--mbbr-h", "2", "--json", "--rpc-deadline-ms", "120000"]
            argv += ["--service-wait", "300"]
            commands.append(CommandThread(argv))
            others = [
                AgentThread(ports[k], make_policy(name, game, k), game)
                for k, name in ((1, "calling-station"), (2, "maniac"))
            ]
            return [commands[0], *others]

        captured, _ = run_dealer(
            tmp_path, hands=4, game=game, clients=start, quiet=True, game_file=game_file.name
        )
        out, err = capsys.readouterr()
        assert commands[0].status == 0, err
        tally = json.loads(out)
        assert tally["session_id"], (tally, err[-3000:])
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=60) as client:
            session = client.get_session(tally["session_id"])
    assert captured.result.status == 0
    assert tally["hands"] == 4
    assert tally["fallback_decisions"] == 0 and tally["service_decisions"] == tally["actions"] > 0
    assert session.game == "holdem3p" and session.hands_observed == 4


def test_a_snapshot_after_a_renumbering_restores_it_and_goes_on_alike(hands) -> None:
    game = lazy_holdem_served("holdem3p")
    part = library(hands[:6])
    posterior = part.mbbr.posterior
    posterior.window, posterior.bound = 1, 1.0  # a small window: the bound drops nodes
    posterior.refit()
    assert posterior.sets.renumbered == 1
    assert any(kept.bettings for row in posterior.dropped for kept in row)
    restored = game.build_model(CONFIG)
    restored.mbbr.posterior.window = 1  # type: ignore[attr-defined]  # (the snapshot's identity)
    restored.restore(part.snapshot())  # type: ignore[union-attr]
    mine = restored.mbbr.posterior  # type: ignore[attr-defined]
    mine.window, mine.bound = 1, 1.0
    assert mine.sets.bettings == posterior.sets.bettings
    _same_dropped(mine, posterior)
    kept = {b for row in posterior.dropped for store in row for b in store.bettings}
    for model in (part, restored):
        for obs in hands[6:]:
            model.observe(obs)
        model.mbbr.posterior.refit()  # type: ignore[attr-defined]
    assert mine.sets.bettings == posterior.sets.bettings
    for got, want in zip(mine.fits, posterior.fits, strict=True):
        assert np.array_equal(got.alpha, want.alpha) and np.array_equal(got.profile, want.profile)
    assert mine.log_odds == posterior.log_odds
    _same_dropped(mine, posterior)
    assert any(mine.sets.numbered(b) for b in kept)  # a kept node met again, restored alike


def _same_dropped(mine, theirs) -> None:
    """The same counts of dropped nodes, kept whole and archived, bit for bit."""
    for row, other in zip(mine.archives, theirs.archives, strict=True):
        for got, want in zip(row, other, strict=True):
            assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    for row, other in zip(mine.dropped, theirs.dropped, strict=True):
        for got, want in zip(row, other, strict=True):
            assert got.bettings == want.bettings
            for name, a in got.arrays().items():
                assert np.array_equal(a, want.arrays()[name]), name
