"""Local best response in 2-player limit Texas hold'em: the lower bound on the real game's
exploitability of the bundled blueprint (cfr), always-call, uniform play and each hold'em style,
in mbb/hand with its standard error (modeling/holdem/lbr.py; Lisý & Bowling 2017).

Each policy meets LBR on ``--deals`` seeded deals, each played in both positions; the opponent's
actions are drawn from its policy, LBR's win probabilities use ``--rollouts`` seeded board draws
before the turn (every completion from the turn on).

    python experiments/holdem_lbr.py [--game FILE] [--policies always-call,uniform,...]
                                     [--deals 300] [--seed 0] [--rollouts 100] [--json]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from oppmodel.modeling.games.acpc.gamedef import read_game_def
from oppmodel.modeling.holdem.lbr import ROLLOUTS, local_best_response
from oppmodel.modeling.holdem.styles import holdem_policy

GAME = Path(__file__).resolve().parents[1] / "tests/data/acpc/holdem.limit.2p.reverse_blinds.game"
POLICIES = "cfr,always-call,uniform,always-raise,tight-passive,maniac,bluffer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--game", default=str(GAME), help="a 2-player limit hold'em game file")
    parser.add_argument("--policies", default=POLICIES, help=f"(default {POLICIES})")
    parser.add_argument("--deals", type=int, default=300, help="deals per policy (default 300)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the deals (default 0)")
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS, help="board draws for wp")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args()
    game = read_game_def(args.game)
    rows = []
    for name in args.policies.split(","):
        start = time.process_time()
        result = local_best_response(
            game,
            holdem_policy(name, game),
            deals=args.deals,
            seed=args.seed,
            rollouts=args.rollouts,
        )
        rows.append(
            {
                "policy": name,
                result.unit.key: result.rate,
                "standard_error": result.standard_error,
                "deals": result.deals,
                "cpu_s": time.process_time() - start,
            }
        )
        if not args.json:
            row = rows[-1]
            print(
                f"{name:<16} {result.rate:>+9.1f} ± {result.standard_error:6.1f} "
                f"{result.unit.label}  ({result.deals} deals, {row['cpu_s']:.0f} s CPU)",
                flush=True,
            )
    if args.json:
        print(json.dumps({"game": Path(args.game).name, "seed": args.seed, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
