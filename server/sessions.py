"""Opponent-model sessions: created, loaded, observed and queried, backed by durable storage.

``SessionManager`` is the servicer's only domain dependency. A stored session is rebuilt on first
use from its spec, its latest snapshot and the hands after it (``server/session_models.py``), so
after a crash or restart every session resumes with exactly the posterior it had; the least
recently used idle sessions leave memory beyond ``Limits.memory_bytes`` (``session_cache.py``).

The rest of the sessions' machinery, one concern per module: the spec, the limits and the records
callers see (``session_spec.py``); where the models live and compute, this process or model
workers (``model_hosting.py``); a live session and its locks (``live_session.py``); the
observation protocol, with its commits and snapshots (``session_observer.py``). Storage runs on
its own thread.
"""

from __future__ import annotations

import asyncio
import builtins
import collections
import functools
import hashlib
import logging
import time
import uuid
from array import array
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import TypeVar

import numpy as np

from oppmodel.modeling.errors import (
    InvalidArgumentError,
    NotFoundError,
    OppModelError,
    ResourceExhaustedError,
    UnavailableError,
)
from oppmodel.modeling.games.interface import Decision
from oppmodel.modeling.mbbr.base import OpponentInsight
from oppmodel.server.action_draw import draw_action, uniform_draw
from oppmodel.server.live_session import LiveSession, SessionLock
from oppmodel.server.metrics import Metrics
from oppmodel.server.model_hosting import WARM_MODELS, Call, ModelHost, placement
from oppmodel.server.model_worker import ModelWorker
from oppmodel.server.populations import Populations
from oppmodel.server.session_cache import SessionCache
from oppmodel.server.session_models import (
    SessionTooLargeError,
    UnloadableSessionError,
    key_of_row,
    log_unused_snapshot,
)
from oppmodel.server.session_observer import SessionObserver
from oppmodel.server.session_spec import (
    Ack,
    ActionChoice,
    Game,
    Limits,
    Observation,
    ResponseAnswer,
    SessionInfo,
    SessionSpec,
    game_of,
)
from oppmodel.server.solved_strategies import SolvedStrategies
from oppmodel.server.storage import (
    ObservationRow,
    SessionRow,
    SessionStore,
    StoredSession,
)
from oppmodel.server.tasks import ShieldedTasks

T = TypeVar("T")
WINNINGS_READ_HANDS = 100_000  # stored hands read at a time when a session's winnings are built
log = logging.getLogger("oppmodel.server")


def owner_of_token(token: str | None) -> str:
    """The stored owner of sessions created with a bearer token (its SHA-256, never the token)."""
    return "" if token is None else hashlib.sha256(token.encode()).hexdigest()


# What a reload rebuilds: (spec, game, model, hands restored from the snapshot, hands observed,
# the stored hands replayed after them, the seconds the replay took)
_Rebuilt = tuple[SessionSpec, Game, ModelHost, int, int, Sequence[ObservationRow], float]


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
        self._placement = placement(model_workers, self._cpu, limits, self._lost_worker)
        self.solved = SolvedStrategies(storage, self._cpu, preload=[WARM_MODELS])
        self.populations = Populations(storage, self._cpu, self._changes)
        self.cache: SessionCache[LiveSession] = SessionCache(
            budget_bytes=limits.memory_bytes,
            tasks=self._changes,
            what="oppmodel serve --memory-mb",
            on_change=self._count_live,
            on_forget=self._release,
        )
        self._observer = SessionObserver(storage, self.cache, limits, metrics, self.get)

    # -- helpers ---------------------------------------------------------------------------------
    async def drain(self) -> None:
        """Wait for every state change in progress (their callers may be gone) to finish."""
        await self._changes.drain()

    async def start(self) -> None:
        """Start the model workers (if any); returns once they take calls."""
        await self._placement.start()

    async def close(self) -> None:
        """Stop the model workers (after ``drain``) and any solve."""
        await self._placement.close()
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

    def _release(self, session: LiveSession) -> None:
        """A copy of a session left memory: so does its model."""
        session.host.release()

    def _lost_worker(self, worker: ModelWorker) -> None:
        """A model worker died: the sessions whose models it held leave memory (their next use
        reloads them from the store, into a new worker)."""
        for session in list(map(self.cache.peek, self.cache.ids())):
            if session is not None and session.host.held_by(worker):
                self.cache.forget(session)

    async def _cpu(self, fn: Callable[..., T], *args: object) -> T:
        """Run model arithmetic on the worker pool."""
        return await asyncio.get_running_loop().run_in_executor(self.executor, fn, *args)

    async def run_cpu(self, fn: Callable[[], T]) -> T:
        """Run a costly step of a request (compiling a game) on the worker pool."""
        return await self._cpu(fn)

    # -- sessions --------------------------------------------------------------------------------
    async def create(self, owner: str, spec: SessionSpec) -> SessionInfo:
        """Validate, store and load a new session (whole even if the caller is cancelled)."""
        return await self._changes.run(self._create(owner, spec))

    async def _create(self, owner: str, spec: SessionSpec) -> SessionInfo:
        self.limits.check(spec)
        spec = await self.populations.resolve(owner, spec)
        solved = await self.solved_for(spec)
        game = await self._cpu(game_of, spec)  # compiles a limit game once per rules
        host = await self._placement.create(spec, solved)  # validates the config and the prior
        session = LiveSession(
            session_id=uuid.uuid4().hex,
            owner=owner,
            created_unix_ms=int(time.time() * 1000),
            spec=spec,
            game=game,
            host=host,
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

    def locked(self, session: LiveSession, *, write: bool = True) -> SessionLock:
        """``async with manager.locked(session) as session``: hold a lock of the session's
        current live object (reloaded if it was evicted).

        ``write``: the writers' lock (held across commits); else the model lock (for reads).
        """
        return SessionLock(session, write, self.get)

    async def _load(self, session_id: str) -> LiveSession | None:
        """Rebuild a stored session: build from its spec, restore its latest snapshot, replay
        the hands after it (all of them if the snapshot cannot be used)."""
        stored = await asyncio.wrap_future(self.storage.load_session_async(session_id))
        if stored is None:
            return None
        row = stored.row
        try:
            spec, game, host, base, hands, rows, seconds = await self._rebuilt(stored)
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
            host=host,
            hands_observed=hands,
            stored_hands=hands,
            recent=collections.deque(map(key_of_row, rows), maxlen=self.limits.recent_hands),
            snapshot_hands=base,
            replay_seconds=seconds,
            seconds_per_hand=seconds / len(rows) if rows else 0.0,
            snapshot_cost=self.limits.snapshot_write_seconds(len(stored.snapshot.state))
            if base and stored.snapshot
            else 0.0,
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

    async def _rebuilt(self, stored: StoredSession) -> _Rebuilt:
        """``_load``'s model, where models live (dropped there if it cannot be rebuilt)."""
        spec = SessionSpec.from_json(stored.row.spec)
        spec = await self.populations.resolve(stored.row.owner, spec)
        game = await self._cpu(game_of, spec)
        solved = await self.solved_for(spec)
        host, base, unused = await self._placement.restore(spec, stored.snapshot, solved)
        try:
            log_unused_snapshot(stored.row.session_id, unused)
            rows = await self._rows_to_replay(stored, base)
            seconds, hands = await host.replay(game, rows)
        except BaseException:
            host.release()
            raise
        return spec, game, host, base, hands, rows, seconds

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
        or observations can no longer be loaded is deleted all the same; its opponents' counts
        are kept first if its owner has a population of its game (``populations.py``)."""
        ended = await self.populations.keep_ended(self, owner, session_id)
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
        if ended is not None:
            self.populations.refit_soon(self, owner, ended)

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
        return await self._changes.run(self._observer.observe(session, items, all_or_nothing))

    # -- queries ---------------------------------------------------------------------------------
    async def model(
        self, session: LiveSession, opponent_label: str, opponent_position: int
    ) -> tuple[OpponentInsight, int, int]:
        """(the model with its prior and evidence, our position, hands) of one opponent in one
        position."""
        spec = session.spec
        if opponent_label not in spec.opponent_labels:
            raise InvalidArgumentError(
                "opponent_label", f"{opponent_label!r} is not one of {list(spec.opponent_labels)}"
            )
        session.game.check_position(opponent_position, "opponent_position")
        offset = spec.opponent_labels.index(opponent_label) + 1
        our_position = (opponent_position - offset) % spec.num_players
        async with self.locked(session, write=False) as session:
            insight = await session.host.compute(
                "opponent_insight", our_position, opponent_position
            )
            hands = session.hands_observed
        self.metrics.ess.observe(insight.spread)
        return insight, our_position, hands

    async def response(
        self, session: LiveSession, our_position: int, kind: str | None, *, played: bool = False
    ) -> ResponseAnswer:
        """Our best response and, if ``played``, what the agent plays (a second computation,
        only for a caller that asks: the web page), read at one posterior."""
        session.game.check_position(our_position, "our_position")
        kind = kind or session.spec.config.response
        async with self.locked(session, write=False) as session:
            strategy, value = await session.host.compute("response", our_position, kind)
            policy = await session.host.compute("played", our_position) if played else None
            hands = session.hands_observed
        return ResponseAnswer(strategy, float(value), kind, hands, policy)

    async def models(
        self, session: LiveSession, kind: str | None, *, played: bool = False
    ) -> tuple[builtins.list[tuple[OpponentInsight, int]], builtins.list[ResponseAnswer], int]:
        """What ``model`` answers for every opponent in every position (opponent by opponent:
        (model, our position)), what ``response`` answers in every position of ours, and the
        hands, all at one posterior and computed in one go (one round trip to a model worker,
        where the separate calls made one each); no response where the game has no table."""
        players = session.spec.num_players
        kind = kind or session.spec.config.response
        # (our position, the opponent's) for each opponent (offset seats after us) and position
        seats = [((p - d) % players, p) for d in range(1, players) for p in range(players)]
        responding = range(players) if session.game.response_table else range(0)
        calls: builtins.list[Call] = [("opponent_insight", seat) for seat in seats]
        calls += [("response", (p, kind)) for p in responding]
        calls += [("played", (p,)) for p in responding] if played else []
        async with self.locked(session, write=False) as session:
            results = await session.host.compute_all(calls)
            hands = session.hands_observed
        insights = results[: len(seats)]
        for insight in insights:
            self.metrics.ess.observe(insight.spread)
        responses = results[len(seats) : len(seats) + len(responding)]
        policies = results[len(seats) + len(responding) :] if played else [None] * len(responding)
        answers = [
            ResponseAnswer(strategy, float(value), kind, hands, policy)
            for (strategy, value), policy in zip(responses, policies, strict=True)
        ]
        return [(i, ours) for i, (ours, _) in zip(insights, seats, strict=True)], answers, hands

    async def winnings(
        self, session: LiveSession, after: int, most: int
    ) -> tuple[builtins.list[float], int]:
        """(our chips in each applied hand after ``after``, at most ``most`` of them; the hands
        observed), by the game's payoffs of what our seat saw (``ServedGame.winnings``). Kept
        by the live session once a caller first asked (``LiveSession.winnings``), so a poll
        reads no store: only the first call after a load reads the session's stored hands."""
        won = session.winnings
        if won is None:
            won = await self._stored_winnings(session)
        return won[after : after + most].tolist(), session.hands_observed  # len(won) hands

    async def _stored_winnings(self, session: LiveSession) -> array[float]:
        """Our chips in each of the session's applied hands, read from the store (a chunk at a
        time, so a long session's rows are never all held), then kept by the session and
        extended as hands are applied."""
        game = session.game
        won: array[float] = array("d")

        def payoffs(rows: Sequence[ObservationRow]) -> builtins.list[float]:
            return [game.stored_winnings(r.position, r.history, r.cards) for r in rows]

        while len(won) < session.hands_observed:  # hands applied while it reads: read those too
            rows = await asyncio.wrap_future(
                self.storage.load_observations_async(
                    session.session_id,
                    after=len(won),
                    upto=min(session.hands_observed, len(won) + WINNINGS_READ_HANDS),
                )
            )
            if not rows:  # deleted by another process meanwhile
                raise NotFoundError(f"session_id: no session {session.session_id!r}")
            won.extend(await self._cpu(payoffs, rows))
        session.winnings = won  # no await since the loop's test: it holds every applied hand
        self.cache.resize(session)
        return won

    async def action(
        self, session: LiveSession, spot: Decision | str, *, draw: int
    ) -> tuple[ActionChoice, Decision]:
        """The policy's action at our decision ``spot`` (checked by the caller), or at a
        MATCHSTATE line's, looked up where the model is (``ModelHost.decide``); and the decision."""
        game = session.game
        async with self.locked(session, write=False) as session:
            hands = session.hands_observed
            # solves only the deals of this hole of ours, once per change of the posterior
            decision, row = await session.host.decide(spot)
        position, infoset = decision.position, decision.infoset
        probabilities = tuple(np.asarray(row, dtype=np.float64).tolist())
        u = uniform_draw(session.spec.config.seed, hands, position, infoset, draw)
        choice = ActionChoice(
            action=draw_action(probabilities, u),
            probabilities=probabilities,
            infostate=game.decision_string(decision),
            default_policy=hands < session.spec.config.hands_default,
            hands_observed=hands,
        )
        return choice, decision
