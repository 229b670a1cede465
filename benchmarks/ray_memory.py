"""Memory of ``oppmodel serve --ray``: the proportional set size (PSS) of its whole process tree.

Ray runs many processes (GCS, raylet, dashboard and agents, Serve's controller and proxy, the
replicas); each maps the same interpreter, libraries and Ray's shared objects. Summing their RSS
counts every shared page once per process that maps it; PSS charges a shared page to its
processes in equal parts, so the sum of PSS is what the tree takes from the machine (Linux's
``/proc/PID/smaps_rollup``; USS, the private pages only, is its lower bound).

``--store`` names an empty PostgreSQL database (``serve --ray`` refuses SQLite). The script starts
``oppmodel serve --ray --replicas N`` with its own local Ray instance, measures it once serving
(``idle``) and again after ``--sessions`` sessions have each sent ``--hands`` hands and asked one
best response (``loaded``), stops it, and prints both (JSON with ``--json``).

    python benchmarks/ray_memory.py --store postgresql://USER@HOST/DB [--replicas 2]
                                    [--sessions 8] [--hands 500] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys

from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.lab.process_tree import tree_memory
from oppmodel.clients.lab.serving import hands_of, spawn_ray


def load(port: int, sessions: int, hands: int) -> None:
    """``sessions`` sessions each observe ``hands`` hands (ObserveBatch through Ray's proxy) and
    answer one GetResponse: the replicas hold models and have run their kernels."""
    observations = hands_of(hands, seed=1)
    with OpponentModelClient(f"127.0.0.1:{port}", timeout=120) as client:
        for _ in range(sessions):
            session = client.create_session()
            client.observe(session.session_id, observations, first_sequence=1)
            client.response(session.session_id, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", required=True, help="an empty PostgreSQL database's URL")
    parser.add_argument("--replicas", type=int, default=2, help="replicas (default 2)")
    parser.add_argument("--sessions", type=int, default=8, help="sessions of the load (8)")
    parser.add_argument("--hands", type=int, default=500, help="hands per session (500)")
    parser.add_argument("--quick", action="store_true", help="a load of 1 session of 50 hands")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    if args.quick:
        args.sessions, args.hands = 1, 50
    process, port = spawn_ray(args.store, args.replicas)
    try:
        idle = tree_memory(process.pid)
        load(port, args.sessions, args.hands)
        loaded = tree_memory(process.pid)
    finally:
        os.killpg(process.pid, signal.SIGINT)  # serve --ray stops Serve and its own Ray
        process.wait(timeout=120)
    report = {
        "replicas": args.replicas,
        "sessions": args.sessions,
        "hands": args.hands,
        "idle": idle,
        "loaded": loaded,
    }
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    for state in ("idle", "loaded"):
        m = report[state]
        print(
            f"serve --ray, {args.replicas} replicas, {state}: {m['processes']} processes, PSS "
            f"{m['pss_mb']:.0f} MB (their RSS summed {m['rss_mb']:.0f} MB, "
            f"private {m['uss_mb']:.0f} MB)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
