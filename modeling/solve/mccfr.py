"""The sampled solver for games too large for full sweeps: external-sampling MCCFR.

Monte Carlo CFR with external sampling (Lanctot, Waugh, Zinkevich & Bowling 2009, "Monte Carlo
sampling for regret minimization in extensive games"). One iteration draws one deal (chance),
then walks the public tree once per position in turn, the *traverser*: at the traverser's nodes
every legal action is walked and its regret gains the sampled counterfactual value of the action
less that of the current strategy; at another position's node one action is drawn from that
position's current strategy (regret matching), and its average-strategy sums gain that strategy.
Sampled values are unbiased estimates of the counterfactual values, so the average strategy
converges as CFR's does (in 2-player zero-sum games to a Nash equilibrium) in expectation, at a
cost per iteration of one path per opponent action instead of a sweep over every deal.

Choices, and why:

* **External sampling, not chance sampling.** Chance sampling walks every action of every
  player under one deal; external sampling draws the others' actions too, so an iteration costs
  about the square root of the tree per player, the better trade on deep limit trees (Lanctot
  et al. 2009 report faster convergence in time on poker games).
* **Regret matching, not CFR+.** CFR+'s floored regrets assume exact values; on sampled ones a
  regret floored at zero forgets the noise that drove it there and the average stops being
  unbiased, so the regrets stay signed. The average weighs iteration t by t (*linear averaging*,
  as Linear CFR does, Brown & Sandholm 2019), which forgets the first near-uniform iterations
  sooner at no cost.
* **Seeded per iteration.** Iteration t of seed s draws from a generator seeded by (s, t), so a
  run is reproducible and a resumed one equals an uninterrupted one bit for bit.

The state (regrets, average sums, the iteration, the seed) saves and resumes as the exact
solver's (:class:`~oppmodel.modeling.solve.cfr.CFRSolver`, whose file format this is). The game
is any :class:`~oppmodel.modeling.games.acpc.limit_game.LimitGame`: a compiled small game (its
deals enumerated, drawn uniformly) or a hold'em abstract game (:mod:`oppmodel.modeling.games.acpc.
holdem_abstract`: its information sets are buckets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from oppmodel.modeling.errors import InvalidArgumentError
from oppmodel.modeling.evaluation.limit import pack_tree
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.solve import _mccfr_kernels as kernels
from oppmodel.modeling.solve.cfr import CFRSolver

ALGORITHM = "es-mccfr"


@dataclass(frozen=True)
class MCCFRConfig:
    """The sampled solver's one parameter: the seed of its draws."""

    seed: int = 0
    algorithm: str = ALGORITHM  # recorded in files and summaries; the only value

    def __post_init__(self) -> None:
        if not isinstance(self.seed, int) or not 0 <= self.seed < 2**31:
            raise InvalidArgumentError(
                "seed", f"must be a whole number in 0..2^31-1, got {self.seed!r}"
            )
        if self.algorithm != ALGORITHM:
            raise InvalidArgumentError(
                "algorithm", f"must be {ALGORITHM!r}, got {self.algorithm!r}"
            )


def mccfr_label(game: LimitGame) -> str:
    """What a sampled solve's profile is, in words, for files and reports."""
    kind = "a Nash equilibrium" if game.num_players == 2 else "no equilibrium (3+ players)"
    return (
        f"external-sampling MCCFR average strategy of {game.name} (approximates {kind}; its "
        "nash_conv is exact in the game solved: for an abstract game, inside the abstraction)"
    )


class MCCFRSolver(CFRSolver):
    """External-sampling MCCFR on one game (see the module's text); runs, saves and resumes as
    :class:`CFRSolver` does."""

    config_type = MCCFRConfig

    def __init__(self, game: LimitGame, config: MCCFRConfig | None = None) -> None:
        super().__init__(game)
        self.config = config or MCCFRConfig()  # type: ignore[assignment]
        self._packed = pack_tree(game.tree)

    def _advance(self, last: int) -> None:
        kernels.iterate(
            *self._packed, self.regrets, self.sums, self.current, self._legal, self._done, last,
            cast(MCCFRConfig, self.config).seed,
        )  # fmt: skip

    @staticmethod
    def _same_game(name: str, game: LimitGame) -> bool:
        """An abstract game's name carries its abstraction (the rules alone do not tell two
        abstractions of one game apart)."""
        return name == game.name
