"""``oppmodel eval`` end to end through oppmodel.clients.cli.main."""

from __future__ import annotations

import json
from fractions import Fraction

import numpy as np
import pytest

from oppmodel.clients.cli import main
from oppmodel.clients.commands.eval_cmd import exact_fraction
from oppmodel.modeling.games.kuhn import kuhn_game
from oppmodel.modeling.games.kuhn3p import n2_as_printed, robust_profile
from oppmodel.modeling.strategy import save_profile, save_strategy


def _run_json(capsys, *argv: str) -> dict:
    assert main(["eval", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(
    ("name", "exact"),
    [
        ("N1", ["-1/48", "-1/48", "1/24"]),
        ("n2", ["-1/32", "-1/48", "5/96"]),
        ("N3", ["-5/192", "-1/48", "3/64"]),
    ],
)
def test_robust_profiles(capsys, name: str, exact: list[str]) -> None:
    doc = _run_json(capsys, "--game", "kuhn3p", "--profile", name)
    assert [p["value_exact"] for p in doc["positions"]] == exact
    for p, frac in zip(doc["positions"], exact, strict=True):
        assert p["value"] == pytest.approx(float(Fraction(frac)), abs=1e-12)
        assert p["best_response_value"] == pytest.approx(p["value"], abs=1e-12)
    assert [p["gain"] for p in doc["positions"]] == [0.0, 0.0, 0.0]  # not float noise
    assert doc["nash_conv"] == 0.0
    assert doc["nash_conv_exact"] == "0"


def test_whole_profile_file_and_per_position_files(capsys, tmp_path) -> None:
    game = kuhn_game(3)
    profile = n2_as_printed()
    save_profile(game, profile, tmp_path / "all.json")
    doc = _run_json(capsys, "--profile", str(tmp_path / "all.json"))
    assert abs(doc["nash_conv"] - 1 / 192) < 1e-12
    assert doc["nash_conv_exact"] == "1/192"
    paths = []
    for p in range(3):
        paths.append(str(tmp_path / f"p{p}.json"))
        save_strategy(game, p, profile[p], paths[-1])
    assert _run_json(capsys, "--profile", *paths)["positions"] == doc["positions"]


def test_other_games_and_the_text_table(capsys) -> None:
    doc = _run_json(capsys, "--game", "kuhn2p", "--profile", "uniform")
    assert doc["nash_conv_exact"] == "11/12"
    assert doc["game"] == "kuhn2p" and len(doc["positions"]) == 2
    assert len(_run_json(capsys, "--game", "kuhn4p", "--profile", "maniac")["positions"]) == 4
    assert main(["eval", "--profile", "N1"]) == 0
    out = capsys.readouterr().out
    assert "-1/48" in out and "1/24" in out and "nash_conv 0 (= 0)" in out
    assert "e-1" not in out  # no gain of 7.29e-17


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--profile", "nobody"], "unknown strategy"),
        (["--profile", "missing.json"], "profile: cannot read"),
        (["--game", "kuhn2p", "--profile", "n1"], "unknown strategy"),
    ],
)
def test_errors_exit_2_with_a_message(capsys, argv, message: str) -> None:
    assert main(["eval", *argv]) == 2
    assert message in capsys.readouterr().err


def test_malformed_file_names_the_field(capsys, tmp_path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"num_players": 3, "position": 0, "strategy": {"0": [0.5, 0.6]}}))
    assert main(["eval", "--profile", str(path)]) == 2
    assert "strategy:" in capsys.readouterr().err


def test_exact_fraction() -> None:
    assert exact_fraction(-1 / 48) == Fraction(-1, 48)
    assert exact_fraction(0.0) == 0
    assert exact_fraction(float(np.pi)) is None
    assert exact_fraction(1 / 48 + 1e-9) is None
    assert robust_profile("N1").shape == (3, 16, 2)
