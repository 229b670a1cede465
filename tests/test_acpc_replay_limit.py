"""Offline replay of limit games' logs (Leduc's and Kuhn's: one path): the decisions and their
information sets, the hidden-card marginal against brute-force Bayes, the real logs' reports (both
Leduc logs), and the service's replay equal to the library's."""

from __future__ import annotations

import dataclasses
import io
import itertools
import json
import math
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from acpc_support import DATA, replay_command_json
from service_support import connected, running_server

from oppmodel.clients.acpc.log import DealerLog, format_log, read_log
from oppmodel.clients.acpc.replay import LocalModels, ModelSource, ServiceModels, replay
from oppmodel.clients.acpc.replay_games import ReplayGame
from oppmodel.clients.acpc.replay_report import HIDDEN_METHODS, format_report
from oppmodel.clients.cli import main
from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

NAMES = ("kuhn3p", "leduc2p", "leduc3p")
LOGS = {name: DATA / f"{name}-seed42-example-players.log" for name in NAMES}
CONFIG = MBBRConfig(seed=2)


def local(game):
    return lambda labels: LocalModels(game, CONFIG)


def opponent_actions(game, hand, viewer):
    """(position, round, betting before, action code) of every opponent action, from the dealer's
    own betting replay (independent of the replay's tree walk)."""
    state = HandState(game.gamedef)
    out = []
    for letter in hand.betting:
        if letter == "/":
            continue
        if state.current != viewer:
            out.append((state.current, state.round, state.betting, "fcr".index(letter)))
        state.apply(letter)
    return out


@pytest.mark.parametrize("name", sorted(LOGS))
def test_every_opponent_decision_is_listed_with_the_information_set_its_shown_cards_give(
    name: str,
) -> None:
    game = limit_game(name)
    rules = ReplayGame(game)
    shown = hidden = 0
    for hand in read_log(LOGS[name]).hands[:400]:
        for viewer in range(game.num_players):
            obs = rules.observation(hand, viewer)
            decisions = rules.decisions(hand, obs)
            truth = opponent_actions(game, hand, viewer)
            assert [(d.position, d.round, d.history, d.action) for d in decisions] == truth
            for dec in decisions:
                cards = obs.hole[dec.position]
                if cards is None:
                    assert dec.infoset is None
                    hidden += 1
                    continue
                shown += 1
                board = obs.board[: dec.round + 1]
                key = game.infostate(cards, board, dec.history)
                assert dec.infoset == game.infoset_from_string(dec.position, key)
    assert shown > 100 and hidden > 100  # both kinds were exercised


def brute_force_marginal(game, models, obs: LimitObservation, decisions, i) -> np.ndarray:
    """P(action) of ``decisions[i]`` by enumerating every assignment of the cards our seat did
    not see by then (the opponents' holes; the board only as far as that round), weighting each
    by the opponents' earlier actions under the models, information sets named by string."""
    dec = decisions[i]
    deck = [c for c in game.deck if c != obs.hole[obs.position]]
    free = [c for c in deck if c not in obs.board[1 : dec.round + 1]]
    opponents = [q for q in range(game.num_players) if q != obs.position]
    total = np.zeros(3)
    for cards in itertools.permutations(free, len(opponents)):
        hole = dict(zip(opponents, cards, strict=True))
        weight = 1.0
        for earlier in decisions[:i]:
            key = game.infostate(
                hole[earlier.position], obs.board[: earlier.round + 1], earlier.history
            )
            infoset = game.infoset_from_string(earlier.position, key)
            weight *= models[earlier.position][infoset, earlier.action]
        key = game.infostate(hole[dec.position], obs.board[: dec.round + 1], dec.history)
        total += weight * models[dec.position][game.infoset_from_string(dec.position, key)]
    return total / total.sum()


@pytest.mark.parametrize("name", sorted(LOGS))
def test_the_hidden_card_prediction_is_brute_force_bayes_over_the_unseen_cards(name: str) -> None:
    game = limit_game(name)
    rules = ReplayGame(game)
    rng = np.random.default_rng(7)
    n = game.num_players
    models = {q: rng.dirichlet([1.0, 1.0, 1.0], size=game.num_infosets) for q in range(n)}
    models = {q: np.where(game.legal_mask[q], m, 0.0) for q, m in models.items()}
    models = {q: m / m.sum(axis=1, keepdims=True) for q, m in models.items()}
    checked = 0
    for hand in read_log(LOGS[name]).hands[:150]:
        for viewer in range(game.num_players):
            obs = rules.observation(hand, viewer)
            decisions = rules.decisions(hand, obs)
            for i, dec in enumerate(decisions):
                if dec.infoset is not None:
                    continue
                mine = {q: models[q] for q in range(game.num_players) if q != viewer}
                expected = brute_force_marginal(game, mine, obs, decisions, i)
                got = rules.hidden_prediction(mine, obs, decisions, i)
                np.testing.assert_allclose(got, expected, rtol=0, atol=1e-12)
                checked += 1
    assert checked > 50


@pytest.mark.parametrize("name", ["leduc2p", "leduc3p"])
def test_the_real_leduc_logs_replay_with_sane_numbers_on_the_same_actions(name: str) -> None:
    game = limit_game(name)
    hands = read_log(LOGS[name]).hands[:300]
    report = replay(game, hands, "Alice", local(game), config=CONFIG)
    assert report.hands == 300 and report.methods == ("prior", "counts", "mbbr")
    scored = unscored = 0
    for hand in hands:
        for position, *_ in opponent_actions(game, hand, hand.names.index("Alice")):
            state = HandState.from_betting(game.gamedef, hand.betting)
            shown = state.showdown() and not state.folded[position]
            scored, unscored = scored + shown, unscored + (not shown)
    assert (report.scored_decisions, report.unscored_decisions) == (scored, unscored)
    assert report.every["mbbr"].decisions == scored + unscored
    # the end of the log: its last third of hands
    late = sum(len(opponent_actions(game, h, h.names.index("Alice"))) for h in hands[200:])
    assert (report.late_hands, report.late_every["mbbr"].decisions) == (100, late)
    assert 0 < report.late["mbbr"].decisions < late
    for scores in (*report.rounds, *report.every_rounds):
        assert len({score.decisions for score in scores.values()}) == 1  # the same actions
    assert sum(r["mbbr"].decisions for r in report.rounds) == scored
    assert sum(r["mbbr"].decisions for r in report.every_rounds) == scored + unscored
    for scores in (report.overall, report.every, *report.rounds, *report.every_rounds):
        for score in scores.values():
            assert math.isfinite(score.log_loss) and score.log_loss > 0
            assert 0.0 <= score.accuracy <= 1.0
    # the every-decision mean is the decision-weighted mean of its two parts
    for m in HIDDEN_METHODS:
        parts = report.overall[m].log_loss * scored + report.hidden[m].log_loss * unscored
        assert report.every[m].log_loss == pytest.approx(parts / (scored + unscored))
        assert report.every_curve.log_loss[m][-1] == pytest.approx(report.every[m].log_loss)
        assert report.curve.log_loss[m][-1] == pytest.approx(report.overall[m].log_loss)
    for row in report.opponents:
        assert len(row.model) == len(game.infosets(row.position))
        assert all(abs(sum(p) - 1) < 1e-9 for p in row.model.values())
    text = format_report(report)
    assert "round 1" in text and "every opponent decision" in text


def test_before_any_hand_mbbr_predicts_exactly_like_the_prior() -> None:
    game = limit_game("leduc2p")
    hand = next(h for h in read_log(LOGS["leduc2p"]).hands if h.betting.count("r") == 0)
    report = replay(game, [hand], "Alice", local(game), config=CONFIG)
    assert report.scored_decisions >= 1
    assert report.overall["mbbr"] == report.overall["prior"]
    # nothing seen: the counts are uniform over the legal actions (check or bet)
    assert report.overall["counts"].log_loss == pytest.approx(math.log(2))


def test_the_command_finds_the_game_in_the_log_header(tmp_path: Path) -> None:
    data, png = replay_command_json(read_log(LOGS["leduc3p"]), 60, "Bob", tmp_path, "--local")
    small = tmp_path / "small.log"
    assert data["hands"] == 60 and set(data["overall"]) == {"prior", "counts", "mbbr"}
    assert data["mbbr"]["prior"] == "mixture"  # the replay's prior in a limit game
    assert [r["round"] for r in data["rounds"]] == [0, 1]
    assert any(key.startswith("Ks/") for key in data["opponents"][0]["model"])  # Leduc strings
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    argv = ["replay", str(small), "--as", "Bob", "--game", "leduc3p", "--local"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    assert "round 1" in out.getvalue()
    assert main([*argv[:-2], "kuhn3p"]) == 2  # Leduc betting is no Kuhn hand
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--json", "--mbbr-prior", "informed"]) == 0
    assert json.loads(out.getvalue())["mbbr"]["prior"] == "informed"  # asked for


class Recorded:
    """A model source that keeps every model it hands the replay: (offset, position, table,
    spread), in order, i.e. the model of each opponent before each hand."""

    def __init__(self, source: ModelSource, models: list) -> None:
        self.source, self.models = source, models
        self.session_id = getattr(source, "session_id", None)

    def observe(self, observations) -> None:
        self.source.observe(observations)

    def model(self, offset: int, opponent_position: int) -> tuple[np.ndarray, float]:
        table, spread = self.source.model(offset, opponent_position)
        self.models.append((offset, opponent_position, table, spread))
        return table, spread

    def close(self) -> None:
        self.source.close()


@pytest.mark.parametrize(("name", "count"), [("leduc2p", 300), ("leduc3p", 30)])
def test_through_a_real_server_the_replay_gets_the_librarys_models_before_every_hand(
    name: str, count: int, tmp_path: Path
) -> None:
    """A Leduc session on a server on 127.0.0.1, fed the seat's hands as MATCHSTATE lines, gives
    the library's models bit for bit before every hand, and so the same report. The session
    runs the replay's config, change hazard included: a limit session sent none detects no
    changes (the models would part once the library found one)."""
    game = limit_game(name)
    hands = read_log(LOGS[name]).hands[:count]
    config = dataclasses.replace(CONFIG, prior="mixture")  # the command's prior in a limit game
    served: list = []
    library: list = []
    with connected(tmp_path / "s.sqlite", synchronous="NORMAL") as (client, _):

        def service(labels: tuple[str, ...]) -> ModelSource:
            models = ServiceModels(
                client, game, config=config, our_label="Bob", opponent_labels=labels
            )
            return Recorded(models, served)

        report = replay(game, hands, "Bob", service, config=config)
        session = client.get_session(report.session_id)
    assert session.config == config and config.change_hazard > 0
    assert session.hands_observed == count
    mine = replay(
        game, hands, "Bob", lambda labels: Recorded(LocalModels(game, config), library),
        config=config,
    )  # fmt: skip
    n = game.num_players
    assert len(served) == len(library) > (n - 1) * count // 2  # a model per opponent and hand
    for (d, q, got, spread), (d_local, q_local, want, spread_local) in zip(
        served, library, strict=True
    ):
        assert (d, q) == (d_local, q_local)
        rows = list(game.infosets(q))
        assert np.array_equal(got[rows], want[rows]) and spread == spread_local
    assert report.every["mbbr"].decisions > 0
    served_json, library_json = report.as_json(), mine.as_json()
    assert served_json.pop("session_id") == report.session_id
    assert library_json.pop("session_id") is None
    assert served_json == library_json


def test_the_command_replays_leduc_through_the_service_in_process_or_at_an_address(
    tmp_path: Path,
) -> None:
    """``oppmodel replay`` of a Leduc log: the in-process service (``--in-process``), a running
    one (``--service``) and the library (``--local``, the default in limit games) print the same
    report."""
    log = read_log(LOGS["leduc2p"])
    small = tmp_path / "small.log"
    small.write_text(format_log(DealerLog((log.header, *log.hands[:150]))))
    argv = ["replay", str(small), "--as", "Alice", "--json"]

    def printed(*options: str) -> dict:
        out = io.StringIO()
        with redirect_stdout(out):
            assert main([*argv, *options]) == 0
        data = json.loads(out.getvalue())
        del data["seconds"]
        return data

    library = printed("--local")
    assert library.pop("session_id") is None and library["hands"] == 150
    assert printed() == {**library, "session_id": None}  # the default in a limit game
    with running_server(tmp_path / "s.sqlite", synchronous="NORMAL") as port:
        running = printed("--service", f"127.0.0.1:{port}")
        with OpponentModelClient(f"127.0.0.1:{port}", timeout=10) as client:
            session = client.get_session(running.pop("session_id"))
    assert session.game == "leduc2p" and session.hands_observed == 150
    in_process = printed("--in-process")
    assert in_process.pop("session_id") is not None
    assert running == in_process == library
