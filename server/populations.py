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
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from oppmodel.modeling.errors import FailedPreconditionError, InvalidArgumentError, renamed
from oppmodel.modeling.games.acpc import solved
from oppmodel.modeling.mbbr.config import Posterior, Prior
from oppmodel.modeling.mbbr.priors import default_profile, needs_solving
from oppmodel.modeling.population import fit_population
from oppmodel.server.conversion import parse_game
from oppmodel.server.session_spec import SessionSpec, game_of
from oppmodel.server.storage import SessionStore

if TYPE_CHECKING:
    from oppmodel.server.sessions import SessionManager

Cpu = Callable[..., Awaitable[Any]]  # runs a function on the server's worker pool


@dataclasses.dataclass(frozen=True)
class PopulationFit:
    """What a fit stored: its version, the opponents and sessions it read, and the information
    sets fitted (the rest keep the informed prior)."""

    version: int
    opponents: int
    sessions: int
    fitted_infosets: int


def spec_game_key(spec: SessionSpec) -> str:
    """The key of a session's compiled game (``solved.game_key``): populations are per rules."""
    return solved.game_key(game_of(spec).compiled)


class Populations:
    """Each owner's fitted populations of each game (see the module docstring)."""

    def __init__(self, storage: SessionStore, cpu: Cpu) -> None:
        self.storage = storage
        self._cpu = cpu

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

    async def fit(self, manager: SessionManager, owner: str, game_name: str) -> PopulationFit:
        """Fit and store the next version of the owner's population of the game named as
        ``SessionConfig.game`` names it."""
        try:
            _, game, _ = await self._cpu(parse_game, game_name)
        except InvalidArgumentError as exc:
            raise renamed(exc, "game") from None
        key = solved.game_key(game.compiled)
        counts, sessions = [], 0
        for info in await manager.list(owner):
            if info.spec.config.posterior != Posterior.DIRICHLET:
                continue
            if await self._cpu(spec_game_key, info.spec) != key:
                continue
            session = await manager.get(owner, info.session_id)
            async with manager.locked(session, write=False) as session:
                counts.append(await session.host.compute("opponent_counts"))
            sessions += 1
        compiled = game.compiled
        seen = np.concatenate(counts) if counts else np.zeros((0, *compiled.legal_mask.shape))
        seen = seen[seen.sum(axis=(1, 2, 3)) > 0]  # opponents that never acted tell nothing
        if needs_solving(compiled):
            mean = await manager.solved.of(compiled)
        else:
            mean = await self._cpu(default_profile, compiled, "prior_mean")
        fit = functools.partial(fit_population, prior_mean=mean)
        population = await self._cpu(fit, compiled, seen)
        state = await self._cpu(population.to_bytes)
        version = await asyncio.wrap_future(self.storage.save_population_async(owner, key, state))
        return PopulationFit(version, population.opponents, sessions, int(population.fitted.sum()))
