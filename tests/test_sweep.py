"""The sweep runner: results independent of workers and backend, sweep bookkeeping, outputs."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import tempfile
from pathlib import Path

import pytest

from experiments import kuhn3p_field as field
from experiments.sweep import (
    RESULTS_DIR,
    SWEEPS,
    main,
    point_config,
    sweep_jobs,
    sweep_points,
)
from oppmodel.clients.lab.journal import Journal
from oppmodel.clients.lab.runner import job_key, run_jobs
from oppmodel.clients.progress import LOG_LINES
from oppmodel.modeling.mbbr.config import MBBRConfig
from oppmodel.modeling.play import fields
from oppmodel.modeling.play.tournament import AgentSpec, JobResult, MatchJob
from oppmodel.server.app import free_ports

PAIRS = (("n1", "n3"), ("maniac", "switcher"))


def _tiny_sweep() -> list[MatchJob]:
    return sweep_jobs("k", (2, 3), hands=25, reps=2, pairs=PAIRS)


def test_a_journal_written_before_mixture_eta_still_holds_its_jobs() -> None:
    """The competent field's journal at eta 1 was written before MBBRConfig had mixture_eta and
    weak_eta, under the informed prior: its first job (stream 0, MBBR with N1 and N2) is found
    under today's key, not played again."""
    journal = Journal(RESULTS_DIR / "field_competent_eta1.jobs.jsonl", {"seed": 2024})
    mbbr = MBBRConfig(eta=1.0, prior="informed")  # the default prior then
    agents = (AgentSpec("mbbr", mbbr), AgentSpec("n1"), AgentSpec("n2"))
    assert job_key(MatchJob(0, 0, agents, 3000)) in journal.entries()


def test_local_results_do_not_depend_on_worker_count() -> None:
    jobs = _tiny_sweep()
    one = run_jobs(jobs, base_seed=11, workers=1, progress=False)
    two = run_jobs(jobs[::-1], base_seed=11, workers=2, progress=False)
    assert [r.job_id for r in one] == [j.job_id for j in jobs]
    assert sorted(one, key=lambda r: r.job_id) == sorted(two, key=lambda r: r.job_id)
    assert one != run_jobs(jobs, base_seed=12, workers=1, progress=False)


def test_identical_jobs_run_once_and_share_the_result() -> None:
    agents = (AgentSpec("n1"), AgentSpec("maniac"), AgentSpec("exploiter"))
    jobs = [MatchJob(7, 3, agents, 30), MatchJob(2, 3, agents, 30), MatchJob(5, 4, agents, 30)]
    out = run_jobs(jobs, base_seed=0, workers=1, progress=False)
    assert [r.job_id for r in out] == [7, 2, 5]
    assert out[0].rate == out[1].rate != out[2].rate


def test_sweep_jobs_share_cards_across_points() -> None:
    jobs = _tiny_sweep()
    assert len(jobs) == 2 * len(PAIRS) * 2
    half = len(jobs) // 2
    assert [j.stream for j in jobs[:half]] == [j.stream for j in jobs[half:]]
    assert [j.agents[0].mbbr.k for j in jobs] == [2] * half + [3] * half
    fake = [JobResult(j.job_id, (float(j.job_id), 0.0, 0.0)) for j in jobs]
    points = sweep_points("k", (2, 3), fake, reps=2, pairs=PAIRS)
    assert [p.pairs[0].mean for p in points] == [0.5, 4.5]
    assert points[1].overall.mean == pytest.approx((4.5 + 6.5) / 2)
    # the sweeps are the paper's: its informed prior, no safety budget, opponents who never change
    paper = MBBRConfig(
        posterior="samples",
        response="bayes",
        k=30,
        prior="informed",
        safety_budget=math.inf,
        change_hazard=0.0,
    )
    assert point_config("response", "bayes@30") == paper
    assert point_config("H", 7).hands_default == 7


def written(stderr: str) -> list[Path]:
    """The files a benchmark said it wrote."""
    return [Path(line.removeprefix("wrote ")) for line in stderr.splitlines() if "wrote " in line]


def test_sweep_cli_writes_table_json_and_plot(tmp_path, capsys, monkeypatch) -> None:
    """A --quick run writes into a new temporary folder, never into the checkout."""
    pytest.importorskip("matplotlib")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = sorted(RESULTS_DIR.iterdir())
    argv = ["--params", "response", "--quick", "--hands", "20", "--workers", "1", "--no-progress"]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "| response |" in out
    png, doc = written(err)
    assert (png.name, doc.name) == ("sweep_response_quick.png", "sweep_response_quick.json")
    assert png.parent == doc.parent and doc.parent.parent == tmp_path
    assert sorted(RESULTS_DIR.iterdir()) == before
    values = [p["value"] for p in json.loads(doc.read_text())["sweep"]["response"]]
    assert values == list(SWEEPS["response"][2])
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_a_quick_field_run_logs_a_handful_of_lines_and_writes_outside_the_checkout(
    tmp_path, capsys, monkeypatch
) -> None:
    """Off a terminal (capsys), the jobs' progress is at most LOG_LINES lines, not one per job."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    before = sorted(RESULTS_DIR.iterdir())
    argv = ["--quick", "--hands", "3", "--reps", "1", "--mbbr-only", "--no-uninformed"]
    assert field.main([*argv, "--workers", "1"]) == 0
    err = capsys.readouterr().err.splitlines()
    progress = [line for line in err if line.startswith("match jobs:")]
    assert 1 <= len(progress) <= LOG_LINES and progress[-1].startswith("match jobs: 58/58 done")
    (path,) = written("\n".join(err))
    assert path.name == "field_quick.json" and path.parent.parent == tmp_path
    assert json.loads(path.read_text())["hands"] == 3
    assert sorted(RESULTS_DIR.iterdir()) == before


def test_field_jobs_and_ranking() -> None:
    jobs, index = fields.build_jobs(hands=10, reps=2)
    groups = fields.field_groups()
    assert len(groups) == 220 and len(jobs) == 2 * 2 * 220 + 2 * 6
    for group in groups:  # Table 6 replays each group on the same cards; only MBBR changes
        a, b = (jobs[i] for i in (index[("informed", group)][0], index[("uninformed", group)][0]))
        assert a.stream == b.stream
        assert (a.agents == b.agents) == ("mbbr" not in group)
    h2h = jobs[index[("h2h", ("mbbr", "n1", "n3"))][0]]
    assert h2h.stream == jobs[index[("informed", ("mbbr", "n1", "n3"))][0]].stream
    # An agent's score is the mean over its groups: give each agent a fixed per-group value.
    value = {name: float(i) for i, name in enumerate(fields.FIELD)}
    fake = [JobResult(j.job_id, tuple(value[a.name] for a in j.agents)) for j in jobs]
    table = field.ranking(fake, index, "informed", fields.FIELD)
    assert [name for name, _ in table] == list(reversed(fields.FIELD))
    assert all(e.mean == value[name] and e.se == 0.0 for name, e in table)
    margins = dict(field.head_to_head(fake, index, "informed", fields.FIELD))
    assert all(margins[name].mean == -value[name] for name in fields.FIELD[1:])


def test_competent_field_dilutes_only_the_styles() -> None:
    competent = fields.competent_field(0.3)
    assert competent[:4] == ("mbbr", "n1", "n2", "n3")
    assert competent[4:] == tuple(f"{style}@0.3" for style in fields.FIELD_STYLES)
    jobs, _ = fields.build_jobs(hands=10, reps=1, field=competent, uninformed=False)
    assert {a.name for j in jobs for a in j.agents} == set(competent)
    result = run_jobs(jobs[:3], base_seed=1, workers=1, progress=False)
    assert all(abs(sum(r.rate)) < 1e-9 for r in result)  # zero-sum: every agent was built


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (extra 'ray')"
)
def test_ray_backend_gives_the_local_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a Ray instance the runner starts of its own (``init_local_ray``: loopback only, and it
    starts on a loaded machine), even where another cluster is the default one (as ``ray start``
    or RAY_ADDRESS make it: a plain ``ray.init`` would join it, or fail)."""
    import ray

    jobs = _tiny_sweep()
    local = run_jobs(jobs, base_seed=5, workers=1, progress=False)
    monkeypatch.setenv("RAY_ADDRESS", "127.0.0.1:1")  # a cluster that is not ours (nor anyone's)
    try:
        remote = run_jobs(jobs, base_seed=5, backend="ray", progress=False)
        assert ray.get_runtime_context().get_node_id()  # the runner's instance
        assert ray.util.get_node_ip_address() == "127.0.0.1"  # kept on loopback
    finally:
        ray.shutdown()
    assert remote == local


@pytest.mark.skipif(
    importlib.util.find_spec("ray") is None, reason="ray is not installed (extra 'ray')"
)
@pytest.mark.parametrize("auto", [True, False])
def test_ray_backend_without_a_cluster_fails_in_one_line(
    monkeypatch: pytest.MonkeyPatch, auto: bool
) -> None:
    """--address auto (here resolved through RAY_ADDRESS, as after ``ray start`` it is through
    Ray's own files) or HOST:PORT where no cluster runs: one line naming the fix, no traceback,
    at once (ray.init would retry the address for minutes)."""
    port = free_ports(1)[0]
    closed = f"127.0.0.1:{port}"
    monkeypatch.setenv("RAY_ADDRESS", closed)
    address = "auto" if auto else closed
    argv = ["--params", "response", "--quick", "--hands", "5", "--reps", "1", "--no-progress"]
    with pytest.raises(SystemExit) as exit_:
        main([*argv, "--backend", "ray", "--address", address])
    message = str(exit_.value.code)
    assert message.startswith(f"--address {address}") and f":{port}" in message  # Ray's resolution
    assert "no Ray cluster answers" in message and "`ray start --head`" in message
    assert "\n" not in message


def test_field_checks_read_the_done_when_targets() -> None:
    def est(mean: float, se: float = 1.0) -> dict:
        return {"mean": mean, "se": se, "samples": 3}

    names = [("mbbr", 50.0), ("n1", 40.0), ("n3", 35.0), ("n2", 30.0), ("maniac", -155.0)]
    report = {
        "hands": 10,
        "reps": 3,
        "groups": 220,
        "table1": [{"agent": a, "mbb": m, "se": 2.0} for a, m in names],
        "table6": [{"agent": a, "mbb": -m if a == "mbbr" else m, "se": 2.0} for a, m in names],
        "head_to_head": [
            {"agent": "n1", "margin": 12.0, "se": 3.0, "groups": 10},
            {"agent": "n2", "margin": 2.0, "se": 3.0, "groups": 10},
            {"agent": "n3", "margin": 9.0, "se": 3.0, "groups": 10},
        ],
        "h2h": [
            {"pair": ["n1", "n2"], "ceiling": 34.7, "mbb": [est(10.0), est(-4.0), est(-6.0)]},
            {"pair": ["n2", "n2"], "ceiling": 0.0, "mbb": [est(-1.5), est(1.0), est(0.5)]},
        ],
    }
    verdict = field.checks(report)
    assert verdict["mbbr_first_by_more_than_its_se"]
    assert verdict["mbbr_beats_n1_head_to_head"]
    assert not verdict["mbbr_beats_n2_head_to_head"]  # ahead by 2.0, less than its SE of 3.0
    assert not verdict["mbbr_never_below_minus_one_se_vs_an_equilibrium_pair"]  # -1.5 + 1 < 0
    assert verdict["uninformed_mbbr_below_every_equilibrium_agent"]
    text = field.render(report)
    assert "| 1 | mbbr | +50.0 ± 2.0 | 48 |" in text and "n2 + n2" in text
    assert "## Field, MBBR with the informed prior (paper Table 1;" in text


def test_field_report_heads_table_1_with_the_prior_mbbr_played() -> None:
    report = {
        "hands": 10,
        "reps": 1,
        "groups": 220,
        "mbbr": dataclasses.asdict(MBBRConfig(posterior="dirichlet", prior="typed")),
        "table1": [
            {"agent": "mbbr", "mbb": 5.0, "se": 1.0},
            {"agent": "n2", "mbb": -5.0, "se": 1.0},
        ],
        "h2h": [],
    }
    text = field.render(report)
    assert "MBBR: dirichlet posterior, typed prior," in text
    assert "## Field, MBBR with the typed prior (paper Table 1;" in text
    assert "informed" not in text


def test_sweep_cli_takes_custom_values_and_pairs(tmp_path, capsys) -> None:
    pytest.importorskip("matplotlib")
    argv = ["--params", "k", "--values", "2,3", "--pairs", "n1+n1", "--hands", "15", "--reps", "2"]
    argv += ["--workers", "1", "--no-progress", "--suffix", "_x", "--out-dir", str(tmp_path)]
    assert main(argv) == 0
    assert "| k | **mean** | n1+n1 |" in capsys.readouterr().out
    doc = json.loads((tmp_path / "sweep_k_x.json").read_text())
    assert doc["pairs"] == [["n1", "n1"]]
    assert [p["value"] for p in doc["sweep"]["k"]] == [2, 3, "dirichlet"]  # and the k limit
    with pytest.raises(SystemExit):
        main(["--params", "k,eta", "--values", "2"])


def test_posterior_sweep_points() -> None:
    samples = point_config("posterior", "samples@30")
    assert (samples.posterior, samples.k) == ("samples", 30)
    limit = point_config("posterior", "dirichlet")
    assert limit.posterior == "dirichlet" and limit.k == MBBRConfig().k


def test_prior_sweep_points_use_the_dirichlet_posterior() -> None:
    for prior in SWEEPS["prior"][1]:
        config = point_config("prior", prior)
        config.validate()  # the typed prior exists only under the Dirichlet posterior
        assert (config.prior, config.posterior) == (prior, "dirichlet")


def test_sweep_cli_sweeps_the_dirichlet_posterior(tmp_path) -> None:
    pytest.importorskip("matplotlib")
    argv = ["--params", "epsilon", "--values", "0.01", "--pairs", "n2+n2", "--hands", "15"]
    argv += ["--reps", "2", "--posterior", "dirichlet", "--workers", "1", "--no-progress"]
    assert main([*argv, "--suffix", "_d", "--out-dir", str(tmp_path), "--json"]) == 0
    doc = json.loads((tmp_path / "sweep_epsilon_d.json").read_text())
    assert doc["posterior"] == "dirichlet"
    jobs = sweep_jobs("epsilon", (0.01,), hands=15, reps=1, base=MBBRConfig(posterior="dirichlet"))
    assert all(j.agents[0].mbbr.posterior == "dirichlet" for j in jobs)
