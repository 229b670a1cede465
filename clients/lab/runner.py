"""The match-job runner: every job on the local cores or on a Ray cluster, with the same results.

``run_jobs`` plays a list of :class:`oppmodel.modeling.play.tournament.MatchJob` and returns their
results in job order. Each job is seeded from ``(base seed, job stream)`` alone, so the results do
not depend on which worker ran what or in which order: the local backend (a ``multiprocessing``
pool, one process per core by default) and the Ray backend (one task per job on the cluster at
``--address``, or on a fresh local instance without it) give identical tables for the same seeds.
A journal (:mod:`oppmodel.clients.lab.journal`) keeps finished jobs, so a stopped run resumes.
:func:`add_runner_args` and :func:`run_jobs_with_args` are the command-line face every experiment
that runs match jobs shares; :func:`run_all` and :func:`run_trajectories` map over a process
pool.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import multiprocessing
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import oppmodel.modeling
from oppmodel.clients.lab.journal import Journal
from oppmodel.clients.progress import progress_bar, run_progress
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, SAFETY_BUDGET, MBBRConfig
from oppmodel.modeling.play.learning_cost import trajectory
from oppmodel.modeling.play.tournament import AgentSpec, JobResult, MatchJob, run_job

BACKENDS = ("local", "ray")


def ray_runtime_env(address: str | None = None) -> dict:
    """Ray runtime environment in which the workers import ``oppmodel.modeling``.

    A local instance (no address) runs this Python, where the package is installed, so its
    workers import it as this process does and reuse numba's compiled-kernel cache; a cluster
    gets the package uploaded (``py_modules``), where each worker compiles the kernels once.
    """
    if address is None:
        return {}
    return {"py_modules": [str(_upload_package())]}


def _upload_package() -> Path:
    """``oppmodel`` holding ``modeling`` (all a worker runs), in the installed layout, copied into
    a temporary folder for Ray to upload."""
    package = Path(tempfile.mkdtemp(prefix="oppmodel-ray-")) / "oppmodel"
    source = Path(oppmodel.modeling.__file__).resolve().parent
    shutil.copytree(source, package / "modeling", ignore=shutil.ignore_patterns("__pycache__"))
    (package / "__init__.py").touch()
    return package


def run_jobs(
    jobs: Sequence[MatchJob],
    *,
    base_seed: int,
    backend: str = "local",
    workers: int | None = None,
    address: str | None = None,
    progress: bool = True,
    journal: Path | None = None,
) -> list[JobResult]:
    """Run every job; results in job order, identical for every backend and worker count.

    Jobs that differ only in ``job_id`` are the same work (same agents, hands and stream) and run
    once. With a ``journal`` file (:class:`Journal`) each finished job is appended to it
    and the jobs it already holds for ``base_seed`` are not played again, so a stopped run resumes.

    ``local``: ``workers`` processes (default: every core; 1 runs in this process). ``ray``: one
    task per job on the cluster at ``address`` (None starts a local instance); if Ray is already
    initialised it is used as it is, and must be able to import ``modeling`` (see
    :func:`ray_runtime_env`).
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend: must be one of {BACKENDS}, got {backend!r}")
    unique: dict[MatchJob, MatchJob] = {}  # identical work (same stream) runs once
    for job in jobs:
        unique.setdefault(dataclasses.replace(job, job_id=0), job)
    record = Journal(journal, {"seed": base_seed})
    held = record.entries()
    mbb = {work: tuple(held[job_key(work)]["value"]) for work in unique if job_key(work) in held}
    todo = [job for work, job in unique.items() if work not in mbb]
    bar = run_progress(len(todo), desc="match jobs", unit="job", show=progress)
    by_id = {job.job_id: work for work, job in unique.items()}

    def finished(result: JobResult, seconds: float) -> None:
        work = by_id[result.job_id]
        mbb[work] = result.rate
        record.record(job_key(work), list(result.rate), seconds)
        bar.update(1)

    try:
        if backend == "ray":
            _run_ray(todo, base_seed, address, finished)
        else:
            _run_local(todo, base_seed, workers or os.cpu_count() or 1, finished)
    finally:
        bar.close()
    return [JobResult(job.job_id, mbb[dataclasses.replace(job, job_id=0)]) for job in jobs]


def job_key(job: MatchJob) -> tuple:
    """What identifies a job's work in a journal: its stream, hands, players and agents (with
    MBBR's whole config), not its position in a job list."""
    agents = json.dumps([_agent_key(agent) for agent in job.agents], sort_keys=True)
    return (job.stream, job.hands, job.num_players, agents)


# MBBRConfig's fields added after the first journals, left out of a key at the value their
# absence means so that those journals' jobs are still found (the journals spell out every
# field that was there when they began)
_ADDED_AFTER_THE_JOURNALS = ("mixture_eta", "weak_eta")


def _agent_key(agent: AgentSpec) -> dict:
    """An agent as its journal key spells it."""
    key = dataclasses.asdict(agent)
    for name in _ADDED_AFTER_THE_JOURNALS:
        if key["mbbr"] is not None and key["mbbr"][name] == FIELDS_ADDED_LATER[name]:
            del key["mbbr"][name]
    return key


def _timed_job(job: MatchJob, base_seed: int) -> tuple[JobResult, float]:
    began = time.perf_counter()
    result = run_job(job, base_seed)
    return result, time.perf_counter() - began


def _run_one(args: tuple[MatchJob, int]) -> tuple[JobResult, float]:
    return _timed_job(*args)


Finished = Callable[[JobResult, float], object]


def require_cluster(address: str) -> None:
    """Exit with one line unless a Ray cluster answers at ``address`` (``auto``: RAY_ADDRESS, or
    the cluster ``ray start --head`` started on this machine). ``ray.init`` would end in a
    traceback, or retry an unreachable address for minutes. A Ray Client address (``ray://``)
    is left to ``ray.init``."""
    from ray._private.services import canonicalize_bootstrap_address  # ray.init's own resolution

    if address.startswith("ray://"):
        return
    where = address
    try:
        resolved = canonicalize_bootstrap_address(address)
        if resolved is not None:  # "local": nothing to reach
            where = resolved if resolved == address else f"{address} ({resolved})"
            host, _, port = resolved.rpartition(":")
            socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except (OSError, ValueError) as error:  # ConnectionError is an OSError
        raise SystemExit(
            f"--address {where}: no Ray cluster answers ({error}); start one with "
            "`ray start --head`, or leave --address out to start a local instance"
        ) from None


def _run_local(jobs: Sequence[MatchJob], base_seed: int, workers: int, finished: Finished) -> None:
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            finished(*_timed_job(job, base_seed))
        return
    with multiprocessing.get_context("fork").Pool(min(workers, len(jobs))) as pool:
        for result in pool.imap_unordered(_run_one, [(job, base_seed) for job in jobs]):
            finished(*result)


def _run_ray(
    jobs: Sequence[MatchJob], base_seed: int, address: str | None, finished: Finished
) -> None:
    try:
        import ray
    except ImportError as error:
        raise SystemExit('the ray backend needs Ray: pip install "oppmodel[ray]"') from error
    if not ray.is_initialized():
        if address is not None:
            require_cluster(address)
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
        if address is None:  # a new local instance, not the one `ray start` or RAY_ADDRESS names
            from oppmodel.server.ray_serve import init_local_ray

            init_local_ray(runtime_env=ray_runtime_env(), **options)
        else:
            ray.init(address=address, runtime_env=ray_runtime_env(address), **options)
    task = ray.remote(num_cpus=1)(run_job)  # modeling's: what a cluster's workers can import
    pending = [task.remote(job, base_seed) for job in jobs]
    last = time.perf_counter()
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        now = time.perf_counter()  # a job's seconds here: the wall time since the one before
        for result in ray.get(done):
            finished(result, now - last)
        last = now


def add_runner_args(parser: argparse.ArgumentParser) -> None:
    """The options shared by every script that runs match jobs."""
    parser.add_argument("--seed", type=int, default=2024, help="base seed (default 2024)")
    parser.add_argument(
        "--workers", type=int, default=None, help="local worker processes (default: every core)"
    )
    parser.add_argument(
        "--backend", choices=BACKENDS, default="local", help="where jobs run (default local)"
    )
    parser.add_argument(
        "--address",
        default=None,
        help="Ray cluster address (e.g. auto or ray://HOST:10001); none starts a local instance",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="append each finished job here and skip the jobs it already holds (resumable; "
        "a finished run's journal reports again without playing)",
    )


def run_jobs_with_args(
    jobs: Sequence[MatchJob], args: argparse.Namespace
) -> tuple[list[JobResult], float]:
    """:func:`run_jobs` with the options of :func:`add_runner_args`; (results, wall seconds)."""
    began = time.perf_counter()
    results = run_jobs(
        jobs,
        base_seed=args.seed,
        backend=args.backend,
        workers=args.workers,
        address=args.address,
        progress=not args.no_progress,
        journal=args.journal,
    )
    return results, time.perf_counter() - began


def run_all(run: Callable[[tuple], tuple], jobs: list, workers: int) -> Iterator[tuple]:
    """``run(job)`` of every job, as they finish: on ``workers`` spawned processes (``run`` a
    module-level function), or in this process when ``workers`` is 1."""
    if workers <= 1:
        yield from map(run, jobs)
        return
    with multiprocessing.get_context("spawn").Pool(workers) as pool:
        yield from pool.imap_unordered(run, jobs)


def run_trajectories(tasks: list, workers: int) -> list[tuple[np.ndarray, np.ndarray, int]]:
    """Every :func:`~oppmodel.modeling.play.learning_cost.trajectory` of ``tasks``, in task order
    (a process pool unless ``workers`` is 1)."""
    bar = progress_bar(len(tasks), desc="matches")
    results = []
    if workers <= 1:
        for task in tasks:
            results.append(trajectory(task))
            bar.update()
    else:
        with multiprocessing.get_context("spawn").Pool(workers) as pool:
            for result in pool.imap(trajectory, tasks):
                results.append(result)
                bar.update()
    bar.close()
    return results


def add_field_args(parser: argparse.ArgumentParser) -> None:
    """The options of a limit-game field run (``experiments/leduc_field.py`` and
    ``experiments/unseen_games.py``): MBBR's safety budget and prior strength, the journal,
    report-only, and the output."""
    parser.add_argument(
        "--mbbr-safety-budget",
        type=float,
        default=SAFETY_BUDGET,
        help="MBBR's safety budget B in the game's unit (mA/h with antes, mbb/h with blinds); "
        "'inf' plays without the bankroll (%(default)s)",
    )
    parser.add_argument(
        "--mbbr-eta",
        type=float,
        default=MBBRConfig().eta,
        help="MBBR's prior strength eta (%(default)s)",
    )
    parser.add_argument(
        "--journal",
        type=Path,
        default=None,
        help="append each finished job here and skip the jobs it already holds (resumable)",
    )
    parser.add_argument(
        "--report",
        action="store_true",
        help="play nothing: report what the journal holds (groups with fewer duplicates)",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON only")
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
