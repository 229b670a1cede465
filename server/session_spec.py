"""Opponent-model sessions: what a session is created from, the server's limits, what callers see.

The spec is stored as JSON and is enough to rebuild the session; ``SessionSpec.from_json`` reads
every spec an earlier release stored (fields added since take the value those sessions were
created with). The records (``SessionInfo``, ``Ack``, ``ActionChoice``) are what the manager
(``server/sessions.py``) answers and ``server/conversion.py`` writes into messages.
"""

from __future__ import annotations

import functools
import math
from dataclasses import asdict, dataclass, field

import numpy as np

from oppmodel.modeling.errors import ResourceExhaustedError
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.interface import Hand, ServedGame, ServedModel
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.holdem.served import served_limit_game
from oppmodel.modeling.mbbr.config import FIELDS_ADDED_LATER, MBBRConfig, Posterior, Prior
from oppmodel.v1_services import MAX_BATCH

Game = ServedGame  # Kuhn ("kuhn_poker(players=n)") or any compiled ACPC limit game
Model = ServedModel
Observation = Hand
StrategyTable = tuple[tuple[tuple[float, ...], ...], ...]  # (num_players, num_infosets, actions)


@dataclass(frozen=True)
class Limits:
    """Server-side bounds; exceeding one is RESOURCE_EXHAUSTED."""

    max_sessions: int = 10_000
    max_k: int = 200
    # k ** (n - 1), the size of one joint posterior table: every k <= 200 with 3 players, k <= 40
    # with 4. A snapshot of a session holds n such tables (4 players at k = 100, 10^6: 32 MB);
    # its cost spaces the snapshots (``snapshot_cost_factor``), so its size sets the reload's tail.
    max_joint_samples: int = 1 << 16
    max_label_length: int = 128
    inline_joint_samples: int = 1024  # tables up to this size are computed on the event loop
    # Model updates on the event loop go in pieces of about this much, one piece per turn of
    # the loop, sessions taking turns (``turns.py``): requests arriving meanwhile are not held up.
    inline_slice_seconds: float = 0.001
    # Estimated bytes of the sessions kept in memory (``LiveSession.nbytes``): the least recently
    # used idle ones leave memory beyond it (and reload on their next use); a session that alone
    # needs more is refused.
    memory_bytes: int = 1 << 30
    # A snapshot of a session's model is stored once the hands after the last one took this
    # long to apply (so a reload replays at most about this much) or number this many, and no
    # sooner than their replay is worth ``snapshot_cost_factor`` times what the last snapshot
    # cost: the seconds from asking the model for it to its store having it, and at least its
    # bytes at ``snapshot_write_rate`` (a write the disk caches returns at once; its bytes are
    # written all the same). Snapshots then take about a tenth of the time spent applying
    # hands at most, whatever their size, and a reload replays about ten snapshots' cost at
    # most (session_observer.py). A Kuhn or Leduc 2p snapshot (25-250 KB) costs milliseconds:
    # 0.2 s rules there; a hold'em one (~5 MB, 0.1 s) is written every ~1 s of updates.
    snapshot_seconds: float = 0.2
    snapshot_hands: int = 1000
    snapshot_cost_factor: float = 10.0
    snapshot_write_rate: float = 50e6  # bytes a second
    recent_hands: int = 64  # applied hands kept in memory per session to check resends
    max_streams: int = 512  # streams (Observe, GetActions) open at once
    stream_idle_seconds: float = 120.0  # a stream that carries nothing this long ends
    max_observe_request_bytes: int = 4096  # one streamed request (an observation is ~30 bytes)
    max_batch_observations: int = MAX_BATCH  # observations in one ObserveBatch call

    def snapshot_write_seconds(self, nbytes: int) -> float:
        """The least a snapshot of ``nbytes`` costs: its bytes at ``snapshot_write_rate``."""
        return nbytes / self.snapshot_write_rate

    def check(self, spec: SessionSpec) -> None:
        """Refuse a spec that would exceed these limits (RESOURCE_EXHAUSTED)."""
        k = spec.config.k
        if k > self.max_k or k ** (spec.num_players - 1) > self.max_joint_samples:
            raise ResourceExhaustedError(
                f"config.mbbr.k: {k} exceeds this server's limit "
                f"(k <= {self.max_k} and k^(n-1) <= {self.max_joint_samples})"
            )

    def inline(self, spec: SessionSpec) -> bool:
        """Whether a session's model arithmetic runs on the event loop when this process holds
        its model: its joint table is small (``inline_joint_samples``)."""
        small = spec.config.k ** (spec.num_players - 1) <= self.inline_joint_samples
        return small and game_of(spec).runs_inline


@dataclass(frozen=True)
class SessionSpec:
    """Everything a session is created from; stored as JSON and enough to rebuild it.

    A Kuhn session has ``game`` "kuhn_poker(players=n)" and no ``game_def``; a limit-game session
    has the rules' text in ``game_def`` (stored, so the session never depends on a file) and in
    ``game`` the bundled short name of those rules ("leduc3p") or "acpc". The two keys
    ``game_def`` and ``default_strategy`` are stored only when set: a Kuhn spec's JSON is what
    the releases before limit games wrote and read.
    """

    game: str
    num_players: int
    our_label: str
    opponent_labels: tuple[str, ...]
    config: MBBRConfig
    # Opponents' prior mean, per position: a (num_infosets, num_actions) table; None = the default.
    prior_mean: StrategyTable | None = None
    game_def: str | None = None  # the ACPC rules of a limit game; None: Kuhn
    default_strategy: StrategyTable | None = None  # as prior_mean; None = the default
    # prior "population": the owner's population version it started from (0: none was fitted,
    # the informed prior), stored; ``population`` its bytes, read from the store by version
    # (``server/populations.py``) and never in the JSON
    population_version: int | None = None
    population: bytes | None = field(default=None, repr=False, compare=False)

    def to_json(self) -> dict:
        """A JSON-serialisable dict."""
        data = {
            "game": self.game,
            "num_players": self.num_players,
            "our_label": self.our_label,
            "opponent_labels": list(self.opponent_labels),
            "config": {**asdict(self.config), "safety_budget": _budget_to_json(self.config)},
            "prior_mean": self.prior_mean,
        }
        if self.game_def is not None:
            data["game_def"] = self.game_def
        if self.default_strategy is not None:
            data["default_strategy"] = self.default_strategy
        if self.population_version is not None:
            data["population_version"] = self.population_version
        return data

    @classmethod
    def from_json(cls, data: dict) -> SessionSpec:
        """Inverse of ``to_json``. A spec stored before MBBRConfig had a posterior has none: its
        session was created with the sample posterior, and keeps it whatever today's default; so
        with every field added later (``FIELDS_ADDED_LATER``): one stored before the safety
        budget keeps playing without one, one stored before change detection without it, a mixture
        prior stored before ``mixture_eta`` with its informed type at eta."""
        config = {"posterior": Posterior.SAMPLES, **FIELDS_ADDED_LATER, **data["config"]}
        if "mixture_eta" not in data["config"] and config.get("prior") == Prior.MIXTURE:
            config["mixture_eta"] = config["eta"]  # its informed type was Dirichlet(eta x mean)
        if config.get("safety_budget") is None:  # before the budget existed, or off (null)
            config["safety_budget"] = math.inf
        return cls(
            game=data["game"],
            num_players=int(data["num_players"]),
            our_label=data["our_label"],
            opponent_labels=tuple(data["opponent_labels"]),
            config=MBBRConfig(**config),
            prior_mean=_strategy_table(data.get("prior_mean")),
            game_def=data.get("game_def"),
            default_strategy=_strategy_table(data.get("default_strategy")),
            population_version=data.get("population_version"),
        )


def _strategy_table(nested: list | None) -> StrategyTable | None:
    if nested is None:
        return None
    return tuple(tuple(tuple(float(x) for x in row) for row in pos) for pos in nested)


def _budget_to_json(config: MBBRConfig) -> float | None:
    """The safety budget as standard JSON: null when off (infinite)."""
    return None if math.isinf(config.safety_budget) else config.safety_budget


def game_of(spec: SessionSpec) -> Game:
    """The game of a session spec: n-player Kuhn in OpenSpiel's conventions, or its limit game
    compiled from the rules (compiled games are cached per distinct rules)."""
    if spec.game_def is None:
        return kuhn_openspiel(spec.num_players)
    return _limit_game_of_rules(spec.game_def)


@functools.lru_cache(maxsize=64)  # every listed session asks; the compiler caches the games
def _limit_game_of_rules(rules: str) -> Game:
    return served_limit_game(parse_game_def(rules))


@dataclass(frozen=True)
class SessionInfo:
    """What callers see of a session."""

    session_id: str
    spec: SessionSpec
    hands_observed: int
    created_unix_ms: int


@dataclass(frozen=True)
class Ack:
    """The acknowledgement of one observation: durable and applied (or applied before)."""

    sequence: int
    duplicate: bool
    hands_observed: int


@dataclass(frozen=True)
class ActionChoice:
    """The action the policy picks at an information state, and why."""

    action: int
    probabilities: tuple[float, ...]
    infostate: str
    default_policy: bool
    hands_observed: int


@dataclass(frozen=True)
class ResponseAnswer:
    """GetResponse's answer: the ``kind`` best response in our position and its expected value,
    the hands it rests on, and (None unless asked for) the policy played now and its value
    against the posterior-mean models (chips per hand)."""

    strategy: np.ndarray
    value: float
    kind: str
    hands: int
    played: tuple[np.ndarray, float] | None
