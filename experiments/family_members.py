"""Members of the 3-player Kuhn equilibrium family, and near-members, as strategy files: the
opponents of the safety budget's done-when (issue 32: the default wins at least 90% of what plain
MBBR wins against pairs of two different members, or of near-members).

A member is drawn uniformly within the bounds of :func:`oppmodel.modeling.games.kuhn3p.sgs_tables`,
its sub-family (c11 = 0, 1/2, or between) drawn first; a near-member is a member with every
probability of its a, b, c tables strictly between 0 and 1 moved by a uniform amount in
[-``--near``, ``--near``] (kept inside (0, 1)). The moves keep the member's support: a move out of
it (a J that calls, say) is impossible under every member and rules out every hypothesis of the
safety bankroll at once, so MBBR plays as without a budget; kept inside, a near-member is as hard
to tell from the family as a member is. Seeded: the same
``--seed`` writes the same files. The files (``m<k>.json``, ``near<k>.json``, one profile each,
played in every seat) go to ``--out-dir``; the parameters drawn are printed, and pairs of them
are what ``experiments/learning_cost.py --pairs A.json+B.json`` plays.

    python experiments/family_members.py [--count 4] [--near 0.05] [--seed 2024]
                                         [--out-dir experiments/results/family]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on, save_profile
from oppmodel.modeling.games.kuhn3p import profile_from_tables, sgs_tables


def draw_member(rng: np.random.Generator) -> dict[str, float]:
    """Parameters of a uniformly drawn member (sub-family first, then each bound in turn)."""
    sub = int(rng.integers(3))
    if sub == 0:
        c11, b23 = 0.0, 0.0
        b21 = rng.uniform(0, 0.25)
        b11 = rng.uniform(0, b21)
    elif sub == 1:
        c11 = 0.5
        b11 = rng.uniform(0, 0.25)
        b21 = rng.uniform(0, min(b11, 0.5 - 2 * b11))
        b23 = rng.uniform(0, (b11 - b21) / (2 * (1 - b21)))
    else:
        b11 = b21 = rng.uniform(0, 0.25)
        b23 = 0.0
        high = (2 - b11) / (3 + 4 * b11) if b11 > 1 / 6 else 0.5
        c11 = rng.uniform(0.01, min(high, 0.49))
    beta = max(b11, b21)
    b32 = rng.uniform(0, 0.5 + 3 * (b11 + b21) / 4 + beta / 4)
    c33 = rng.uniform(max(0.0, 0.5 - b32), 0.5 - b32 + 3 * (b11 + b21) / 4 + beta / 4)
    c34 = rng.uniform(0, 1)
    params = dict(b11=b11, b21=b21, b32=b32, c33=c33, c34=c34, c11=c11, b23=b23)
    return {k: float(v) for k, v in params.items()}


def nudged(tables: tuple[np.ndarray, ...], near: float, rng: np.random.Generator) -> tuple:
    """Every probability of the tables strictly inside (0, 1) moved by a uniform amount in
    [-near, near], kept inside."""
    out = []
    for table in tables:
        inside = (table > 0.0) & (table < 1.0)
        moved = np.clip(table + rng.uniform(-near, near, table.shape), 1e-3, 1 - 1e-3)
        out.append(np.where(inside, moved, table))
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=4, help="members, and as many near-members")
    parser.add_argument("--near", type=float, default=0.05, help="largest move (%(default)s)")
    parser.add_argument("--seed", type=int, default=2024, help="(%(default)s)")
    parser.add_argument("--out-dir", type=Path, default=Path("experiments/results/family"))
    args = parser.parse_args(argv)
    game = limit_game("kuhn3p")
    rng = np.random.default_rng([args.seed, 32])
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for k in range(1, args.count + 1):
        params = draw_member(rng)
        tables = sgs_tables(**params)
        for name, chosen in ((f"m{k}", tables), (f"near{k}", nudged(tables, args.near, rng))):
            path = args.out_dir / f"{name}.json"
            save_profile(game, kuhn_profile_on(game, profile_from_tables(chosen)), path)
            print(f"{path}: {json.dumps({p: round(v, 4) for p, v in params.items()})}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
