"""``oppmodel match`` end to end through oppmodel.clients.cli.main."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys

import pytest

from oppmodel.clients.cli import main


def _run_json(capsys, *argv: str) -> dict:
    assert main(["match", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_fixed_agents_json_is_seeded_and_sorted(capsys) -> None:
    argv = ["--agents", "n1,maniac,tight-passive", "--hands", "300", "--duplicates", "3"]
    a = _run_json(capsys, *argv, "--seed", "7")
    b = _run_json(capsys, *argv, "--seed", "7")
    c = _run_json(capsys, *argv, "--seed", "8")
    assert a == b and a != c
    assert (a["game"], a["hands"], a["duplicates"], a["seatings"], a["seed"]) == (
        "kuhn3p",
        300,
        3,
        6,
        7,
    )
    assert a["mbbr"] is None
    values = [r["milli_antes_per_hand"] for r in a["ranking"]]
    assert values == sorted(values, reverse=True)
    assert {r["name"] for r in a["ranking"]} == {"n1", "maniac", "tight-passive"}
    assert sum(values) == pytest.approx(0.0, abs=1e-9)
    for r in a["ranking"]:
        assert len(r["per_duplicate"]) == 3 and r["standard_error"] > 0


def test_mbbr_with_options(capsys) -> None:
    argv = [
        "--agents", "mbbr,maniac,calling-station", "--hands", "200", "--duplicates", "2",
        "--mbbr-k", "12", "--mbbr-response", "bayes", "--mbbr-prior", "uninformed",
        "--mbbr-epsilon", "0.1", "--mbbr-eta", "3", "--mbbr-mixture-eta", "6",
        "--mbbr-weak-eta", "0.5", "--mbbr-hands-default", "40",
        "--mbbr-posterior", "samples", "--mbbr-change-hazard", "0.01", "--mbbr-safety-budget", "2",
    ]  # fmt: skip
    doc = _run_json(capsys, *argv)
    assert _run_json(capsys, *argv) == doc  # MBBR's samples and actions are seeded too
    assert doc["mbbr"] == {
        "k": 12, "response": "bayes", "prior": "uninformed", "epsilon": 0.1, "eta": 3.0,
        "mixture_eta": 6.0, "weak_eta": 0.5, "hands_default": 40, "posterior": "samples",
        "safety_budget": 2.0, "change_hazard": 0.01, "prior_strategy": None,
    }  # fmt: skip
    assert doc["ranking"][0]["name"] == "mbbr"


def test_the_same_seeded_kuhn3p_match_gives_the_same_chips_run_to_run() -> None:
    """Two processes (fresh generators, numba's cached kernels) play the same seeded 3-player
    Kuhn match, MBBR at its defaults against an equilibrium and a diluted style: every
    duplicate's chips are equal bit for bit."""
    argv = ["match", "--agents", "mbbr,n2,maniac@0.35", "--hands", "150", "--duplicates", "2",
            "--seed", "11", "--json"]  # fmt: skip
    code = f"from oppmodel.clients.cli import main; raise SystemExit(main({argv!r}))"
    runs = [
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
        for _ in range(2)
    ]
    for run in runs:
        assert run.returncode == 0, run.stderr
    first, second = (json.loads(run.stdout) for run in runs)
    assert first["game"] == "kuhn3p" and first == second
    assert len({r["per_duplicate"][0] for r in first["ranking"]}) == 3  # not a trivial table


def test_mbbr_plays_the_dirichlet_posterior_by_default(capsys) -> None:
    doc = _run_json(capsys, "--agents", "mbbr,maniac,n1", "--hands", "300")
    assert doc["mbbr"]["posterior"] == "dirichlet"
    assert doc["ranking"][0]["name"] == "mbbr"


def test_repeated_names_and_other_player_counts(capsys) -> None:
    doc = _run_json(capsys, "--game", "kuhn2p", "--agents", "uniform,uniform", "--hands", "50")
    assert sorted(r["name"] for r in doc["ranking"]) == ["uniform", "uniform#2"]
    assert doc["seatings"] == 2
    doc = _run_json(
        capsys, "--game", "kuhn4p", "--agents", "maniac,uniform,bluffer:0.3,always-bet",
        "--hands", "20", "--duplicates", "2",
    )  # fmt: skip
    assert doc["seatings"] == 24 and len(doc["ranking"]) == 4


def test_text_table(capsys) -> None:
    assert main(["match", "--agents", "n1,n2,n3", "--hands", "100", "--duplicates", "2"]) == 0
    out = capsys.readouterr().out
    assert "mA/h" in out and "12 matches of 100 hands" in out
    assert out.splitlines()[-1].startswith("mA/h: milli-antes per hand")
    assert main(["match", "--agents", "n1,n2,n3", "--hands", "1", "--duplicates", "1"]) == 0
    out = capsys.readouterr().out
    assert "n/a" in out and "6 matches of 1 hand (1 duplicate x 6 seatings)" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--agents", "n1,n3"], "agents: kuhn3p needs 3 agents"),
        (["--agents", "n1,n3,nobody"], "unknown strategy 'nobody'"),
        (["--agents", "n1,n2,n3", "--hands", "0"], "hands:"),
        (["--agents", "n1,n2,n3", "--duplicates", "0"], "duplicates:"),
        (["--agents", "mbbr,n2,n3", "--mbbr-k", "0"], "k:"),
        (["--agents", "mbbr,n2,n3", "--mbbr-epsilon", "0.7"], "epsilon:"),
    ],
)
def test_errors_exit_2_with_the_field(capsys, argv, message: str) -> None:
    with contextlib.suppress(SystemExit):  # argparse exits on a value out of a flag's range
        assert main(["match", *argv]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("oppmodel match: error: ") and message in last
