"""The service's population priors: per owner and game, fitted from the owner's own sessions,
stored in versions, never shared across owners.

``FitPopulation`` (:meth:`Populations.fit`) fits the owner's population of a game anew from the
expected counts of every opponent of every one of the owner's sessions of that game (those with
the Dirichlet posterior; ``modeling/population.py``) and stores it as the next version of
(owner, game) in the store's ``populations`` table. A session created with the population prior
starts from its owner's latest version and records it (``SessionSpec.population_version``; 0
when none was fitted: the informed prior), so a reload, a snapshot and a restart rebuild it on
the same population, whatever was fitted since. Owners are the hashed tokens of the sessions
(``sessions.owner_of_token``): another token's sessions and populations are never read.

A population is fitted as a kind (``population_types.PopulationKind``): ``types``, the Polya fit
and its mixture over the opponents met as types (the default), or ``dirichlet``, the Polya fit
alone; a fit names it (unset: types), and a refit after a session's end keeps the kind of the
latest version. A session plays what its version holds: the types where it has them.

A session's end updates its owner's population: when ``DeleteSession`` removes a session of a
game the owner has a population of, what its opponents were seen to do (their expected counts,
no hands) is kept as the population's members (the store's ``population_members``) and the
population is refitted in the background (:meth:`Populations.keep_ended`), as a fit would,
from the sessions stored and every kept member; ``FitPopulation`` reads the members too. An
owner who never fitted a population of a game keeps nothing of its deleted sessions.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from oppmodel.modeling.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NotFoundError,
    OppModelError,
    renamed,
)
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.games.acpc.limit_game import LimitGame
from oppmodel.modeling.games.acpc.solved import default_profile, needs_solving
from oppmodel.modeling.mbbr.config import Posterior, Prior
from oppmodel.modeling.population import Population
from oppmodel.modeling.population_types import PopulationKind, fit_kind, kind_of
from oppmodel.server.conversion import parse_game
from oppmodel.server.session_spec import SessionSpec, game_of
from oppmodel.server.storage import SessionStore
from oppmodel.server.tasks import ShieldedTasks

if TYPE_CHECKING:
    from oppmodel.server.sessions import SessionManager

Cpu = Callable[..., Awaitable[Any]]  # runs a function on the server's worker pool
log = logging.getLogger("oppmodel.server")


@dataclasses.dataclass(frozen=True)
class PopulationFit:
    """What a fit stored: its version, the opponents and sessions it read, the information sets
    fitted (the rest keep the informed prior), the types fitted (0: the Dirichlet kind, or no
    member) and its kind."""

    version: int
    opponents: int
    sessions: int
    fitted_infosets: int
    types: int
    kind: PopulationKind


def spec_game_key(spec: SessionSpec) -> str:
    """The key of a session's compiled game (``solved.game_key``): populations are per rules."""
    return solved.game_key(game_of(spec).compiled)


class Populations:
    """Each owner's fitted populations of each game (see the module docstring)."""

    def __init__(self, storage: SessionStore, cpu: Cpu, tasks: ShieldedTasks) -> None:
        """``tasks``: where the refits after a session's end run (drained before a stop)."""
        self.storage = storage
        self._cpu = cpu
        self._tasks = tasks
        self._stale: set[tuple[str, str]] = set()  # (owner, game key): a session ended
        self._refitting: set[tuple[str, str]] = set()  # a refit task is running

    async def resolve(self, owner: str, spec: SessionSpec) -> SessionSpec:
        """``spec`` with its population: a new session's (no version yet) its owner's latest,
        a stored session's the version it recorded; unchanged under another prior."""
        if spec.config.prior != Prior.POPULATION or spec.population_version == 0:
            return spec
        key = await self._cpu(spec_game_key, spec)
        version = spec.population_version
        found = await asyncio.wrap_future(self.storage.load_population_async(owner, key, version))
        if found is None:
            if version is not None:  # the store was edited under the server
                raise FailedPreconditionError(f"population version {version} is not stored")
            return dataclasses.replace(spec, population_version=0)
        return dataclasses.replace(spec, population_version=found[0], population=found[1])

    async def fit(
        self,
        manager: SessionManager,
        owner: str,
        game_name: str,
        kind: PopulationKind = PopulationKind.TYPES,
    ) -> PopulationFit:
        """Fit and store the next version of the owner's population of the game named as
        ``SessionConfig.game`` names it, as ``kind``."""
        try:
            _, game, _ = await self._cpu(parse_game, game_name)
        except InvalidArgumentError as exc:
            raise renamed(exc, "game") from None
        return await self._fit(manager, owner, game.compiled, kind)

    async def _fit(
        self,
        manager: SessionManager,
        owner: str,
        compiled: LimitGame,
        kind: PopulationKind | None = None,
    ) -> PopulationFit:
        """Fit the owner's population of ``compiled`` from its stored sessions of the game and
        its kept members (of deleted sessions) as ``kind`` (None: the latest version's kind),
        and store it as the next version."""
        key = solved.game_key(compiled)
        if kind is None:
            latest = self.storage.load_population_async(owner, key)
            found = await asyncio.wrap_future(latest)
            kind = PopulationKind.TYPES
            if found is not None:
                kind = kind_of(await self._cpu(Population.from_bytes, compiled, found[1]))
        counts, sessions, stored = [], 0, set()
        for info in await manager.list(owner):
            if info.spec.config.posterior != Posterior.DIRICHLET:
                continue
            if await self._cpu(spec_game_key, info.spec) != key:
                continue
            try:
                session = await manager.get(owner, info.session_id)
                async with manager.locked(session, write=False) as session:
                    counts.append(await session.host.compute("opponent_counts"))
            except NotFoundError:  # deleted meanwhile: its members are read below if kept
                continue
            sessions += 1
            stored.add(info.session_id)
        members = self.storage.load_population_members_async(owner, key)
        for session_id, blob in await asyncio.wrap_future(members):
            if session_id not in stored:  # a deletion that did not finish: its session counts
                counts.append(_read_counts(blob))
                sessions += 1
        seen = np.concatenate(counts) if counts else np.zeros((0, *compiled.legal_mask.shape))
        seen = seen[seen.sum(axis=(1, 2, 3)) > 0]  # opponents that never acted tell nothing
        if needs_solving(compiled):
            mean = await manager.solved.of(compiled)
        else:
            mean = await self._cpu(default_profile, compiled, "prior_mean")
        fit = functools.partial(fit_kind, prior_mean=mean)
        population = await self._cpu(fit, compiled, seen, kind)
        state = await self._cpu(population.to_bytes)
        version = await asyncio.wrap_future(self.storage.save_population_async(owner, key, state))
        types = 0 if population.types is None else max(len(population.types) - 2, 0)
        fitted = int(population.fitted.sum())
        return PopulationFit(version, population.opponents, sessions, fitted, types, kind)

    async def keep_ended(
        self, manager: SessionManager, owner: str, session_id: str
    ) -> LimitGame | None:
        """Before ``DeleteSession`` removes a session: if its owner has a population of its game
        (and it has the Dirichlet posterior), keep its opponents' counts as members of that
        population and return the game to refit (:meth:`refit_soon`, once it is deleted); else
        None. A session that is gone or cannot be loaded keeps nothing (its deletion goes on),
        and one whose owner has no population of its game is not even loaded."""
        try:
            spec = await self._stored_spec(manager, owner, session_id)
            if spec is None or spec.config.posterior != Posterior.DIRICHLET:
                return None
            key = await self._cpu(spec_game_key, spec)
            if await asyncio.wrap_future(self.storage.load_population_async(owner, key)) is None:
                return None
            session = await manager.get(owner, session_id)
        except (OppModelError, ValueError, TypeError, KeyError):  # a spec no longer readable
            return None
        async with manager.locked(session, write=False) as session:
            counts = await session.host.compute("opponent_counts")
        member = await self._cpu(_write_counts, counts)
        save = self.storage.save_population_member_async(owner, key, session_id, member)
        await asyncio.wrap_future(save)
        return session.game.compiled

    async def _stored_spec(
        self, manager: SessionManager, owner: str, session_id: str
    ) -> SessionSpec | None:
        """The spec of the owner's session (None if it has none of that id), without loading
        its model."""
        live = manager.cache.peek(session_id)
        if live is not None:
            return live.spec if live.owner == owner else None
        stored = await asyncio.wrap_future(self.storage.load_session_async(session_id))
        if stored is None or stored.row.owner != owner:
            return None
        return SessionSpec.from_json(stored.row.spec)

    def refit_soon(self, manager: SessionManager, owner: str, compiled: LimitGame) -> None:
        """Refit the owner's population of ``compiled`` in the background (a session of it
        ended); ends that arrive during a refit make one more refit, not one each."""
        which = (owner, solved.game_key(compiled))
        self._stale.add(which)
        if which not in self._refitting:
            self._refitting.add(which)
            _ = self._tasks.start(self._refit(manager, owner, compiled, which))

    async def _refit(
        self, manager: SessionManager, owner: str, compiled: LimitGame, which: tuple[str, str]
    ) -> None:
        """Refit until no session of the population ended since the last fit began."""
        try:
            while which in self._stale:
                self._stale.discard(which)
                fit = await self._fit(manager, owner, compiled)
                log.info("population refitted", extra={"version": fit.version})
        except Exception as exc:  # a later end or FitPopulation fits again
            log.error("population refit failed", exc_info=exc)
        finally:
            self._refitting.discard(which)


def _write_counts(counts: np.ndarray) -> bytes:
    """A session's opponent counts as compressed .npy bytes (mostly zeros)."""
    out = io.BytesIO()
    np.savez_compressed(out, counts=counts)
    return out.getvalue()


def _read_counts(blob: bytes) -> np.ndarray:
    """:func:`_write_counts`'s counts."""
    with np.load(io.BytesIO(blob), allow_pickle=False) as arrays:
        return arrays["counts"]
