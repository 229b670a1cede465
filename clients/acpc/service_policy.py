"""An ACPC agent policy that plays through the oppmodel service, falling back to N1 without it.

``ServicePolicy`` creates one seeded MBBR session on the service, turns every finished hand into
an observation holding only what this seat saw (:func:`clients.acpc.convert.seat_observation`),
streams it to the service with sequence numbers 1, 2, ... and asks GetAction (with the MATCHSTATE
line itself) for every decision; the service answers from the agent's policy (the default
strategy for the first H hands, then the best response to its models).

The match must never stall on the service. Every RPC made while the dealer waits has a short
deadline (``deadline`` seconds, 200 ms by default). The first failure (unreachable, a deadline
missed, any error) switches the policy to its default strategy (N1, the same one MBBR opens with)
and prints one line on stderr; from then on decisions are local and instant, while a background
thread keeps trying to reach the service: it re-creates the session if the server lost it, resends
every hand the service has not acknowledged (the server's sequence numbers make a resend safe) and
only then hands play back to the service, so the service's model always holds every hand.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import TextIO

import grpc

from clients.acpc.agent import Decision, ProfilePolicy, SeatHand
from clients.acpc.convert import kuhn_for, seat_observation
from clients.acpc.gamedef import GameDef
from clients.client import OpponentModelClient
from modeling.errors import NotFoundError, OppModelError
from modeling.kuhn import KuhnGame
from modeling.kuhn3p import robust_profile
from modeling.mbbr import MBBRConfig
from modeling.observation import HandObservation
from modeling.strategy import uniform_profile

ServiceFailure = (grpc.RpcError, OppModelError)


def default_profile(kuhn: KuhnGame):
    """The fallback: N1 in 3-player Kuhn (MBBR's own default strategy), uniform otherwise."""
    return robust_profile("N1") if kuhn.num_players == 3 else uniform_profile(kuhn)


class ServicePolicy:
    """MBBR through the service (one session per match), N1 whenever the service cannot answer."""

    def __init__(
        self,
        game: GameDef,
        target: str,
        *,
        config: MBBRConfig,
        our_label: str = "acpc-agent",
        opponent_labels: tuple[str, ...] | None = None,
        deadline: float = 0.2,
        connect_timeout: float = 2.0,
        retry_interval: float = 0.5,
        stderr: TextIO | None = None,
    ) -> None:
        self.game = game
        self.kuhn = kuhn_for(game)
        n = self.kuhn.num_players
        self.config = config
        self.our_label = our_label
        self.opponent_labels = opponent_labels or tuple(f"seat+{d}" for d in range(1, n))
        self.fallback = ProfilePolicy(game, default_profile(self.kuhn), config.seed)
        self.retry_interval = retry_interval
        self.err = stderr or sys.stderr
        self.session_id: str | None = None
        self.service_decisions = 0
        self.fallback_decisions = 0
        self._client = OpponentModelClient(target, timeout=deadline, reconnect_seconds=0.0)
        self._recovery_client = OpponentModelClient(
            target, timeout=connect_timeout, reconnect_seconds=0.0
        )
        self._lock = threading.Lock()
        self._observations: list[HandObservation] = []
        self._acked = 0  # observations the current session has acknowledged
        self._healthy = False
        self._warned = False
        self._stop = threading.Event()
        self._recovery: threading.Thread | None = None
        try:
            self._catch_up(self._recovery_client)
        except ServiceFailure as exc:
            self._fail(exc)

    @property
    def healthy(self) -> bool:
        """Whether decisions currently come from the service."""
        return self._healthy

    # -- the Policy protocol ---------------------------------------------------------------
    def act(self, decision: Decision) -> str:
        """The service's action for this MATCHSTATE, or N1's if the service cannot answer."""
        if self._healthy:
            try:
                self._flush(self._client)
                choice = self._client.action(
                    self.session_id, matchstate=str(decision.state), draw=decision.state.hand
                )
            except ServiceFailure as exc:
                self._fail(exc)
            else:
                self.service_decisions += 1
                return choice.acpc_action
        self.fallback_decisions += 1
        return self.fallback.act(decision)

    def observe(self, hand: SeatHand) -> None:
        """Queue what this seat saw of the hand; send it now if the service is up."""
        obs = seat_observation(
            self.game, position=hand.position, betting=hand.betting, hole=hand.hole
        )
        with self._lock:
            self._observations.append(obs)
        if self._healthy:
            try:
                self._flush(self._client)
            except ServiceFailure as exc:
                self._fail(exc)

    def close(self) -> None:
        """Stop reconnecting, make one last bounded attempt to hand the service every hand (the
        match is over, nobody waits), and close the channels."""
        self._stop.set()
        with self._lock:
            recovery = self._recovery
        if recovery is not None:
            recovery.join()
        with contextlib.suppress(*ServiceFailure):
            self._catch_up(self._recovery_client)
        self._client.close()
        self._recovery_client.close()

    # -- internals -------------------------------------------------------------------------
    def _flush(self, client: OpponentModelClient) -> None:
        """Send every hand not yet acknowledged (one stream, the client's deadline)."""
        with self._lock:
            pending = self._observations[self._acked :]
            first = self._acked + 1
        if pending:
            client.observe(self.session_id, pending, first_sequence=first)
            with self._lock:
                self._acked = max(self._acked, first - 1 + len(pending))

    def _catch_up(self, client: OpponentModelClient) -> None:
        """Create the session if there is none (or the server lost it), resend what it lacks,
        then let play go through the service again."""
        if self.session_id is not None:
            try:
                client.get_session(self.session_id)
            except NotFoundError:
                self.session_id = None
        if self.session_id is None:
            session = client.create_session(
                game=f"kuhn_poker(players={self.kuhn.num_players})",
                our_label=self.our_label,
                opponent_labels=self.opponent_labels,
                config=self.config,
            )
            # the first response the server computes loads its kernels: do it now, not while
            # the dealer waits for a decision
            client.response(session.session_id, 0)
            with self._lock:
                self.session_id, self._acked = session.session_id, 0
        while True:
            self._flush(client)
            with self._lock:
                if self._acked == len(self._observations):
                    self._healthy = True
                    self._recovery = None  # a later failure starts a new reconnection thread
                    return

    def _fail(self, exc: BaseException) -> None:
        """Switch to the fallback, say so once, and start reconnecting in the background."""
        with self._lock:
            self._healthy = False
        if not self._warned:
            self._warned = True
            reason = exc.code().name if isinstance(exc, grpc.RpcError) else str(exc)
            self.err.write(
                f"acpc-agent: the service is unavailable ({reason}); playing the default "
                "strategy (N1) until it is back\n"
            )
            self.err.flush()
        with self._lock:
            if self._recovery is not None:
                return
            thread = self._recovery = threading.Thread(target=self._reconnect, daemon=True)
        thread.start()

    def _reconnect(self) -> None:
        while not self._stop.wait(self.retry_interval):
            try:
                self._catch_up(self._recovery_client)
            except ServiceFailure:
                continue
            self.err.write(
                f"acpc-agent: the service is back; session {self.session_id} holds every hand\n"
            )
            return
