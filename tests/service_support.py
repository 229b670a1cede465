"""Shared helpers of the service tests: a real server on a free loopback port, a relay in front of
it, random hands, and
the oracle of a Kuhn session: the compiled ``kuhn<n>p`` model fed the same hands."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import grpc
import numpy as np
from mbbr_support import kuhn_named_profile

from oppmodel.clients.client import OpponentModelClient
from oppmodel.modeling.games.acpc.compiler import limit_game
from oppmodel.modeling.games.acpc.strategy import kuhn_profile_on, kuhn_strategy_of, uniform_profile
from oppmodel.modeling.games.interface import compiled
from oppmodel.modeling.games.kuhn import KuhnGame, kuhn_game
from oppmodel.modeling.mbbr.config import MBBRConfig, Response
from oppmodel.modeling.mbbr.model import build_model
from oppmodel.modeling.observation import HandObservation, LimitObservation, observe_hand
from oppmodel.modeling.population import Population
from oppmodel.server.app import BackgroundServer, ServerConfig

GAME = kuhn_game(3)
# a call's deadline in the tests: a bound on a hang, not a speed check; building a 3-player
# Leduc model took over 10 s at load 20
LOADED_DEADLINE = 120.0


class Relay:
    """A real gRPC server on 127.0.0.1 (``port``) in front of the service at ``target``: a
    subclass's ``service`` says what each call does, usually relaying it, as bytes, on
    ``channel`` (a service that fails in ways a test sets)."""

    def __init__(self, target: str) -> None:
        self.channel = grpc.insecure_channel(target)
        self._server = grpc.server(ThreadPoolExecutor(8))
        self._server.add_generic_rpc_handlers((self,))
        self.port = self._server.add_insecure_port("127.0.0.1:0")
        self._server.start()

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler | None:
        raise NotImplementedError

    def close(self) -> None:
        self._server.stop(None)
        self.channel.close()


@contextlib.contextmanager
def running_server(db: Path, **overrides: object) -> Iterator[int]:
    """A server on 127.0.0.1:<free port> over the SQLite file ``db``; yields the port."""
    config = ServerConfig(db_path=str(db), port=overrides.pop("port", 0), **overrides)
    with BackgroundServer(config, grace=0.5) as port:
        yield port


@contextlib.contextmanager
def connected(db: Path, *, token: str | None = None, **overrides: object):
    """(client, port) of a fresh server over ``db``."""
    with (
        running_server(db, **overrides) as port,
        OpponentModelClient(f"127.0.0.1:{port}", token=token, timeout=LOADED_DEADLINE) as client,
    ):
        yield client, port


def wait_until(condition: Callable[[], bool], what: str, *, seconds: float = 60.0) -> None:
    """Return once ``condition()`` holds; fail naming ``what`` after ``seconds`` (generous: a
    quiet machine takes a fraction of it)."""
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def hands_held(port: int, session_id: str) -> int:
    """How many hands the session on 127.0.0.1:``port`` has acknowledged."""
    with OpponentModelClient(f"127.0.0.1:{port}", timeout=LOADED_DEADLINE) as client:
        return client.get_session(session_id).hands_observed


def random_observations(
    count: int, *, seed: int, game: KuhnGame = GAME, profile: str = "maniac"
) -> list[HandObservation]:
    """Observations of seat 0 over ``count`` hands (ACPC rotation), everyone playing ``profile``."""
    rng = np.random.default_rng(seed)
    table = kuhn_named_profile(game, profile)
    out = []
    for hand in range(count):
        cards = [int(c) for c in rng.permutation(game.num_cards)[: game.num_players]]
        history = ""
        while not game.is_terminal(history):
            p = game.current_player(history)
            index = game.infoset_index(p, cards[p], history)
            history += "pb"[int(rng.random() < table[p, index, 1])]
        out.append(observe_hand(game, (-hand) % game.num_players, history, cards))
    return out


class CompiledKuhn:
    """What a "kuhn_poker(players=n)" session must answer: the compiled ``kuhn<n>p`` model
    (``build_model``) fed the same hands, its rows read in OpenSpiel's conventions by the
    library's own conversion (``kuhn_strategy_of``). Defaults as Kuhn's: N1 and N3 in 3-player
    Kuhn, uniform play otherwise. Profiles are Kuhn's (pass/bet rows)."""

    def __init__(
        self,
        config: MBBRConfig,
        players: int = 3,
        *,
        prior_mean: np.ndarray | None = None,
        default_strategy: np.ndarray | None = None,
        population: Population | None = None,
    ) -> None:
        self.kuhn = kuhn_game(players)
        self.compiled = limit_game(f"kuhn{players}p")
        default = None if players == 3 else uniform_profile(self.compiled)
        self.model = build_model(
            self.compiled,
            config,
            default_strategy=default
            if default_strategy is None
            else kuhn_profile_on(self.compiled, default_strategy),
            prior_mean=default
            if prior_mean is None
            else kuhn_profile_on(self.compiled, prior_mean),
            population=population,
        )

    @property
    def hands_observed(self) -> int:
        return self.model.hands_observed

    @property
    def run_start(self) -> int:
        return self.model.run_start

    def observe(self, obs: HandObservation) -> None:
        deck = self.compiled.deck
        hole = tuple(None if c is None else deck[c] for c in obs.cards)
        betting = self.kuhn.history_to_acpc(obs.history)
        self.model.observe(LimitObservation(obs.position, betting, hole, ("",)))

    def opponent_model(self, our_position: int, opponent_position: int) -> tuple[np.ndarray, float]:
        rows, spread = self.model.opponent_model(our_position, opponent_position)
        return kuhn_strategy_of(self.compiled, opponent_position, rows), spread

    def served_opponent_model(
        self, our_position: int, opponent_position: int
    ) -> tuple[np.ndarray, float]:
        """The model as a session of the compiled game itself ("kuhn3p") answers it: rows (fold,
        call, raise) of the opponent's information sets in the order GetModel lists them."""
        rows, spread = self.model.opponent_model(our_position, opponent_position)
        return rows[list(compiled(self.compiled).infosets(opponent_position))], spread

    def response(
        self, position: int, kind: Response | str | None = None
    ) -> tuple[np.ndarray, float]:
        strategy, value = self.model.response(position, kind)
        return kuhn_strategy_of(self.compiled, position, strategy), value

    def policy(self, position: int) -> np.ndarray:
        return kuhn_strategy_of(self.compiled, position, self.model.policy(position))

    def snapshot(self) -> bytes:
        return self.model.snapshot()


def kuhn_library(
    config: MBBRConfig, observations: Sequence[HandObservation] = (), players: int = 3, **profiles
) -> CompiledKuhn:
    """A :class:`CompiledKuhn` fed ``observations``."""
    model = CompiledKuhn(config, players, **profiles)
    for obs in observations:
        model.observe(obs)
    return model
