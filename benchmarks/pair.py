"""Two checkouts' figures of one benchmark, measured at the same time: the ratio new / old.

    python benchmarks/pair.py OLD NEW --rounds 4 -- benchmarks/posterior.py --game kuhn3p --cpu-time

Each round starts the benchmark in both checkouts at once (each with its own ``.venv``'s python,
in its own folder, so each imports its own code and numba cache), waits for both, and reads the
JSON each prints. Every rate (``*_per_s*``) and time (``*_s_per_*``) of their ``results`` rows
is paired and the ratio new / old taken per round; the output is the rounds and each figure's
median ratio (of a time, below 1 is faster).

Why at once and not one after the other: on this machine (a 2-vCPU virtual machine) the work a
CPU second does drifts with time by up to 1.5x, the same in every process at a given moment, a
pure-Python loop as much as the compiled cycles (benchmarks/RESULTS.md, "the swing"). Two
processes started together see the same drift, so their ratio is steady where alternated
processes' is not (the same code: standard deviation of the log ratio 0.06 at once, 0.16 forty
seconds apart). Each process gets a core of its own only on an otherwise idle machine; on a
busy one both share the same contention.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
from pathlib import Path


def python_of(checkout: Path) -> str:
    """The checkout's own interpreter (its ``.venv``), which imports the checkout's code."""
    python = checkout / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"{checkout}: no .venv/bin/python (each checkout needs its own venv)")
    return str(python)


def figures(output: str) -> dict[str, float]:
    """The rates (``*_per_s*``) and times (``*_s_per_*``) of the JSON report a benchmark printed
    (``--json``), not its goals, by row and name (``row<i>.<name>``)."""
    report = json.loads(output)
    return {
        f"row{i}.{name}": float(value)
        for i, row in enumerate(report["results"])
        for name, value in row.items()
        if ("_per_s" in name or "_s_per_" in name)
        and "goal" not in name
        and isinstance(value, int | float)
    }


def one_round(checkouts: tuple[Path, Path], command: list[str]) -> tuple[dict, dict]:
    """Both checkouts' figures of one run of ``command``, started at the same time."""
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    started = [subprocess.Popen([python_of(c), *command], cwd=c, **pipes) for c in checkouts]
    outputs = []
    for c, process in zip(checkouts, started, strict=True):
        out, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"{c}: the benchmark failed ({process.returncode}):\n{err}")
        outputs.append(figures(out))
    return outputs[0], outputs[1]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0],
        usage="%(prog)s [--rounds N] OLD NEW -- BENCHMARK [FLAGS...]",
    )
    parser.add_argument("old", type=Path, help="the checkout measured as the base")
    parser.add_argument("new", type=Path, help="the checkout compared with it")
    parser.add_argument("--rounds", type=int, default=4, help="rounds (both at once in each)")
    argv = sys.argv[1:]
    split = argv.index("--") if "--" in argv else len(argv)
    args, command = parser.parse_args(argv[:split]), argv[split + 1 :]
    if not command:
        parser.error("give the benchmark after --, e.g. -- benchmarks/posterior.py --game kuhn3p")
    if "--json" not in command:
        command = [*command, "--json"]
    checkouts = (args.old.resolve(), args.new.resolve())
    rounds = []
    for _ in range(args.rounds):
        old, new = one_round(checkouts, command)
        ratio = {name: round(new[name] / old[name], 3) for name in old if name in new}
        rounds.append({"old": old, "new": new, "ratio": ratio})
        print(json.dumps(rounds[-1]), file=sys.stderr)
    names = rounds[0]["ratio"]
    report = {
        "benchmark": "pair",
        "command": command,
        "old": str(checkouts[0]),
        "new": str(checkouts[1]),
        "rounds": rounds,
        "median_ratio": {n: statistics.median(r["ratio"][n] for r in rounds) for n in names},
        # the spread of the rounds' ratios: the geometric standard deviation (1.0: none)
        "ratio_spread": {
            n: round(math.exp(statistics.stdev(math.log(r["ratio"][n]) for r in rounds)), 3)
            if len(rounds) > 1
            else None
            for n in names
        },
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
