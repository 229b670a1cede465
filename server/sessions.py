"""Live sessions: the in-memory MBBR models, backed by durable storage, serialised per session.

A session is rebuilt from storage by building its MBBR model from its stored configuration,
restoring its latest snapshot and replaying the stored observations after it in order (the core
guarantees that this is bit-identical to replaying them all), so after a crash or restart every
session resumes with exactly the posterior it had. A snapshot is stored after an update once the
hands since the last one took ``Limits.snapshot_seconds`` to apply or number
``Limits.snapshot_hands``, so a reload replays about that much at most, however long the session.

Observation protocol (per session, sequence numbers 1, 2, ...): sequence ``s`` with
``s <= hands_observed`` is a resend: acknowledged again if it equals the stored observation, refused
(FAILED_PRECONDITION) if it differs; ``s == hands_observed + 1`` is validated, committed, then
applied; anything larger is a gap (FAILED_PRECONDITION). Nothing changes on a refused observation.
Commit and apply succeed or fail together: they run as one change that a cancelled caller cannot
cut short (``server/tasks.py``), and a failed apply undoes its commit. Only the last
``Limits.recent_hands`` hands are kept in memory for comparing resends; older ones are read back.
Several processes may serve one shared store (PostgreSQL): the store accepts a commit only at the
session's stored version (``server/storage.py``), so a process whose copy fell behind another's
appends drops it, reloads and classifies the observations again; no hand is applied twice.

Concurrency: observations of one session are ordered by its writers' lock, held across the commit;
the model itself is updated and read under a second lock held only for the arithmetic, so updates
are applied in order, queries never see a half-applied update, and a query never waits for a
commit (an fsync can take long on a busy disk). With model workers (the server's default) the
models live in child processes (``server/model_worker.py``, a ``HeldModel`` here) and all their
arithmetic runs there; without them, model arithmetic on large tables (building, replaying,
updates and responses with k^(n-1) > ``Limits.inline_joint_samples``) runs on a thread pool so the
event loop keeps serving other sessions, and small tables, cheaper to compute inline than to hand
to a thread, on the loop (see ``_compute``). Storage runs on its own thread.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import functools
import hashlib
import itertools
import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, Future
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

import numpy as np

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    OppModelError,
    ResourceExhaustedError,
    UnavailableError,
)
from oppmodel.modeling.games.acpc.compiler import limit_game, limit_game_of
from oppmodel.modeling.games.acpc.gamedef import parse_game_def
from oppmodel.modeling.games.interface import Hand, HandKey, ServedGame, ServedModel, compiled
from oppmodel.modeling.games.kuhn_openspiel import kuhn_openspiel
from oppmodel.modeling.mbbr.config import (
    FIELDS_ADDED_LATER,
    MBBRConfig,
    Posterior,
    Prior,
    Response,
)
from oppmodel.modeling.mbbr.memory import ENTRY_BYTES
from oppmodel.modeling.mbbr.snapshot import SnapshotError
from oppmodel.modeling.observation import HandObservation, LimitObservation
from oppmodel.server.metrics import Metrics
from oppmodel.server.model_worker import ModelWorker
from oppmodel.server.session_cache import SessionCache
from oppmodel.server.solved_strategies import SolvedStrategies
from oppmodel.server.storage import (
    ObservationRow,
    SessionRow,
    SessionStore,
    SnapshotRow,
    StaleSessionError,
    StoredSession,
)
from oppmodel.server.tasks import ShieldedTasks
from oppmodel.server.turns import TurnTaking

T = TypeVar("T")
log = logging.getLogger("oppmodel.server")

Game = ServedGame  # Kuhn ("kuhn_poker(players=n)") or any compiled ACPC limit game
Model = ServedModel
Observation = Hand
StrategyTable = tuple[tuple[tuple[float, ...], ...], ...]  # (num_players, num_infosets, actions)


class UnloadableSessionError(FailedPreconditionError):
    """A stored session cannot be rebuilt into a model (its spec or observations are no longer
    accepted by this version); it can still be listed and deleted."""

    def __init__(self, owner: str, message: str) -> None:
        super().__init__(message)
        self.owner = owner


class SessionTooLargeError(ResourceExhaustedError):
    """A stored session needs more memory than the whole budget for live sessions."""

    def __init__(self, owner: str, message: str) -> None:
        super().__init__(message)
        self.owner = owner


@dataclass(frozen=True)
class Limits:
    """Server-side bounds; exceeding one is RESOURCE_EXHAUSTED."""

    max_sessions: int = 10_000
    max_k: int = 200
    # k ** (n - 1), the size of one joint posterior table: every k <= 200 with 3 players, k <= 40
    # with 4. A snapshot of a session holds n such tables and is due every ~0.2 s of updates, so
    # its size sets the write volume: 4 players at k = 100 (10^6) took 32 MB every 4-20 hands.
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
    # long to apply (so a reload replays at most about this much) or number this many.
    snapshot_seconds: float = 0.2
    snapshot_hands: int = 1000
    recent_hands: int = 64  # applied hands kept in memory per session to check resends
    max_streams: int = 512  # Observe streams open at once
    stream_idle_seconds: float = 120.0  # an Observe stream that carries nothing this long ends
    max_observe_request_bytes: int = 4096  # one Observe request (an observation is ~30 bytes)
    max_batch_observations: int = 1024  # observations in one ObserveBatch call


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
        return data

    @classmethod
    def from_json(cls, data: dict) -> SessionSpec:
        """Inverse of ``to_json``. A spec stored before MBBRConfig had a posterior has none: its
        session was created with the sample posterior, and keeps it whatever today's default; so
        with every field added later (``FIELDS_ADDED_LATER``): one stored before the safety
        budget keeps playing without one, one stored before change detection without it."""
        config = {"posterior": Posterior.SAMPLES, **FIELDS_ADDED_LATER, **data["config"]}
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
        )


def _strategy_table(nested: list | None) -> StrategyTable | None:
    if nested is None:
        return None
    return tuple(tuple(tuple(float(x) for x in row) for row in pos) for pos in nested)


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


@dataclass
class HeldModel:
    """A session's model that a model worker holds (``server/model_worker.py``): what this
    process knows of it. Each loaded copy of a session has a key of its own."""

    worker: ModelWorker
    key: str
    size: int  # the model's ``nbytes()`` when the worker last reported it

    def nbytes(self) -> int:
        """The model's estimated memory (in the worker's process)."""
        return self.size


@dataclass
class LiveSession:
    """A session loaded in memory.

    ``lock`` orders the writers (observations, deletion) and is held across the commit;
    ``model_lock`` is held only while the model is updated or read, so queries never wait for
    the disk.
    """

    session_id: str
    owner: str
    created_unix_ms: int
    spec: SessionSpec
    game: Game
    model: Model | HeldModel  # here, or held by a model worker
    hands_observed: int  # observations applied (= the last acknowledged sequence number)
    # The last applied hands (at most Limits.recent_hands) as plain (position, history, cards)
    # tuples, for comparing resends without a read (older resends are compared with storage):
    # the collector untracks tuples of atoms, so they cost a full collection nothing.
    recent: collections.deque[HandKey]
    snapshot_hands: int = 0  # hands folded into the latest stored snapshot
    stored_hands: int = 0  # hands this copy knows are stored (committed; applied or being so)
    replay_seconds: float = 0.0  # what applying the hands after it took: the cost of a reload
    seconds_per_hand: float = 0.0  # what the last update took per hand (0: not measured yet)
    nbytes: int = 0  # estimated memory, as counted against Limits.memory_bytes
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    model_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    deleted: bool = False
    evicted: bool = False  # dropped from memory; the next use reloads it from storage

    def estimate_nbytes(self) -> int:
        """The session's estimated memory: its model, its recent hands, a fixed overhead."""
        return self.model.nbytes() + len(self.recent) * ENTRY_BYTES + SESSION_OVERHEAD_BYTES

    def busy(self) -> bool:
        """Whether a writer or a query holds the session (it is not evicted then)."""
        return self.lock.locked() or self.model_lock.locked()

    def info(self) -> SessionInfo:
        """A snapshot of the session's public description."""
        return SessionInfo(self.session_id, self.spec, self.hands_observed, self.created_unix_ms)


def owner_of_token(token: str | None) -> str:
    """The stored owner of sessions created with a bearer token (its SHA-256, never the token)."""
    return "" if token is None else hashlib.sha256(token.encode()).hexdigest()


def game_of(spec: SessionSpec) -> Game:
    """The game of a session spec: n-player Kuhn in OpenSpiel's conventions, or its limit game
    compiled from the rules (compiled games are cached per distinct rules)."""
    if spec.game_def is None:
        return kuhn_openspiel(spec.num_players)
    return _limit_game_of_rules(spec.game_def)


@functools.lru_cache(maxsize=64)  # every listed session asks; the compiler caches the games
def _limit_game_of_rules(rules: str) -> Game:
    return compiled(limit_game_of(parse_game_def(rules)))


def build_model(spec: SessionSpec, solved: np.ndarray | None = None) -> Model:
    """A fresh model for a session spec (deterministic in the spec's seed); ``solved``: its
    game's solved strategy where the spec gives no default strategy or prior mean (a game no
    bundle holds, ``SessionManager.solved_for``)."""
    return game_of(spec).build_model(
        spec.config,
        default_strategy=_array(spec.default_strategy),
        prior_mean=_array(spec.prior_mean),
        solved=solved,
    )


def _array(table: StrategyTable | None) -> np.ndarray | None:
    return None if table is None else np.array(table, dtype=np.float64)


# A hand as stored (``ServedGame.hand_key``): Kuhn's betting in OpenSpiel letters and a card
# number per position (None where hidden); a limit game's ACPC betting and
# ``observation.limit_observation_cards``.
SESSION_OVERHEAD_BYTES = 8192  # a live session's objects besides its model and hands, measured
STALE_TRIES = 3  # reloads of a session that other processes keep appending to, then UNAVAILABLE
WARM_MODELS = "oppmodel.server.warm_models"  # what the model workers' fork server imports


def _key_of_row(row: ObservationRow) -> HandKey:
    return (row.position, row.history, tuple(row.cards))


def _observe_all(model: Model, observations: Sequence[Observation]) -> None:
    for obs in observations:
        model.observe(obs)


def _restored(
    spec_json: dict, snapshot: SnapshotRow | None, solved: np.ndarray | None
) -> tuple[SessionSpec, Model, str | None]:
    """The spec, a model built from it with ``snapshot`` restored if it can be used, and why
    not if it cannot (None if it was used or there is none). A snapshot of another format
    version or of another model (the Kuhn kernels' models, before Kuhn sessions ran on the
    compiled game) is not used: the caller rebuilds the model from all the stored hands."""
    spec = SessionSpec.from_json(spec_json)
    model = build_model(spec, solved)
    if snapshot is not None:
        try:
            model.restore(snapshot.state)
        except SnapshotError as exc:
            return spec, model, str(exc)
        else:
            if model.hands_observed != snapshot.hands:
                raise RuntimeError(
                    f"snapshot of {model.hands_observed} hands stored as {snapshot.hands}"
                )
    return spec, model, None


def _log_unused_snapshot(session_id: str, reason: str | None) -> None:
    """One line saying that a stored session is rebuilt from its hands, and why."""
    if reason is not None:
        log.warning(
            f"session {session_id}: stored snapshot not used ({reason}); rebuilding its model "
            "from every stored hand",
            extra={"session_id": session_id, "reason": reason},
        )


def _replay(game: Game, model: Model, rows: Sequence[ObservationRow]) -> float:
    """Apply stored hands that follow the model's state; returns the seconds it took."""
    start = time.perf_counter()
    for i, row in enumerate(rows, start=model.hands_observed + 1):
        if row.sequence != i:  # never written so: the database was edited under the server
            raise RuntimeError(f"stored hand {row.sequence} where {i} was due")
        model.observe(game.hand_of_key(row.position, row.history, row.cards))
    return time.perf_counter() - start


def _log_snapshot_failure(session_id: str, saving: Future) -> None:
    if not saving.cancelled() and saving.exception() is not None:
        log.warning(
            "snapshot not stored", extra={"session_id": session_id}, exc_info=saving.exception()
        )


# -- what a model worker runs (``server/model_worker.py``) on the models it holds --------------
def _held(models: dict[str, Model], key: str) -> Model:
    model = models.get(key)
    if model is None:  # its worker restarted after the caller found the session
        raise UnavailableError("session_id: the session's model is being reloaded; send again")
    return model


def _held_create(
    models: dict[str, Model], key: str, spec: SessionSpec, solved: np.ndarray | None
) -> int:
    """Build a new session's model and hold it; its nbytes."""
    model = build_model(spec, solved)
    models[key] = model
    return model.nbytes()


def _held_restore(
    models: dict[str, Model],
    key: str,
    spec: dict,
    snapshot: SnapshotRow | None,
    solved: np.ndarray | None,
) -> tuple[int, str | None]:
    """Build a stored session's model with its snapshot restored (``_restored``) and hold it;
    the hands restored (0: no snapshot used) and why the snapshot was not used."""
    _, models[key], unused = _restored(spec, snapshot, solved)
    return models[key].hands_observed, unused


def _held_replay(
    models: dict[str, Model], key: str, game: Game, rows: Sequence[ObservationRow]
) -> tuple[float, int, int]:
    """Apply stored hands after the held model's state: (seconds, hands observed, nbytes)."""
    model = _held(models, key)
    seconds = _replay(game, model, rows)
    return seconds, model.hands_observed, model.nbytes()


def _held_observe(
    models: dict[str, Model], key: str, hands: Sequence[Observation]
) -> tuple[float, int]:
    """Apply ``hands`` to the held model: (seconds of arithmetic, nbytes). A model that fails
    to apply them is dropped (it may hold part of them)."""
    model = _held(models, key)
    start = time.perf_counter()
    try:
        _observe_all(model, hands)
    except BaseException:
        del models[key]
        raise
    return time.perf_counter() - start, model.nbytes()


def _held_call(models: dict[str, Model], key: str, method: str, args: tuple[object, ...]) -> object:
    """``model.method(*args)`` of the held model."""
    return getattr(_held(models, key), method)(*args)


def _held_drop(models: dict[str, Model], key: str) -> None:
    models.pop(key, None)


def warm_up_models() -> None:
    """Compile (or load from numba's cache) every model kernel a request can reach: the first
    update or response otherwise pays the JIT load (~1 s)."""
    configs = [
        MBBRConfig(k=2, hands_default=0, posterior=Posterior.SAMPLES),
        MBBRConfig(hands_default=0, posterior=Posterior.DIRICHLET),
        MBBRConfig(hands_default=0, posterior=Posterior.DIRICHLET, prior=Prior.TYPED),
    ]
    kuhn = kuhn_openspiel(3)  # every game shares the limit-game kernels
    leduc = compiled(limit_game("leduc2p"))
    hands: tuple[tuple[Game, Hand], ...] = (
        (kuhn, HandObservation(0, "ppp", (0, 1, 2))),
        (leduc, LimitObservation(0, "rf", ("Ks", None), ("",))),
    )
    for (game, hand), config in itertools.product(hands, configs):
        model = game.build_model(config)
        model.observe(hand)
        for kind in Response:
            model.response(0, kind)
        model.opponent_model(0, 1)
        model.action_probabilities(1, 0)
        game.build_model(config).restore(model.snapshot())


# What a reload rebuilds: (spec, game, model, hands restored from the snapshot, hands observed,
# the stored hands replayed after them, the seconds the replay took)
_Rebuilt = tuple[SessionSpec, Game, Model | HeldModel, int, int, Sequence[ObservationRow], float]


class _Locked:
    """What ``SessionManager.locked`` returns: a class, not an ``asynccontextmanager``, because
    every observation and query enters one on the event loop (a generator-based one cost a
    generator and its frames per use)."""

    __slots__ = ("_held", "_manager", "_session", "_write")

    def __init__(self, manager: SessionManager, session: LiveSession, write: bool) -> None:
        self._manager = manager
        self._session = session
        self._write = write
        self._held: asyncio.Lock | None = None

    async def __aenter__(self) -> LiveSession:
        session = self._session
        while True:
            lock = session.lock if self._write else session.model_lock
            await lock.acquire()
            if session.deleted:
                lock.release()
                raise NotFoundError(f"session_id: no session {session.session_id!r}")
            if not session.evicted:
                self._held = lock
                return session
            lock.release()
            session = await self._manager.get(session.owner, session.session_id)

    async def __aexit__(self, *exc_info: object) -> None:
        held, self._held = self._held, None
        if held is not None:
            held.release()


class SessionManager:
    """Creates, loads, updates and queries sessions; the servicer's only domain dependency.

    Its method ``list`` shadows the builtin in the class body: annotations there name
    ``builtins.list``.
    """

    def __init__(
        self,
        storage: SessionStore,
        *,
        executor: Executor,
        metrics: Metrics,
        limits: Limits,
        model_workers: int = 0,
    ) -> None:
        """``model_workers``: child processes that hold the sessions' models (0: this process
        holds them, computing small ones on the event loop and large ones on ``executor``)."""
        self.storage = storage
        self.executor = executor
        self.metrics = metrics
        self.limits = limits
        self._changes = ShieldedTasks()
        self._turns = TurnTaking()
        self._workers = [
            ModelWorker(preload=[WARM_MODELS], on_lost=self._lost_worker)
            for _ in range(model_workers)
        ]
        self._next_worker = itertools.cycle(self._workers)
        self.solved = SolvedStrategies(storage, self._cpu, preload=[WARM_MODELS])
        self.cache: SessionCache[LiveSession] = SessionCache(
            budget_bytes=limits.memory_bytes,
            tasks=self._changes,
            what="oppmodel serve --memory-mb",
            on_change=self._count_live,
            on_forget=self._release,
        )

    # -- helpers ---------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Wait for every state change in progress (their callers may be gone) to finish."""
        await self._changes.drain()

    async def start(self) -> None:
        """Start the model workers; returns once they take calls."""
        await asyncio.gather(*(worker.start() for worker in self._workers))

    async def close(self) -> None:
        """Stop the model workers (after ``drain``) and any solve."""
        for worker in self._workers:
            await worker.close()
        await self.solved.close()

    async def solved_for(self, spec: SessionSpec) -> np.ndarray | None:
        """The solved strategy a spec's model needs (``solved_strategies.py``); None if it needs
        none (Kuhn, a game with a bundled or built-in default, a spec giving both profiles).
        GameSolvingError while the game is being solved."""
        game = await self._cpu(game_of, spec)
        needs = functools.partial(
            game.needs_solving,
            default_given=spec.default_strategy is not None,
            prior_given=spec.prior_mean is not None,
        )
        if not await self._cpu(needs):
            return None
        return await self.solved.of(game.compiled)

    def _new_held(self) -> HeldModel:
        """A new key, on the next worker in turn, for a model about to be held."""
        return HeldModel(next(self._next_worker), uuid.uuid4().hex, 0)

    def _release(self, session: LiveSession) -> None:
        """A copy of a session left memory: its worker drops its model."""
        if isinstance(session.model, HeldModel):
            session.model.worker.forget(_held_drop, session.model.key)

    def _lost_worker(self, worker: ModelWorker) -> None:
        """A model worker died: the sessions whose models it held leave memory (their next use
        reloads them from the store, into a new worker)."""
        for session in list(map(self.cache.peek, self.cache.ids())):
            held = None if session is None else session.model
            if session is not None and isinstance(held, HeldModel) and held.worker is worker:
                self.cache.forget(session)

    async def _cpu(self, fn: Callable[..., T], *args: object) -> T:
        """Run model arithmetic on the worker pool."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def run_cpu(self, fn: Callable[[], T]) -> T:
        """Run a costly step of a request (compiling a game) on the worker pool."""
        return await self._cpu(fn)

    async def _compute(self, session: LiveSession, method: str, *args: object) -> Any:
        """``model.method(*args)`` of the session's model: in its model worker if one holds it,
        else inline when small, else on the worker pool.

        A thread hop costs ~0.1 ms plus a wait for the GIL (up to the 5 ms switch interval while
        another thread computes), far more than an update or response of a small table (k = 10:
        ~30 us), and a thread cannot run Python in parallel anyway. So tables up to
        ``Limits.inline_joint_samples`` are computed on the event loop and larger ones on the pool.
        """
        model = session.model
        if isinstance(model, HeldModel):
            return await model.worker.call(_held_call, model.key, method, args)
        fn = getattr(model, method)
        if self._inline(session):
            return fn(*args)
        return await self._cpu(fn, *args)

    def _inline(self, session: LiveSession) -> bool:
        """Whether the session's arithmetic runs on the event loop (see ``_compute``)."""
        joint = session.spec.config.k ** (session.spec.num_players - 1)
        return joint <= self.limits.inline_joint_samples

    def check_limits(self, spec: SessionSpec) -> None:
        """Refuse a spec that would exceed the server's limits (RESOURCE_EXHAUSTED)."""
        lim = self.limits
        if spec.config.k > lim.max_k or spec.config.k ** (spec.num_players - 1) > (
            lim.max_joint_samples
        ):
            raise ResourceExhaustedError(
                f"config.mbbr.k: {spec.config.k} exceeds this server's limit "
                f"(k <= {lim.max_k} and k^(n-1) <= {lim.max_joint_samples})"
            )

    # -- sessions --------------------------------------------------------------------------------
    async def create(self, owner: str, spec: SessionSpec) -> SessionInfo:
        """Validate, store and load a new session (whole even if the caller is cancelled)."""
        return await self._changes.run(self._create(owner, spec))

    async def _create(self, owner: str, spec: SessionSpec) -> SessionInfo:
        self.check_limits(spec)
        game, model = await self._built(spec)  # validates the config and the prior
        session = LiveSession(
            session_id=uuid.uuid4().hex,
            owner=owner,
            created_unix_ms=int(time.time() * 1000),
            spec=spec,
            game=game,
            model=model,
            hands_observed=0,
            recent=collections.deque(maxlen=self.limits.recent_hands),
        )
        try:
            self.cache.check_fits(session)  # refused before anything is stored
            row = SessionRow(session.session_id, owner, session.created_unix_ms, spec.to_json())
            await asyncio.wrap_future(
                self.storage.create_session_async(row, max_sessions=self.limits.max_sessions)
            )
            self.cache.remember(session)
        except BaseException:
            self._release(session)
            raise
        log.info("session created", extra={"session_id": session.session_id, "game": spec.game})
        return session.info()

    async def _built(self, spec: SessionSpec) -> tuple[Game, Model | HeldModel]:
        """A new session's game and model (built in a model worker if there are any)."""
        solved = await self.solved_for(spec)
        game = await self._cpu(game_of, spec)  # compiles a limit game once per rules
        if not self._workers:
            return game, await self._cpu(build_model, spec, solved)
        held = self._new_held()
        held.size = await held.worker.call(_held_create, held.key, spec, solved)
        return game, held

    async def get(self, owner: str, session_id: str) -> LiveSession:
        """The live session, loading and replaying it from storage on first use.

        Sessions of another owner are reported as not found, exactly like missing ones. On a
        store that other processes write too, the copy is checked against the stored version
        (one read) and reloaded if another process appended meanwhile, so every call answers
        from the hands stored when it began.
        """
        session = self.cache.hit(session_id)
        if session is None:
            try:
                load = functools.partial(self._load, session_id)
                session = await self.cache.get(session_id, load)
            except (UnloadableSessionError, SessionTooLargeError) as exc:
                if exc.owner != owner:  # another owner's session: as if it did not exist
                    raise NotFoundError(f"session_id: no session {session_id!r}") from None
                raise
        if session is None or session.deleted or session.owner != owner:
            raise NotFoundError(f"session_id: no session {session_id!r}")
        if self.storage.shared:
            stored = await asyncio.wrap_future(self.storage.observation_count_async(session_id))
            if stored != session.stored_hands:  # another process moved it on: a fresh copy
                self.cache.forget(session)
                return await self.get(owner, session_id)
        return session

    def _count_live(self, sessions: int, nbytes: int) -> None:
        self.metrics.live_sessions.set(sessions)
        self.metrics.live_session_bytes.set(nbytes)

    def locked(self, session: LiveSession, *, write: bool = True) -> _Locked:
        """``async with manager.locked(session) as session``: hold a lock of the session's
        current live object (reloaded if it was evicted).

        ``write``: the writers' lock (held across commits); else the model lock (for reads).
        """
        return _Locked(self, session, write)

    async def _load(self, session_id: str) -> LiveSession | None:
        """Rebuild a stored session: build from its spec, restore its latest snapshot, replay
        the hands after it (all of them if the snapshot cannot be used)."""
        stored = await asyncio.wrap_future(self.storage.load_session_async(session_id))
        if stored is None:
            return None
        row = stored.row
        try:
            rebuild = self._rebuilt_held if self._workers else self._rebuilt_here
            spec, game, model, base, hands, rows, seconds = await rebuild(stored)
        except UnavailableError:  # its model worker died meanwhile: the session is not at fault
            raise
        except Exception as exc:
            log.error("session cannot be loaded", extra={"session_id": session_id}, exc_info=exc)
            reason = str(exc) if isinstance(exc, OppModelError) else "see the server log"
            raise UnloadableSessionError(
                row.owner,
                f"session_id: session {session_id!r} can no longer be loaded ({reason}); "
                "DeleteSession still removes it",
            ) from None
        session = LiveSession(
            session_id=session_id,
            owner=row.owner,
            created_unix_ms=row.created_unix_ms,
            spec=spec,
            game=game,
            model=model,
            hands_observed=hands,
            stored_hands=hands,
            recent=collections.deque(map(_key_of_row, rows), maxlen=self.limits.recent_hands),
            snapshot_hands=base,
            replay_seconds=seconds,
            seconds_per_hand=seconds / len(rows) if rows else 0.0,
        )
        try:
            self.cache.remember(session)
        except ResourceExhaustedError as exc:
            self._release(session)
            raise SessionTooLargeError(row.owner, str(exc)) from None
        log.info(
            "session loaded",
            extra={"session_id": session_id, "hands": session.hands_observed,
                   "replayed": len(rows), "replay_seconds": round(seconds, 4)},
        )  # fmt: skip
        return session

    async def _rows_to_replay(self, stored: StoredSession, base: int) -> Sequence[ObservationRow]:
        """The stored hands after a restored snapshot of ``base`` hands: all of them if the
        snapshot could not be used (``base`` differs from it)."""
        if stored.snapshot is not None and base != stored.snapshot.hands:
            return await asyncio.wrap_future(
                self.storage.load_observations_async(stored.row.session_id)
            )
        return stored.tail

    async def _rebuilt_here(self, stored: StoredSession) -> _Rebuilt:
        """``_load``'s model in this process (on the worker pool)."""
        row = stored.row
        solved = await self.solved_for(SessionSpec.from_json(row.spec))
        spec, model, unused = await self._cpu(_restored, row.spec, stored.snapshot, solved)
        _log_unused_snapshot(row.session_id, unused)
        base = model.hands_observed  # 0 if there is no snapshot or it cannot be used
        rows = await self._rows_to_replay(stored, base)
        game = await self._cpu(game_of, spec)
        seconds = await self._cpu(_replay, game, model, rows)
        return spec, game, model, base, model.hands_observed, rows, seconds

    async def _rebuilt_held(self, stored: StoredSession) -> _Rebuilt:
        """``_load``'s model in a model worker (dropped there if it cannot be rebuilt)."""
        spec = SessionSpec.from_json(stored.row.spec)
        game = await self._cpu(game_of, spec)
        solved = await self.solved_for(spec)
        held = self._new_held()
        try:
            base, unused = await held.worker.call(
                _held_restore, held.key, stored.row.spec, stored.snapshot, solved
            )
            _log_unused_snapshot(stored.row.session_id, unused)
            rows = await self._rows_to_replay(stored, base)
            seconds, hands, held.size = await held.worker.call(_held_replay, held.key, game, rows)
        except BaseException:
            held.worker.forget(_held_drop, held.key)
            raise
        return spec, game, held, base, hands, rows, seconds

    async def list(self, owner: str) -> list[SessionInfo]:
        """The owner's sessions, oldest first (from storage, so unloaded ones are listed too)."""
        rows = await asyncio.wrap_future(self.storage.list_sessions_async(owner))
        return [
            SessionInfo(r.session_id, SessionSpec.from_json(r.spec), n, r.created_unix_ms)
            for r, n in rows
        ]

    async def delete(self, owner: str, session_id: str) -> None:
        """Delete a session and everything stored about it (whole even if the caller is
        cancelled)."""
        await self._changes.run(self._delete(owner, session_id))

    async def _delete(self, owner: str, session_id: str) -> None:
        """Delete from storage without building a model, so that a session whose stored spec
        or observations can no longer be loaded is deleted all the same."""
        live = self.cache.peek(session_id)
        deleting = self.storage.delete_session_async
        if live is not None and live.owner == owner:
            async with live.lock:  # no commit of this session is in flight while it goes
                existed = await asyncio.wrap_future(deleting(session_id, owner=owner))
        else:
            existed = await asyncio.wrap_future(deleting(session_id, owner=owner))
        if not existed:
            raise NotFoundError(f"session_id: no session {session_id!r}")
        loading = self.cache.loading(session_id)
        if loading is not None:  # a load that read the session before it went
            await asyncio.wait([loading])
        for session in (live, self.cache.peek(session_id)):
            if session is not None:
                session.deleted = True
                self.cache.forget(session)
        log.info("session deleted", extra={"session_id": session_id})

    # -- observations ----------------------------------------------------------------------------
    async def observe(
        self,
        session: LiveSession,
        items: Sequence[tuple[int, Observation]],
        *,
        all_or_nothing: bool = False,
    ) -> tuple[builtins.list[Ack], Exception | None]:
        """Apply validated observations (sequence, hand) in order; one commit for all new ones.

        Returns the acknowledgements of the longest acceptable prefix and the error that stopped
        it (None if all were accepted); with ``all_or_nothing``, no acknowledgement and nothing
        committed if any item is refused (ObserveBatch). Each acknowledgement reports
        hands_observed exactly as if the items had been applied one by one. Nothing is applied
        before its commit returns, and a commit holds all new items of the prefix or none,
        unless they would take more than ``Limits.snapshot_seconds`` to apply: then they go in
        several commits, in order (see ``_chunk_size``). Commits and applies run as one
        shielded change: a cancelled caller leaves either nothing or the hands committed and
        applied.
        """
        return await self._changes.run(self._observe(session, items, all_or_nothing))

    async def _observe(
        self, session: LiveSession, items: Sequence[tuple[int, Observation]], all_or_nothing: bool
    ) -> tuple[builtins.list[Ack], Exception | None]:
        """``_observe_at_version``, again on a reloaded copy while the store says that another
        process appended to the session meanwhile (our copy was stale; nothing was applied).

        Hands committed by an earlier chunk of this call are acknowledged as duplicates then."""
        for _ in range(STALE_TRIES):
            try:
                return await self._observe_at_version(session, items, all_or_nothing)
            except StaleSessionError:
                session = await self.get(session.owner, session.session_id)
        raise UnavailableError(
            f"session_id: session {session.session_id!r} is being written by other servers; "
            "send again"
        )

    async def _observe_at_version(
        self, session: LiveSession, items: Sequence[tuple[int, Observation]], all_or_nothing: bool
    ) -> tuple[builtins.list[Ack], Exception | None]:
        async with self.locked(session) as session:
            before = session.hands_observed
            new: list[Observation] = []
            acks: list[Ack] = []
            error: Exception | None = None
            for i, (sequence, obs) in enumerate(items):
                expected = before + len(new) + 1
                field = f"observations[{i}].sequence" if all_or_nothing else "observation.sequence"
                if sequence < 1:
                    error = InvalidArgumentError(field, "must be >= 1")
                    break
                if sequence > expected:
                    await self._check_version(session)  # a gap only if no one else moved on
                    error = FailedPreconditionError(
                        f"{field}: expected {expected}, got {sequence} (a gap)"
                    )
                    break
                if sequence < expected:
                    applied = (
                        await self._applied(session, sequence)
                        if sequence <= before
                        else session.game.hand_key(new[sequence - before - 1])
                    )
                    if applied != session.game.hand_key(obs):
                        error = FailedPreconditionError(
                            f"{field}: {sequence} was already applied with different content"
                        )
                        break
                    acks.append(Ack(sequence, True, before + len(new)))
                    continue
                new.append(obs)
                acks.append(Ack(sequence, False, before + len(new)))
            if error is not None and all_or_nothing:
                return [], error
            try:
                while new:
                    size = self._chunk_size(session)
                    await self._commit_and_apply(session, new[:size])
                    new = new[size:]
            except StaleSessionError:  # the store moved on without us: our copy must go
                self.cache.forget(session)
                raise
            except NotFoundError:  # deleted by another process
                session.deleted = True
                self.cache.forget(session)
                raise
            return acks, error

    async def _check_version(self, session: LiveSession) -> None:
        """StaleSessionError (and our copy dropped) if the store holds other than the hands our
        copy has applied: another process appended to the session (a shared store)."""
        stored = await asyncio.wrap_future(self.storage.observation_count_async(session.session_id))
        if stored != session.hands_observed:
            self.cache.forget(session)
            raise StaleSessionError(session.session_id, stored, session.hands_observed + 1)

    def _chunk_size(self, session: LiveSession) -> int:
        """Hands committed and applied together: about ``Limits.snapshot_seconds`` of updates.

        What is committed but not yet in a snapshot is what a reload after a crash replays, so
        a large batch for a costly session goes in several commits, each followed by a
        snapshot when one is due.
        """
        if session.seconds_per_hand <= 0.0:
            return 16  # not measured yet
        return max(1, int(self.limits.snapshot_seconds / session.seconds_per_hand))

    async def _commit_and_apply(
        self, session: LiveSession, new: builtins.list[Observation]
    ) -> None:
        """Commit ``new`` (the next hands of the session) and apply them, both or neither;
        store a snapshot if one is due. The caller holds the session's writers' lock."""
        before = session.hands_observed
        keys = [session.game.hand_key(obs) for obs in new]
        rows = [ObservationRow(before + 1 + i, *key) for i, key in enumerate(keys)]
        await asyncio.wrap_future(self.storage.append_observations_async(session.session_id, rows))
        session.stored_hands = before + len(rows)
        async with session.model_lock:
            try:
                seconds = await self._apply(session, new)
            except Exception:
                # Never half done: the commit is undone and the model, which may hold part of
                # the hands, is dropped (the next use reloads it from storage).
                await asyncio.wrap_future(
                    self.storage.truncate_observations_async(session.session_id, keep=before)
                )
                self.cache.forget(session)
                raise
            session.replay_seconds += seconds
            session.seconds_per_hand = seconds / len(new)
            session.hands_observed += len(new)
            session.recent.extend(keys)
            self.cache.resize(session)
            if (
                session.replay_seconds >= self.limits.snapshot_seconds
                or session.hands_observed - session.snapshot_hands >= self.limits.snapshot_hands
            ):
                await self._snapshot(session)
        self.metrics.observations.inc(len(new))

    async def _apply(self, session: LiveSession, new: builtins.list[Observation]) -> float:
        """Apply ``new`` to the session's model (the caller holds its model lock); returns the
        seconds of arithmetic it took.

        On the event loop (small tables, see ``_compute``) the hands go in pieces of about
        ``Limits.inline_slice_seconds``, one piece per turn of the loop, the sessions taking
        turns (``turns.py``): a group commit completes the hands of many sessions at once, and a
        commit may hold ~0.2 s of one session's updates (``_chunk_size``); applied in one turn,
        either held up every request arriving meanwhile. This session's readers wait on the
        model lock, so none sees a half-applied batch. A model worker applies them in one go
        and returns, with them, the policies that GetAction asked of the session before.
        """
        model = session.model
        if isinstance(model, HeldModel):
            seconds, model.size = await model.worker.call(_held_observe, model.key, new)
            return seconds
        if not self._inline(session):
            start = time.perf_counter()
            await self._cpu(_observe_all, model, new)
            return time.perf_counter() - start
        seconds, done, piece = 0.0, 0, self.limits.inline_slice_seconds
        while done < len(new):
            await self._turns.take()
            start = time.perf_counter()
            while True:  # this turn's piece
                model.observe(new[done])
                done += 1
                if done == len(new) or time.perf_counter() - start >= piece:
                    break
            seconds += time.perf_counter() - start
        return seconds

    async def _applied(self, session: LiveSession, sequence: int) -> HandKey:
        """The applied hand ``sequence`` (<= hands_observed): from memory if recent, else read."""
        first_recent = session.hands_observed - len(session.recent) + 1
        if sequence >= first_recent:
            return session.recent[sequence - first_recent]
        row = await asyncio.wrap_future(
            self.storage.load_observation_async(session.session_id, sequence)
        )
        if row is None:  # never written so: the database was edited under the server
            raise RuntimeError(f"session {session.session_id}: hand {sequence} is not stored")
        return _key_of_row(row)

    async def _snapshot(self, session: LiveSession) -> None:
        """Store a snapshot of the session's model (under its model lock, after an update).

        Not awaited: the hands are durable already, and a snapshot only shortens reloads; it is
        queued behind the commit of its hands, so it never covers a hand that is not stored.
        """
        try:
            state = await self._compute(session, "snapshot")
        except Exception as exc:  # a bug; the hands are stored and applied all the same
            log.error("snapshot failed", extra={"session_id": session.session_id}, exc_info=exc)
            return
        saving = self.storage.save_snapshot_async(
            session.session_id, SnapshotRow(session.hands_observed, state)
        )
        saving.add_done_callback(functools.partial(_log_snapshot_failure, session.session_id))
        session.snapshot_hands = session.hands_observed
        session.replay_seconds = 0.0

    # -- queries ---------------------------------------------------------------------------------
    async def model(
        self, session: LiveSession, opponent_label: str, opponent_position: int
    ) -> tuple[np.ndarray, float, int, int]:
        """(probabilities, ESS, our position, hands) of one opponent in one position."""
        spec = session.spec
        if opponent_label not in spec.opponent_labels:
            raise InvalidArgumentError(
                "opponent_label", f"{opponent_label!r} is not one of {list(spec.opponent_labels)}"
            )
        session.game.check_position(opponent_position, "opponent_position")
        offset = spec.opponent_labels.index(opponent_label) + 1
        our_position = (opponent_position - offset) % spec.num_players
        async with self.locked(session, write=False) as session:
            probs, ess = await self._compute(
                session, "opponent_model", our_position, opponent_position
            )
            hands = session.hands_observed
        self.metrics.ess.observe(ess)
        return probs, float(ess), our_position, hands

    async def response(
        self, session: LiveSession, our_position: int, kind: str | None
    ) -> tuple[np.ndarray, float, str, int]:
        """(strategy, expected value, kind, hands) of our best response."""
        session.game.check_position(our_position, "our_position")
        kind = kind or session.spec.config.response
        async with self.locked(session, write=False) as session:
            strategy, value = await self._compute(session, "response", our_position, kind)
            hands = session.hands_observed
        return strategy, float(value), kind, hands

    async def action(
        self, session: LiveSession, *, position: int, infoset: int, draw: int
    ) -> ActionChoice:
        """The policy's action at our information set ``infoset`` (an index of the session's
        game, checked by the caller) in ``position``."""
        game = session.game
        async with self.locked(session, write=False) as session:
            hands = session.hands_observed
            # solves only the deals of this hole of ours, once per change of the posterior
            row = await self._compute(session, "action_probabilities", position, infoset)
        probabilities = tuple(np.asarray(row, dtype=np.float64).tolist())
        u = uniform_draw(session.spec.config.seed, hands, position, infoset, draw)
        return ActionChoice(
            action=draw_action(probabilities, u),
            probabilities=probabilities,
            infostate=game.infoset_string(position, infoset),
            default_policy=hands < session.spec.config.hands_default,
            hands_observed=hands,
        )


_MASK64 = (1 << 64) - 1


def _splitmix64(x: int) -> int:
    """One step of SplitMix64 (Steele, Lea & Flood 2014): a strong 64-bit mixing function."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def uniform_draw(*keys: int) -> float:
    """A uniform number in [0, 1) that is a fixed function of the integer keys.

    The action draw is keyed by (seed, hands observed, position, infoset, draw) so the same
    question always gets the same answer; a hash costs ~2 us where a seeded numpy Generator costs
    ~50 us, and this runs on every GetAction.
    """
    h = 0
    for key in keys:
        h = _splitmix64(h ^ (key & _MASK64))
    return (h >> 11) / float(1 << 53)


def draw_action(probabilities: tuple[float, ...], u: float) -> int:
    """The action whose cumulative-probability interval contains ``u * sum(probabilities)``."""
    target = u * sum(probabilities)
    total = 0.0
    for action, p in enumerate(probabilities):
        total += p
        if target < total:
            return action
    return max(a for a, p in enumerate(probabilities) if p > 0)


def _budget_to_json(config: MBBRConfig) -> float | None:
    """The safety budget as standard JSON: null when off (infinite)."""
    return None if math.isinf(config.safety_budget) else config.safety_budget
