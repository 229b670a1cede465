"""Offline replay of the Kuhn log (the compiled ``kuhn3p``, the one replay path of every limit
game): nothing hidden reaches the service, the service path equals the library path, and the real
log's report is sane, naive Bayes included."""

from __future__ import annotations

import io
import json
import math
import sqlite3
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np
import pytest
from acpc_support import DATA, GAME, replay_command_json
from service_support import connected

from oppmodel.clients.acpc.log import LoggedHand, read_log
from oppmodel.clients.acpc.replay import LocalModels, ServiceModels, replay, seat_offsets
from oppmodel.clients.acpc.replay_games import OpponentDecision
from oppmodel.clients.acpc.replay_report import METHODS, column_legend, format_report
from oppmodel.clients.acpc.replay_scoring import Prediction
from oppmodel.clients.cli import main
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.acpc.betting import HandState
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.mbbr.config import MBBRConfig

LOG = read_log(DATA / "kuhn3p-seed42-example-players.log")
CONFIG = MBBRConfig(k=8, seed=3, posterior="samples")  # the ESS checks below are the samples'
KUHN = limit_game("kuhn3p")  # the log's game, compiled


def visible_to(hand: LoggedHand, viewer: int) -> list[str | None]:
    """What the dealer shows ``viewer`` at the end of ``hand``, worked out with the dealer's own
    betting replay (independent of the modeling core's visibility rule)."""
    state = HandState.from_betting(GAME, hand.betting)
    showdown = state.folded.count(False) >= 2
    return [
        card if (p == viewer or (showdown and not state.folded[p])) else None
        for p, card in enumerate(hand.hole)
    ]


def local(labels: tuple[str, ...]) -> LocalModels:
    return LocalModels(KUHN, CONFIG)


def test_no_hidden_card_reaches_the_service_and_its_replay_equals_the_librarys(
    tmp_path: Path,
) -> None:
    hands = LOG.hands[:240]
    db = tmp_path / "replay.sqlite"
    with connected(db, synchronous="NORMAL") as (client, _):

        def service(labels: tuple[str, ...]) -> ServiceModels:
            return ServiceModels(
                client, KUHN, config=CONFIG, our_label="Carol", opponent_labels=labels
            )

        report = replay(KUHN, hands, "Carol", service, config=CONFIG)
    with sqlite3.connect(db) as conn:
        stored = conn.execute(
            "SELECT position, history, cards FROM observations WHERE session_id = ?"
            " ORDER BY sequence",
            (report.session_id,),
        ).fetchall()
    assert len(stored) == len(hands)
    hidden_opponent_cards = 0
    for hand, (position, history, cards) in zip(hands, stored, strict=True):
        assert position == hand.names.index("Carol")
        assert history == hand.betting  # a kuhn3p session: ACPC betting, cards as dealt
        expected = visible_to(hand, position)
        assert json.loads(cards) == [*expected, ""]  # and the (empty) board
        hidden_opponent_cards += expected.count(None)
    assert hidden_opponent_cards >= 20  # folds and uncontested pots were really exercised

    # the same replay with the library in-process gives the same numbers and models
    mine = replay(KUHN, hands, "Carol", local, config=CONFIG)
    for a, b in zip(report.opponents, mine.opponents, strict=True):
        assert (a.opponent, a.position) == (b.opponent, b.position)
        for m in METHODS:
            assert a.scores[m].decisions == b.scores[m].decisions
            assert a.scores[m].log_loss == pytest.approx(b.scores[m].log_loss, abs=1e-12)
            assert a.scores[m].accuracy == b.scores[m].accuracy
        assert np.allclose(list(a.model.values()), list(b.model.values()), atol=1e-12)
        assert a.effective_sample_size == pytest.approx(b.effective_sample_size, rel=1e-12)


def test_the_real_log_replays_completely_with_sane_numbers_on_the_same_actions() -> None:
    report = replay(KUHN, LOG.hands, "Alice", local, config=CONFIG)
    assert report.hands == 3000
    # every opponent decision is either scored (card shown at a showdown) or counted as not
    scored = unscored = 0
    for hand in LOG.hands:
        viewer = hand.names.index("Alice")
        cards = visible_to(hand, viewer)
        state = HandState(GAME)
        for action in hand.betting:
            if state.current != viewer:
                if cards[state.current] is None:
                    unscored += 1
                else:
                    scored += 1
            state.apply(action)
    assert (report.scored_decisions, report.unscored_decisions) == (scored, unscored)
    assert sum(r.scores["mbbr"].decisions for r in report.opponents) == scored
    for row in (*report.opponents, None):
        scores = report.overall if row is None else row.scores
        counts = {scores[m].decisions for m in METHODS}
        assert len(counts) == 1  # every method scored on exactly the same actions
        for m in METHODS:
            assert math.isfinite(scores[m].log_loss) and scores[m].log_loss > 0
            assert 0.0 <= scores[m].accuracy <= 1.0
    for m in ("prior", "mbbr"):  # decisions whose card stayed hidden: marginal predictions
        assert report.hidden[m].decisions == unscored
        assert math.isfinite(report.hidden[m].log_loss) and 0 <= report.hidden[m].accuracy <= 1
    # the curves end at the overall means
    for m in METHODS:
        assert report.curve.log_loss[m][-1] == pytest.approx(report.overall[m].log_loss)
        assert report.curve.accuracy[m][-1] == pytest.approx(report.overall[m].accuracy)
    # learning helps: the example players' frequencies beat the (N3-centred) prior
    assert report.overall["counts"].log_loss < report.overall["prior"].log_loss
    for row in report.opponents:
        assert set(row.model) == {
            KUHN.infoset_string(row.position, i) for i in KUHN.infosets(row.position)
        }
        assert all(abs(sum(p) - 1) < 1e-9 for p in row.model.values())
        assert 1.0 <= row.effective_sample_size <= CONFIG.k


def test_before_any_hand_mbbr_predicts_exactly_like_the_prior() -> None:
    first = next(h for h in LOG.hands if h.names.index("Bob") == 0 and h.betting == "ccc")
    report = replay(KUHN, [first], "Bob", local, config=CONFIG)
    assert report.scored_decisions == 2
    assert report.overall["mbbr"] == report.overall["prior"]
    assert report.overall["counts"].log_loss == pytest.approx(math.log(2))


def test_a_tie_broken_only_by_rounding_goes_to_the_lowest_action() -> None:
    """Accuracy counts a tie as the lowest action code; a marginal summed in another order may
    part a tie by an ulp, which must not decide it (the Kuhn and limit paths' sums differ so)."""
    check = OpponentDecision(1, 0, None, None, "", 1, 0)  # a check: call, not raise
    half = 0.5 * (1 - 1e-16)
    predicted = {"prior": np.array([0.0, half, 1 - half]), "mbbr": np.array([0.0, 0.3, 0.7])}
    assert predicted["prior"][2] > predicted["prior"][1]  # parted by rounding alone
    scored = Prediction.scored(hand=0, offset=1, dec=check, predicted=predicted)
    assert scored.correct == {"prior": True, "mbbr": False}


def test_a_log_whose_seat_order_changes_is_refused() -> None:
    a = LoggedHand(0, "ccc", ("Js", "Qs", "Ks"), (), (-1, -1, 2), ("A", "B", "C"))
    b = LoggedHand(1, "ccc", ("Js", "Qs", "Ks"), (), (-1, -1, 2), ("A", "C", "B"))
    assert seat_offsets([a], "A") == ("B", "C")
    with pytest.raises(InvalidArgumentError, match="seat order"):
        seat_offsets([a, b], "A")
    with pytest.raises(InvalidArgumentError, match="played no hand"):
        seat_offsets([a], "Z")


def test_the_command_prints_json_and_a_table_and_draws_the_curves(tmp_path: Path) -> None:
    data, png = replay_command_json(LOG, 150, "Bob", tmp_path)
    small = tmp_path / "small.log"
    assert data["hands"] == 150 and data["name"] == "Bob"
    assert data["posterior"] == data["mbbr"]["posterior"] == "dirichlet"  # the default
    assert data["mbbr"]["prior"] == "tilted"  # Kuhn's default (limit games: the mixture)
    assert {r["opponent"] for r in data["opponents"]} == {"Alice", "Carol"}
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = io.StringIO()
    with redirect_stdout(out):
        argv = ["replay", str(small), "--as", "Bob", "--local"]
        assert main([*argv, "--mbbr-posterior", "samples", "--mbbr-k", "4"]) == 0
    text = out.getvalue()
    assert "mean log-loss" in text and "naive-bayes" in text and "Carol @ 2" in text
    assert "MBBR with the samples posterior (Ganzfried et al. 2024): k=4" in text
    assert main(["replay", str(small), "--as", "Nobody", "--local"]) == 2


@pytest.mark.parametrize(("posterior", "spread"), [("dirichlet", "conc"), ("samples", "ESS")])
def test_the_report_names_its_posterior_and_explains_every_column(
    posterior: str, spread: str
) -> None:
    config = MBBRConfig(posterior=posterior, seed=1)
    report = replay(KUHN, LOG.hands[:60], "Bob", lambda _: LocalModels(KUHN, config), config=config)
    text = format_report(report)
    assert f"MBBR with the {posterior} posterior" in text
    headers = text.splitlines()[4].replace("|", " ").split()
    assert headers[-1] == spread
    headers += ["mean log-loss (nats)", "accuracy"]  # the group headers of the line below
    legend = column_legend(config)
    assert set(headers) == set(legend)  # every column explained, nothing else
    block = text[text.index("columns:\n") :].splitlines()[1 : len(legend) + 1]
    for line, (name, meaning) in zip(block, legend.items(), strict=True):
        assert line.split(None, 1)[0] == name.split()[0] and line.endswith(meaning)
    data = report.as_json()
    assert data["posterior"] == posterior and data["columns"] == legend
    json.dumps(data)  # serialisable as it stands
