"""Exploitable styles diluted with equilibrium play: ``STYLE@S`` plays STYLE at a share S of its
decisions and the equilibrium N2 at the rest (3-player Kuhn), or the game's solved strategy
(any other game: ``oppmodel.modeling.play.panel.bundled_profile``).

Ganzfried et al. 2024's field was class-project agents, most of them competent (several within a few
mbb/h of the equilibria); the panel's pure styles are far weaker. Diluting a style keeps its
character (what an exploiter must find) while shrinking how much it gives away, so a field of
diluted styles is as hard as the paper's. N2 is the base because it is neither MBBR's default
strategy (N1) nor its prior mean (N3): a field leaning on either would flatter MBBR's informed
prior.

Mixing per decision: a fixed style diluted is the fixed profile S * style + (1 - S) * base (played
by the match kernel); an adaptive style (``oppmodel.modeling.play.adaptive``, Kuhn games) is
wrapped, its action probabilities mixed the same way at each decision while it keeps learning or
switching from every hand it sees.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from oppmodel.modeling.errors import InvalidArgumentError, NotFoundError
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.strategy import is_strategy_file, load_profile
from oppmodel.modeling.observation import LimitObservation
from oppmodel.modeling.play.adaptive import RuleAgent, adaptive_factory, is_adaptive
from oppmodel.modeling.play.match import Agent, AgentFactory, fixed_strategy_factory, limit_action
from oppmodel.modeling.play.panel import CFR, bundled_profile, named_profile, panel_names

BASE = "n2"


def is_diluted(name: str) -> bool:
    """Whether ``name`` has the ``STYLE@S`` form."""
    return "@" in name


def parse_diluted(name: str) -> tuple[str, float]:
    """(style, share) of ``STYLE@S``; NotFoundError unless 0 < S <= 1."""
    style, _, share_text = name.lower().rpartition("@")
    try:
        share = float(share_text)
    except ValueError:
        share = float("nan")
    if not style or not 0.0 < share <= 1.0:
        raise NotFoundError(f"agent {name!r}: expected STYLE@S with a share S in (0, 1]")
    return style, share


class DilutedAgent:
    """An adaptive agent playing its own style at a share of its decisions and the base (N2) at
    the rest."""

    def __init__(
        self, name: str, inner: RuleAgent, base: np.ndarray, share: float, seed: int
    ) -> None:
        self.name = name
        self.inner = inner
        self.game = inner.game
        self.base = base
        self.share = share
        self.rng = np.random.default_rng(seed)

    def begin_match(self, game: LimitGame, seat: int, names: Sequence[str]) -> None:
        self.inner.begin_match(game, seat, names)

    def act(self, position: int, view: int, betting: str) -> int:
        node = self.game.node(betting)
        own = self.inner.row(position, node, view)
        base = self.base[position, int(self.game.tree.node_base[node]) + view]
        row = self.share * own + (1.0 - self.share) * base
        return limit_action(self.game, node, row, self.rng.random())

    def end_hand(self, obs: LimitObservation) -> None:
        self.inner.end_hand(obs)


def diluted_factory(name: str) -> AgentFactory:
    """A factory ``(game, seed) -> agent`` for ``STYLE@S``."""
    style, share = parse_diluted(name)
    if is_adaptive(style):
        inner_factory = adaptive_factory(style)

        def build(game: LimitGame, seed: int) -> Agent:
            inner_seed, own_seed = np.random.SeedSequence(seed).generate_state(2)
            inner = inner_factory(game, int(inner_seed))
            return DilutedAgent(name, inner, base_profile(game), share, int(own_seed))

        return build

    if style != CFR:
        named_profile(limit_game("kuhn3p"), style)  # NotFoundError now for an unknown style

    def build_fixed(game: LimitGame, seed: int) -> Agent:
        return fixed_strategy_factory(name, diluted_profile(game, name))(game, seed)

    return build_fixed


def diluted_profile(game: LimitGame, name: str) -> np.ndarray:
    """The fixed profile of ``STYLE@S`` for a fixed style: S * style + (1 - S) * base (N2 in
    3-player Kuhn, the solved strategy elsewhere)."""
    style, share = parse_diluted(name)
    if is_adaptive(style):
        raise InvalidArgumentError("agents", f"{name}: an adaptive style has no fixed profile")
    return share * named_profile(game, style) + (1.0 - share) * base_profile(game)


def fixed_profile(game: LimitGame, name: str) -> np.ndarray:
    """The profile of a fixed agent name: a panel name, a fixed ``STYLE@S``, or a strategy file
    (either key style, :func:`oppmodel.modeling.games.acpc.strategy.load_profile`)."""
    if is_strategy_file(name):
        return load_profile(game, name)
    return diluted_profile(game, name) if is_diluted(name) else named_profile(game, name)


def base_profile(game: LimitGame) -> np.ndarray:
    """What a diluted style plays at the decisions it does not play its style: N2 (3-player
    Kuhn) or the game's solved strategy (any other game)."""
    if BASE in panel_names(game):
        return named_profile(game, BASE)
    return bundled_profile(game)
