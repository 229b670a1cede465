"""Offline replay of Leduc logs: the decisions and their information sets, the hidden-card
marginal against brute-force Bayes, and the real logs' reports (both Leduc logs)."""

from __future__ import annotations

import io
import itertools
import json
import math
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from acpc_support import DATA, replay_command_json

from oppmodel.clients.acpc.log import read_log
from oppmodel.clients.acpc.replay import LocalModels, replay
from oppmodel.clients.acpc.replay_games import LimitReplay
from oppmodel.clients.acpc.replay_report import HIDDEN_METHODS, format_report
from oppmodel.clients.cli import main
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.observation import LimitObservation

LOGS = {name: DATA / f"{name}-seed42-example-players.log" for name in ("leduc2p", "leduc3p")}
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
    rules = LimitReplay(game)
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
    rules = LimitReplay(game)
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


@pytest.mark.parametrize("name", sorted(LOGS))
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


def test_the_command_finds_the_game_in_the_log_header_and_refuses_the_service(
    tmp_path: Path,
) -> None:
    data, png = replay_command_json(read_log(LOGS["leduc3p"]), 60, "Bob", tmp_path)
    small = tmp_path / "small.log"
    assert data["hands"] == 60 and set(data["overall"]) == {"prior", "counts", "mbbr"}
    assert data["mbbr"]["prior"] == "mixture"  # the replay's prior in a limit game
    assert [r["round"] for r in data["rounds"]] == [0, 1]
    assert any(key.startswith("Ks/") for key in data["opponents"][0]["model"])  # Leduc strings
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    argv = ["replay", str(small), "--as", "Bob", "--game", "leduc3p"]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(argv) == 0
    assert "round 1" in out.getvalue()
    assert main([*argv, "--service", "127.0.0.1:1"]) == 2  # the service speaks Kuhn only
    assert main([*argv[:-1], "kuhn3p"]) == 2  # Leduc betting is no Kuhn hand
    out = io.StringIO()
    with redirect_stdout(out):
        assert main([*argv, "--json", "--mbbr-prior", "informed"]) == 0
    assert json.loads(out.getvalue())["mbbr"]["prior"] == "informed"  # asked for
