"""Spades match protocol: seatings, seeded games, table statistics, and the spades-match command."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from scipy import stats

from oppmodel.clients.commands import spades_cmd
from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.games.spades.scoring import UtilityModel
from oppmodel.modeling.perfect_info import spades_agents as A
from oppmodel.modeling.perfect_info import spades_match as M


def test_seatings_are_paper_table_3():
    assert len(set(M.SEATINGS)) == 6
    assert all("A" in s and "B" in s for s in M.SEATINGS)
    # each type fills half of the 18 seats, so equal players win 50% in expectation
    assert sum(s.count("A") for s in M.SEATINGS) == 9
    assert M.seating_types("ABB", "mOT_p", "MT_MT") == ("mOT_p", "MT_MT", "MT_MT")


def test_wrong_and_correct_models():
    assert M.wrong_and_correct_maxn("MT_mOT") == ("mOT_mOT", "mOT_MT")
    assert M.wrong_and_correct_maxn("mOT_MT") == ("mOT_MT", "mOT_mOT")
    assert A.true_model("MT_mOT") == UtilityModel.MT and A.true_model("mOT_pl") == UtilityModel.MOT
    with pytest.raises(InvalidArgumentError, match="player_type"):
        A.make_agent("MT_X")


def _game(types, seed):
    agents = [A.make_agent(t, seed=i) for i, t in enumerate(types)]
    return M.play_game(agents, seed=seed, sequence=0, hand_size=3, target=60)


def test_games_are_seeded_and_end_at_target():
    types = ("mOT_g", "MT_MT", "mOT_pl")
    a = _game(types, seed=3)
    b = _game(types, seed=3)
    assert a == b
    assert max(a.scores) >= 60 and a.hands >= 1
    assert sum(a.win_shares) == pytest.approx(1.0)
    assert a.win_shares[int(np.argmax(a.scores))] > 0
    # the learner (seat 2) ends with a distribution over {MT, mOT} for every seat
    assert a.learned[0] is None and a.learned[1] is None
    learned = np.array(a.learned[2])
    assert np.allclose(learned.sum(axis=1), 1.0) and np.all(learned >= 0)


def test_learning_agent_collects_one_likelihood_per_opponent_card():
    learner = A.ProbMaxnAgent("mOT_pl", seed=1)
    agents = [A.make_agent("MT_MT"), learner, A.make_agent("mOT_mOT")]
    rec = M.play_game(agents, seed=9, sequence=0, hand_size=3, target=1)  # one hand
    assert rec.hands == 1
    assert {p: len(v) for p, v in learner.record.likelihoods.items()} == {0: 3, 2: 3}
    for liks in learner.record.likelihoods.values():
        assert all(np.all(v > 0) and np.all(v <= 1) for v in liks)


def _record(types, scores, shares):
    return M.GameRecord(
        types=types, scores=scores, bags=(0, 0, 0), win_shares=shares, hands=10,
        learned=(None, None, None),
    )  # fmt: skip


def test_summary_statistics_known_answer():
    a, b = "mOT_p", "MT_MT"

    def winner(seating: str, k: int) -> int:
        # sequence 0: an A seat wins every game; 1: seat 2 wins (A there in 3 of 6); 2: a B seat
        return seating.index("A") if k == 0 else 2 if k == 1 else seating.index("B")

    seqs = []
    for k in range(3):
        games = []
        for seating in M.SEATINGS:
            shares = tuple(1.0 if i == winner(seating, k) else 0.0 for i in range(3))
            scores = tuple(100 + 10 * i + k for i in range(3))
            games.append(_record(M.seating_types(seating, a, b), scores, shares))
        seqs.append(games)
    s = M.summarise(a, b, seqs)
    t = stats.t.ppf(0.975, 2)
    assert s.win_pct_a.mean == pytest.approx(50.0)
    assert s.win_pct_a.half_width == pytest.approx(t * 50.0 / np.sqrt(3))
    # A's scores: seat i scores 100 + 10 i + k; A sits in seats 0, 1, 2 three times each
    assert s.score_a.mean == pytest.approx(110 + 1)
    assert s.score_a.half_width == pytest.approx(t * 1.0 / np.sqrt(3))
    assert s.games == 18 and s.sequences == 3 and s.learned_pairs == 0


def test_run_match_validates_and_is_independent_of_jobs():
    with pytest.raises(InvalidArgumentError, match="pairs"):
        M.run_match([("MT_MT", "MT_MT")], sequences=1, seed=0)
    with pytest.raises(InvalidArgumentError, match="sequences"):
        M.run_match([("mOT_p", "MT_MT")], sequences=0, seed=0)
    with pytest.raises(InvalidArgumentError, match="hand_size"):
        M.run_match([("mOT_g", "MT_MT")], sequences=1, seed=0, hand_size=8)
    one = M.run_match([("mOT_p", "MT_MT")], sequences=2, seed=4, hand_size=2, target=30)
    two = M.run_match([("mOT_p", "MT_MT")], sequences=2, seed=4, hand_size=2, target=30, jobs=2)
    assert one.games == two.games
    assert one.win_pcts("MT_MT", "MT_MT").tolist() == [50.0, 50.0]


def test_spades_match_command_json(capsys):
    parser = argparse.ArgumentParser()
    spades_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "spades-match", "--deal-sequences", "2", "--hand-size", "2", "--target", "30",
            "--candidates", "mOT_p,mOT_MT", "--opponents", "MT_mOT", "--json",
        ]
    )  # fmt: skip
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {(r["a"], r["b"]): r for r in out["experiments"]}
    assert set(rows) == {("mOT_p", "MT_mOT"), ("mOT_MT", "MT_mOT")}
    row = rows[("mOT_p", "MT_mOT")]
    assert row["games"] == 12 and 0 <= row["win_pct_a"][0] <= 100
    # %Loss needs mOT_MT v. MT_mOT (present); %Gain needs mOT_mOT v. MT_mOT (absent)
    assert "gain_pct" not in row and "loss_pct" in row
    loss = rows[("mOT_MT", "MT_mOT")]["win_pct_a"][0] - row["win_pct_a"][0]
    assert row["loss_pct"][0] == pytest.approx(loss)
    with pytest.raises(SystemExit):
        parser.parse_args(["spades-match", "--candidates", "nope"])


def test_spades_match_text_explains_every_column(capsys):
    parser = argparse.ArgumentParser()
    spades_cmd.register(parser.add_subparsers())
    args = parser.parse_args(
        [
            "spades-match", "--deal-sequences", "2", "--hand-size", "2", "--target", "30",
            "--candidates", "mOT_p,mOT_MT,mOT_mOT", "--opponents", "MT_mOT",
        ]
    )  # fmt: skip
    assert args.func(args) == 0
    lines = capsys.readouterr().out.splitlines()
    head = next(line for line in lines if line.startswith("A v. B"))
    columns = ["Score A", "Score B", "%Win A", "hands", "%Gain", "%Loss"]
    assert [c for c in columns if c in head] == columns
    legend = [line.strip() for line in lines[: lines.index(head)] if line.startswith("  ")]
    assert [line.split(":")[0] for line in legend] == columns  # each column, explained
    assert all(len(line.split(":", 1)[1].split()) > 2 for line in legend)
