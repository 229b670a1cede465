"""PerfectInfoService latency against the in-process library, with the server in a child process.

Three figures, each next to its in-process peer measured in the same run (the machine is shared:
compare within a run):

1. **GetProbMaxnMove** on seeded 7-card deals (given weights, eps 0.1): client wall time per call,
   against ``oppmodel.modeling.perfect_info.spades_search.probmaxn_search`` in-process with the same
   fresh table size; the moves must agree.
2. **ObserveChoices**: one choice per stream message for one opponent, default Gibbs settings
   (1000 sweeps, 200 burn-in, 4 chains); the ack latency over the last acks (each ack carries a
   freshly sampled posterior), against ``gibbs_posterior`` in-process on the same number of
   choices.
3. **GetModelWeights** when the posterior is cached (nothing new observed): the bare RPC cost.

Medians (and p95 for the move query); the JIT is warmed by a first call on both sides.

    python benchmarks/perfect_info.py [--deals 30] [--choices 200] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]

from oppmodel.clients.commands import serve_cmd  # noqa: E402
from oppmodel.clients.perfect_info_client import ChoiceEvidence, Opponent, PerfectInfoClient  # noqa: E402
from oppmodel.modeling.games.spades.bidding import bids  # noqa: E402
from oppmodel.modeling.games.spades.cards import deal  # noqa: E402
from oppmodel.modeling.games.spades.state import SpadesState  # noqa: E402
from oppmodel.modeling.perfect_info.model_weights import gibbs_posterior  # noqa: E402
from oppmodel.modeling.perfect_info.spades_search import probmaxn_search  # noqa: E402

WEIGHTS = np.array([[0.5, 0.5], [0.7, 0.3], [0.2, 0.8]])


def _ms(values: list[float]) -> dict:
    a = np.asarray(values) * 1e3
    return {"median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95))}


def move_queries(client: PerfectInfoClient, deals: int, seed: int) -> dict:
    """Service vs in-process prob-max^n first moves on seeded deals."""
    rng = np.random.default_rng(seed)
    states = [SpadesState.start(deal(rng), leader=i % 3) for i in range(deals + 1)]
    served_t, local_t = [], []
    for i, state in enumerate(states):
        t0 = time.perf_counter()
        served = client.probmaxn_move(state, searcher=state.turn, weights=WEIGHTS)
        t1 = time.perf_counter()
        local = probmaxn_search(
            state, bids(state.hands), me=state.turn, true_model="MT", weights=WEIGHTS
        )
        t2 = time.perf_counter()
        if served.move != local.move:
            raise AssertionError(f"deal {i}: service {served.move} != library {local.move}")
        if i:  # the first call of each side warms the JIT
            served_t.append(t1 - t0)
            local_t.append(t2 - t1)
    out = {"service": _ms(served_t), "library": _ms(local_t)}
    out["ratio_median"] = out["service"]["median_ms"] / out["library"]["median_ms"]
    return out


def observe_choices(client: PerfectInfoClient, count: int, seed: int) -> dict:
    """Ack latency of one-choice messages vs in-process gibbs_posterior on as many choices."""
    rng = np.random.default_rng(seed)
    opponents = [Opponent("west"), Opponent("east")]
    session_id = client.create_session(opponents=opponents, seed=seed).session_id
    choices = [ChoiceEvidence.from_likelihoods("west", rng.random(2) + 0.01) for _ in range(count)]
    latencies = []
    for i, choice in enumerate(choices, start=1):
        t0 = time.perf_counter()
        client.observe_choices(session_id, [choice], first_sequence=i)
        latencies.append(time.perf_counter() - t0)
    tail = latencies[-min(20, count) :]
    lik = np.array([c.likelihoods for c in choices])
    local = []
    for s in range(6):
        t0 = time.perf_counter()
        gibbs_posterior(lik, np.ones(2), seed=s, sweeps=1000, burn_in=200, chains=4)
        local.append(time.perf_counter() - t0)
    cached = []
    for _ in range(50):
        t0 = time.perf_counter()
        client.model_weights(session_id, "west")
        cached.append(time.perf_counter() - t0)
    out = {
        "choices": count,
        "ack_last": _ms(tail),
        "library_gibbs": _ms(local[1:]),
        "weights_cached": _ms(cached),
    }
    out["ratio_median"] = out["ack_last"]["median_ms"] / out["library_gibbs"]["median_ms"]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print a table or JSON."""
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--deals", type=int, default=30, help="seeded 7-card deals (default 30)")
    ap.add_argument("--choices", type=int, default=200, help="choices streamed (default 200)")
    ap.add_argument("--seed", type=int, default=2006)
    ap.add_argument("--quick", action="store_true", help="10 deals, 50 choices")
    ap.add_argument("--json", action="store_true", help="print one JSON object")
    args = ap.parse_args(argv)
    deals, count = (10, 50) if args.quick else (args.deals, args.choices)
    with tempfile.TemporaryDirectory() as tmp:
        process, port = serve_cmd.spawn(Path(tmp) / "bench.sqlite")
        try:
            with PerfectInfoClient(f"127.0.0.1:{port}", timeout=120) as client:
                result = {
                    "move": move_queries(client, deals, args.seed),
                    "observe": observe_choices(client, count, args.seed),
                }
        finally:
            process.terminate()
            process.wait(timeout=30)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    m, o = result["move"], result["observe"]
    print(f"GetProbMaxnMove, {deals} deals of 7 cards (median / p95 ms):")
    print(f"  service {m['service']['median_ms']:.2f} / {m['service']['p95_ms']:.2f}")
    print(f"  library {m['library']['median_ms']:.2f} / {m['library']['p95_ms']:.2f}")
    print(f"  ratio of medians {m['ratio_median']:.2f}")
    print(f"ObserveChoices, one choice per message, at {count} choices (median ms):")
    print(f"  ack {o['ack_last']['median_ms']:.1f}, in-process Gibbs "
          f"{o['library_gibbs']['median_ms']:.1f}, ratio {o['ratio_median']:.2f}")  # fmt: skip
    print(f"GetModelWeights, cached: {o['weights_cached']['median_ms']:.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
