"""Perfect-information sessions: what a session is created from, its validation, the limits.

A session models each opponent of a perfect-information game (Spades for now) as a mixture of
the search's models, with a Dirichlet prior over the mixture weights (Sturtevant et al. 2006,
"Learning in Prob-Max^n"); the spec below is stored as JSON and is enough to rebuild it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from oppmodel.modeling.errors import (
    InvalidArgumentError,
    ResourceExhaustedError,
    UnknownGameError,
)
from oppmodel.modeling.games.spades.cards import N_PLAYERS
from oppmodel.modeling.games.spades.scoring import MODEL_LABELS

SPADES3P = "spades3p"
GAME_MODELS: dict[str, tuple[str, ...]] = {SPADES3P: MODEL_LABELS}
"""Games a session can be about, with the model names their search knows."""
GAME_OPPONENTS: dict[str, int] = {SPADES3P: N_PLAYERS - 1}


@dataclass(frozen=True)
class PerfectInfoLimits:
    """Server-side bounds of perfect-information sessions; exceeding one is RESOURCE_EXHAUSTED."""

    max_sessions: int = 10_000
    max_label_length: int = 128
    max_models: int = 16
    max_children: int = 256  # children of one choice given as utilities
    max_choices_per_message: int = 1024
    # Gibbs work behind one posterior: choices x (sweeps + burn_in) x chains (~25M per second here)
    max_gibbs_updates: int = 250_000_000
    max_sweeps: int = 100_000  # burn-in included
    max_chains: int = 16
    max_search_cards: int = 7  # cards a player may still hold in a searched Spades position
    max_live_sessions: int = 1000
    # Estimated bytes of the sessions kept in memory; the least recently used idle ones leave
    # memory beyond it or beyond max_live_sessions (and reload on their next use).
    memory_bytes: int = 256 << 20


@dataclass(frozen=True)
class GibbsConfig:
    """Settings of the collapsed Gibbs sampler (``gibbs_posterior``)."""

    sweeps: int = 1000
    burn_in: int = 200
    chains: int = 4
    level: float = 0.95


@dataclass(frozen=True)
class OpponentSpec:
    """One opponent: label, model names, and the Dirichlet prior (one alpha per model)."""

    label: str
    models: tuple[str, ...]
    alpha: tuple[float, ...]


@dataclass(frozen=True)
class PerfectInfoSpec:
    """Everything a session is created from; stored as JSON."""

    game: str
    opponents: tuple[OpponentSpec, ...]
    gibbs: GibbsConfig
    seed: int

    def to_json(self) -> dict:
        """A JSON-serialisable dict."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> PerfectInfoSpec:
        """Inverse of ``to_json``."""
        return cls(
            game=data["game"],
            opponents=tuple(
                OpponentSpec(o["label"], tuple(o["models"]), tuple(float(a) for a in o["alpha"]))
                for o in data["opponents"]
            ),
            gibbs=GibbsConfig(**data["gibbs"]),
            seed=int(data["seed"]),
        )

    def opponent_index(self, label: str, field_name: str) -> int:
        """Index of the opponent called ``label`` (InvalidArgumentError naming ``field_name``)."""
        for i, opponent in enumerate(self.opponents):
            if opponent.label == label:
                return i
        labels = [o.label for o in self.opponents]
        raise InvalidArgumentError(field_name, f"{label!r} is not one of {labels}")


def check_count(count: int, field: str, limit: int, one: str, many: str) -> None:
    """A repeated field of ``count`` entries holds 1..``limit``: none is InvalidArgumentError
    ("needs at least one ``one``"), more than the server's limit ResourceExhaustedError ("at most
    ``limit`` ``many``", e.g. "models per opponent")."""
    if count == 0:
        raise InvalidArgumentError(field, f"needs at least one {one}")
    if count > limit:
        raise ResourceExhaustedError(f"{field}: at most {limit} {many}")


def validate_spec(spec: PerfectInfoSpec, limits: PerfectInfoLimits) -> None:
    """Raise InvalidArgumentError (field paths under ``config``) or ResourceExhaustedError."""
    if spec.game not in GAME_MODELS:
        raise UnknownGameError("config.game", f"unknown game {spec.game!r}; try {SPADES3P!r}")
    known = GAME_MODELS[spec.game]
    wanted = GAME_OPPONENTS[spec.game]
    if len(spec.opponents) != wanted:
        raise InvalidArgumentError(
            "config.opponents", f"{spec.game} has {wanted} opponents, got {len(spec.opponents)}"
        )
    labels: set[str] = set()
    for i, opponent in enumerate(spec.opponents):
        where = f"config.opponents[{i}]"
        if not opponent.label or len(opponent.label) > limits.max_label_length:
            raise InvalidArgumentError(
                f"{where}.label", f"must be 1..{limits.max_label_length} characters"
            )
        if opponent.label in labels:
            raise InvalidArgumentError(f"{where}.label", f"{opponent.label!r} is used twice")
        labels.add(opponent.label)
        check_count(
            len(opponent.models),
            f"{where}.models",
            limits.max_models,
            "model",
            "models per opponent",
        )
        for j, name in enumerate(opponent.models):
            if name not in known:
                raise InvalidArgumentError(
                    f"{where}.models[{j}]", f"unknown model {name!r} for {spec.game}; use {known}"
                )
            if name in opponent.models[:j]:
                raise InvalidArgumentError(f"{where}.models[{j}]", f"{name!r} is given twice")
        if len(opponent.alpha) != len(opponent.models):
            raise InvalidArgumentError(
                f"{where}.alpha", f"needs {len(opponent.models)} entries, got {len(opponent.alpha)}"
            )
        if not all(np.isfinite(a) and a > 0 for a in opponent.alpha):
            raise InvalidArgumentError(
                f"{where}.alpha", f"entries must be finite and > 0, got {list(opponent.alpha)}"
            )
    g = spec.gibbs
    bounds = (("sweeps", g.sweeps, 4), ("burn_in", g.burn_in, 0), ("chains", g.chains, 2))
    for name, value, low in bounds:
        if value < low:
            raise InvalidArgumentError(f"config.gibbs.{name}", f"must be >= {low}, got {value}")
    if not 0.0 < g.level < 1.0:
        raise InvalidArgumentError("config.gibbs.level", f"must be in (0, 1), got {g.level}")
    if g.sweeps + g.burn_in > limits.max_sweeps or g.chains > limits.max_chains:
        raise ResourceExhaustedError(
            f"config.gibbs: sweeps + burn_in <= {limits.max_sweeps} and chains <= "
            f"{limits.max_chains} on this server"
        )
    if not 0 <= spec.seed < 2**64:
        raise InvalidArgumentError("config.seed", "must be in 0..2^64-1")
