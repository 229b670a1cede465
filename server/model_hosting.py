"""Where sessions' models live: in this process, or in model workers, behind one interface.

A ``Placement`` builds and restores models and hands back a ``ModelHost`` per session; the manager
(``server/sessions.py``) updates and queries a model only through its host, so it never asks where
the model lives. Two placements:

- ``InProcess``: this process holds the models. Arithmetic on small tables (k^(n-1) up to
  ``Limits.inline_joint_samples``) runs on the event loop, cheaper inline than handed to a thread
  (a thread hop costs ~0.1 ms plus a wait for the GIL, up to the 5 ms switch interval while
  another thread computes; an update of a k = 10 table ~30 us); larger tables, and every build
  and replay, run on the thread pool so the loop keeps serving other sessions.
- ``ModelWorkers``: child processes hold the models (``server/model_worker.py``, the server's
  default) and all their arithmetic runs there; the functions below named ``_held_*`` are what a
  worker runs on the models it holds. Each loaded copy of a session has a key of its own.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from oppmodel.modeling.errors import UnavailableError
from oppmodel.modeling.games.interface import Decision
from oppmodel.server.model_worker import ModelWorker
from oppmodel.server.session_models import build_model, observe_all, replay, restored
from oppmodel.server.session_spec import Game, Limits, Model, Observation, SessionSpec
from oppmodel.server.storage import ObservationRow, SnapshotRow
from oppmodel.server.turns import TurnTaking

CpuRunner = Callable[..., Awaitable[Any]]  # runs fn(*args) on the thread pool
WARM_MODELS = "oppmodel.server.warm_models"  # what the model workers' fork server imports
Call = tuple[str, tuple[object, ...]]  # (a method of the model, its arguments)


class ModelHost(ABC):
    """One session's model, wherever it lives."""

    @abstractmethod
    def nbytes(self) -> int:
        """The model's estimated memory (where it lives)."""

    async def compute(self, method: str, *args: object) -> Any:
        """``model.method(*args)``: a query, or a snapshot."""
        (result,) = await self.compute_all([(method, args)])
        return result

    @abstractmethod
    async def compute_all(self, calls: Sequence[Call]) -> list[Any]:
        """``model.method(*args)`` of each ``(method, args)`` in order, in one go: one round
        trip to a model worker for all (a reader of many answers at one posterior)."""

    async def decide(self, spot: Decision | str) -> tuple[Decision, np.ndarray]:
        """Our decision and the row the policy plays there: ``spot``'s, or the decision of a
        MATCHSTATE line looked up where the model is (``conversion.info_state_from_proto``'s
        lines: hold'em's, whose lookup buckets the board as the hand's update then does)."""
        if isinstance(spot, str):
            return await self.compute("matchstate_action", spot)
        return spot, await self.compute("action_probabilities", spot.position, spot.infoset)

    @abstractmethod
    async def observe(self, hands: Sequence[Observation]) -> float:
        """Apply new hands in order; the seconds of arithmetic it took. A model that fails to
        apply them may hold part of them: the caller drops it (``release``)."""

    @abstractmethod
    async def replay(self, game: Game, rows: Sequence[ObservationRow]) -> tuple[float, int]:
        """Apply stored hands after the model's state: (seconds, hands observed)."""

    @abstractmethod
    def release(self) -> None:
        """The session's copy left memory: drop the model."""

    def held_by(self, worker: ModelWorker) -> bool:
        """Whether ``worker`` holds the model (its death loses it)."""
        return False


class Placement(ABC):
    """Builds sessions' models where they are to live."""

    @abstractmethod
    async def start(self) -> None:
        """Ready to take models; returns once it is."""

    @abstractmethod
    async def close(self) -> None:
        """Stop, after every change in progress has finished."""

    @abstractmethod
    async def create(self, spec: SessionSpec, solved: np.ndarray | None) -> ModelHost:
        """A new session's model (``session_models.build_model``)."""

    @abstractmethod
    async def restore(
        self, spec: SessionSpec, snapshot: SnapshotRow | None, solved: np.ndarray | None
    ) -> tuple[ModelHost, int, str | None]:
        """A stored session's model with its snapshot restored (``session_models.restored``):
        (host, hands restored (0: no snapshot used), why the snapshot was not used)."""


class LocalModel(ModelHost):
    """A model this process holds (``InProcess``)."""

    def __init__(self, model: Model, place: InProcess, inline: bool) -> None:
        self.model = model
        self._place = place
        self._inline = inline  # its arithmetic runs on the event loop (``Limits.inline``)

    def nbytes(self) -> int:
        return self.model.nbytes()

    async def compute_all(self, calls: Sequence[Call]) -> list[Any]:
        if self._inline:
            return _calls(self.model, calls)
        return await self._place.cpu(_calls, self.model, calls)

    async def observe(self, hands: Sequence[Observation]) -> float:
        """On the event loop the hands go in pieces of about ``Limits.inline_slice_seconds``, one
        piece per turn of the loop, the sessions taking turns (``turns.py``): a group commit
        completes the hands of many sessions at once, and a commit may hold ~0.2 s of one
        session's updates; applied in one turn, either held up every request arriving meanwhile.
        The session's readers wait on its model lock, so none sees a half-applied batch."""
        model = self.model
        if not self._inline:
            start = time.perf_counter()
            await self._place.cpu(observe_all, model, hands)
            return time.perf_counter() - start
        seconds, done, piece = 0.0, 0, self._place.limits.inline_slice_seconds
        while done < len(hands):
            await self._place.turns.take()
            start = time.perf_counter()
            while True:  # this turn's piece
                model.observe(hands[done])
                done += 1
                if done == len(hands) or time.perf_counter() - start >= piece:
                    break
            seconds += time.perf_counter() - start
        return seconds

    async def replay(self, game: Game, rows: Sequence[ObservationRow]) -> tuple[float, int]:
        seconds = await self._place.cpu(replay, game, self.model, rows)
        return seconds, self.model.hands_observed

    def release(self) -> None:
        """Nothing to do: the model goes with the session's copy."""


class InProcess(Placement):
    """Models held by this process: built on the thread pool, computed inline when small."""

    def __init__(self, cpu: CpuRunner, limits: Limits) -> None:
        self.cpu = cpu
        self.limits = limits
        self.turns = TurnTaking()  # the inline updates of every session take turns

    async def start(self) -> None:
        """Nothing to start: the thread pool is the server's."""

    async def close(self) -> None:
        """Nothing to stop."""

    async def create(self, spec: SessionSpec, solved: np.ndarray | None) -> ModelHost:
        model = await self.cpu(build_model, spec, solved)
        return LocalModel(model, self, self.limits.inline(spec))

    async def restore(
        self, spec: SessionSpec, snapshot: SnapshotRow | None, solved: np.ndarray | None
    ) -> tuple[ModelHost, int, str | None]:
        model, unused = await self.cpu(restored, spec, snapshot, solved)
        return LocalModel(model, self, self.limits.inline(spec)), model.hands_observed, unused


class HeldModel(ModelHost):
    """A model a model worker holds: what this process knows of it."""

    def __init__(self, worker: ModelWorker) -> None:
        self.worker = worker
        self.key = uuid.uuid4().hex
        self.size = 0  # the model's ``nbytes()`` when the worker last reported it

    def nbytes(self) -> int:
        return self.size

    async def compute_all(self, calls: Sequence[Call]) -> list[Any]:
        return await self.worker.call(_held_calls, self.key, calls)

    async def observe(self, hands: Sequence[Observation]) -> float:
        """In one go (the worker's own loop is not shared with requests)."""
        seconds, self.size = await self.worker.call(_held_observe, self.key, hands)
        return seconds

    async def replay(self, game: Game, rows: Sequence[ObservationRow]) -> tuple[float, int]:
        seconds, hands, self.size = await self.worker.call(_held_replay, self.key, game, rows)
        return seconds, hands

    def release(self) -> None:
        self.worker.forget(_held_drop, self.key)

    def held_by(self, worker: ModelWorker) -> bool:
        return self.worker is worker


class ModelWorkers(Placement):
    """Models held by ``count`` model workers, a new model on the next worker in turn.

    ``on_lost(worker)``: a worker died, and the models it held with it."""

    def __init__(self, count: int, on_lost: Callable[[ModelWorker], None]) -> None:
        self._workers = [ModelWorker(preload=[WARM_MODELS], on_lost=on_lost) for _ in range(count)]
        self._next_worker = itertools.cycle(self._workers)

    async def start(self) -> None:
        await asyncio.gather(*(worker.start() for worker in self._workers))

    async def close(self) -> None:
        for worker in self._workers:
            await worker.close()

    async def create(self, spec: SessionSpec, solved: np.ndarray | None) -> ModelHost:
        held = HeldModel(next(self._next_worker))
        held.size = await held.worker.call(_held_create, held.key, spec, solved)
        return held

    async def restore(
        self, spec: SessionSpec, snapshot: SnapshotRow | None, solved: np.ndarray | None
    ) -> tuple[ModelHost, int, str | None]:
        held = HeldModel(next(self._next_worker))
        try:
            base, unused = await held.worker.call(_held_restore, held.key, spec, snapshot, solved)
        except BaseException:
            held.release()
            raise
        return held, base, unused


def placement(
    model_workers: int, cpu: CpuRunner, limits: Limits, on_lost: Callable[[ModelWorker], None]
) -> Placement:
    """Model workers if there are to be any (``oppmodel serve --model-workers``), else this
    process."""
    if model_workers:
        return ModelWorkers(model_workers, on_lost)
    return InProcess(cpu, limits)


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
    spec: SessionSpec,
    snapshot: SnapshotRow | None,
    solved: np.ndarray | None,
) -> tuple[int, str | None]:
    """Build a stored session's model with its snapshot restored and hold it; the hands
    restored (0: no snapshot used) and why the snapshot was not used."""
    models[key], unused = restored(spec, snapshot, solved)
    return models[key].hands_observed, unused


def _held_replay(
    models: dict[str, Model], key: str, game: Game, rows: Sequence[ObservationRow]
) -> tuple[float, int, int]:
    """Apply stored hands after the held model's state: (seconds, hands observed, nbytes)."""
    model = _held(models, key)
    seconds = replay(game, model, rows)
    return seconds, model.hands_observed, model.nbytes()


def _held_observe(
    models: dict[str, Model], key: str, hands: Sequence[Observation]
) -> tuple[float, int]:
    """Apply ``hands`` to the held model: (seconds of arithmetic, nbytes). A model that fails
    to apply them is dropped (it may hold part of them)."""
    model = _held(models, key)
    start = time.perf_counter()
    try:
        observe_all(model, hands)
    except BaseException:
        del models[key]
        raise
    return time.perf_counter() - start, model.nbytes()


def _held_calls(models: dict[str, Model], key: str, calls: Sequence[Call]) -> list[Any]:
    """``_calls`` of the held model."""
    return _calls(_held(models, key), calls)


def _calls(model: Model, calls: Sequence[Call]) -> list[Any]:
    """``model.method(*args)`` of each ``(method, args)``, in order."""
    return [getattr(model, method)(*args) for method, args in calls]


def _held_drop(models: dict[str, Model], key: str) -> None:
    models.pop(key, None)
