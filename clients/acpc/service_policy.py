"""An ACPC agent policy that plays through the oppmodel service, falling back to its default
strategy without it.

``ServicePolicy`` creates one seeded MBBR session on the service and asks GetAction (with the
MATCHSTATE line itself) for every decision; the service answers from the agent's policy (the
default strategy for the first H hands, then the best response to its models). Every finished
hand is sent as the dealer's last MATCHSTATE line of it, as it came: it holds only what this seat
saw (the session's game and the fallback are the game's side:
:mod:`oppmodel.clients.acpc.service_game`).

The first decision (outside the dealer's start-up timeout) waits up to ``startup_wait`` seconds
while the background thread creates the session on a service not yet serving (``oppmodel serve``
binds its port seconds before it serves): a match begun on the fallback outran a starting service.

Each decision comes from one of two sources:

* the **service**: GetAction on a stream kept open (``ActionStream``) within a budget, ``deadline``;
* the **fallback**: the default strategy (N1 in 3-player Kuhn, MBBR's own opening; the game's
  solved strategy, ``cfr``, in any other limit game), local and instant.

A decision call that fails (unreachable, any error) switches to the fallback at once, for that
decision too; the match never waits for the service longer than one budget. A missed budget
(DEADLINE_EXCEEDED) from a service that answered the decision before costs that decision only
(the fallback's): the next one asks the service again, as a loaded machine's server misses one
now and then. A second miss in a row switches (a hung service costs two budgets), as does a miss
after a return to the service before it answered a decision (see the quarantine below).

Everything else runs on one background thread, so that no decision ever waits for it:

* it sends every finished hand (on one Observe stream, ``HandStream``; ObserveBatch calls when the
  service is a Ray Serve deployment), resending whatever the service has not acknowledged (the
  clients' one ``Outbox``, :mod:`oppmodel.clients.outbox`); the hands not yet acknowledged go
  together, at most ``RESEND_PIECE`` per call, so that a backlog goes in pieces (on the server a
  decision waits behind at most one piece). If the server lost the session (a fresh database, a
  deletion) it creates it again and resends every hand. The server's sequence numbers make a resend
  safe. A send that misses its deadline (a busy machine) is no outage (a decision decides that,
  within its budget): its hands go again with a doubled deadline (``_slower``); an unreachable
  service (UNAVAILABLE) still switches the decisions to the fallback at once.
* on the fallback, it probes the service every ``retry_interval`` and hands the decisions back
  as soon as it serves: its port accepts a connection (a HOST:PORT target; a test that fails at
  once while it is down) and it answers the health check. The health check matters: gRPC binds
  the port before the server warms up, so a restarting server accepts connections seconds
  before it answers, and a decision sent then waits out its budget. The decisions' channel
  reconnects on its own schedule, so the first decision after the return waits for the
  connection (and for the server to load the session) within its budget: the dealer waits for
  that decision, not for hands played on the fallback. The hands the service missed are resent
  behind it; GetAction answers from those that have arrived.
* a service that fails a decision again before answering one since it was handed back (it answers
  health checks, not GetAction) is not probed for a quarantine that doubles each time (up to
  ``MAX_QUARANTINE``): at most one budget per quarantine; the hands keep going to it meanwhile.

At the match's end ``close`` keeps sending what the session has not acknowledged for up to
``CLOSE_WAIT`` seconds (on Ctrl-C it tries once), and says on stderr how many hands the service
did not take.

``decisions()`` and ``outages``: decisions per source; each stretch on the fallback;
``service_seconds``: how long each decision the service answered took (its GetAction).
"""

from __future__ import annotations

import socket
import sys
import threading
import time
from typing import TextIO

from oppmodel.clients.acpc.agent import Decision, SeatHand
from oppmodel.clients.acpc.service_calls import (
    ActionStream,
    Deadline,
    HandStream,
    Outage,
    ServiceFailure,
    failure_reason,
    tcp_address,
    warm_up,
)
from oppmodel.clients.acpc.service_game import ServiceGame
from oppmodel.clients.client import OpponentModelClient
from oppmodel.clients.outbox import Outbox
from oppmodel.modeling.errors import DeadlineExceededError, NotFoundError
from oppmodel.modeling.games.acpc.gamedef import GameDef
from oppmodel.modeling.mbbr.config import MBBRConfig

MAX_QUARANTINE = 5.0  # seconds; see the module docstring
BACKGROUND_DEADLINE = 2.0  # seconds: a background call's first deadline; see ServicePolicy._slower
MAX_BACKGROUND_DEADLINE = 30.0  # seconds; see ServicePolicy._slower
RESEND_PIECE = 64  # hands per Observe call of a backlog; see ServicePolicy._send_some
CLOSE_WAIT = 30.0  # seconds a patient close tries to send the last hands; see ServicePolicy.close
SERVICE_WAIT_S = 30.0  # how long the start waits for a service that does not answer yet
MAX_REPORTED_OUTAGES = 10  # outages said on stderr; later ones are in the tally only


class ServicePolicy:
    """MBBR through the service (one session per match), the fallback whenever it cannot answer."""

    def __init__(
        self,
        game: GameDef,
        target: str,
        *,
        config: MBBRConfig,
        our_label: str = "acpc-agent",
        opponent_labels: tuple[str, ...] | None = None,
        deadline: float = 1.75,
        connect_timeout: float = BACKGROUND_DEADLINE,
        retry_interval: float = 0.005,
        observe_batches: bool = False,
        startup_wait: float = SERVICE_WAIT_S,
        stderr: TextIO | None = None,
        prior_strategy: str | None = None,
    ) -> None:
        """``deadline``: the per-decision budget (s); ``connect_timeout``: the first deadline of
        the background calls (session creation, Observe; doubled after each one missed, see
        ``_slower``); ``startup_wait``: how long the first
        decision waits for the service to serve and create the session (0: not at all, the match
        begins on the fallback); ``retry_interval``: how often the channels
        try to reconnect to an unreachable service (and the pause after a failed background
        call); ``observe_batches``: send hands in ObserveBatch calls instead of an Observe stream
        (chosen on its own when the service is a Ray Serve deployment); ``prior_strategy``: the
        text of a strategy file, the session's prior mean and default strategy and the
        fallback's strategy."""
        self.game = game
        n = game.num_players
        self.service_game = ServiceGame(game, config.seed, prior_strategy)
        self.fallback = self.service_game.fallback
        self.fallback_name = self.service_game.fallback_name
        self.prior_strategy = prior_strategy
        self.config = config
        self.our_label = our_label
        self.opponent_labels = opponent_labels or tuple(f"seat+{d}" for d in range(1, n))
        self.retry_interval = retry_interval
        self.deadline = deadline
        self._address = tcp_address(target)
        self.err = stderr or sys.stderr
        self.service_decisions = 0
        self.fallback_decisions = 0
        self.service_seconds: list[float] = []  # each decision the service answered: its call
        self.outages: list[Outage] = []
        backoff = max(1, round(retry_interval * 1000))
        options = (
            ("grpc.initial_reconnect_backoff_ms", backoff),
            ("grpc.max_reconnect_backoff_ms", backoff),
        )
        self._decisions = OpponentModelClient(
            target, timeout=deadline, reconnect_seconds=0.0, channel_options=options
        )
        self._background = OpponentModelClient(
            target,
            timeout=connect_timeout,
            reconnect_seconds=0.0,
            channel_options=options,
            observe_batches=observe_batches,
        )
        self._stream = HandStream(self._background)  # where the hands go
        self._actions = ActionStream(self._decisions)  # where the decisions go
        self._wake = threading.Condition()
        self._outbox = Outbox(keep=True)  # every hand: a new session is sent them all again
        self._session_id: str | None = None
        self._on_service = False
        self._untested_return = False  # handed back to the service, no decision answered since
        self._missed_last = False  # the last decision asked of the service missed its budget
        self._quarantine = 0.0  # seconds of the current quarantine; it doubles, see _fall_back
        self._quarantined_until = 0.0  # time.monotonic() before which the service is not probed
        self._hand = 0  # the hand being played
        self._stop = False
        self._started = threading.Event()  # the start is over: on the service or not
        self._starting: OpponentModelClient | None = None  # the start's client while it waits
        self._worker = threading.Thread(
            target=self._run,
            args=(target, startup_wait, connect_timeout, options),
            name="service-policy",
            daemon=True,
        )
        self._worker.start()

    @property
    def session_id(self) -> str | None:
        """The session on the service (None if it was never reached); waits for the start."""
        self._started.wait()
        return self._session_id

    @property
    def healthy(self) -> bool:
        """Whether decisions currently go to the service; waits for the start."""
        self._started.wait()
        return self._on_service

    def decisions(self) -> dict[str, int]:
        """Decisions made by each source: ``service`` and ``fallback:<name>``."""
        return {
            "service": self.service_decisions,
            f"fallback:{self.fallback_name}": self.fallback_decisions,
        }

    # -- the Policy protocol ---------------------------------------------------------------
    def act(self, decision: Decision) -> str:
        """The service's action for this MATCHSTATE, or the fallback's if the service cannot
        answer within the budget."""
        hand = decision.state.hand
        self._started.wait()  # bounded: see _start
        with self._wake:
            self._hand = hand
            session_id = self._session_id if self._on_service else None
            returning = self._untested_return
        if session_id is not None:
            start = time.perf_counter()
            try:
                choice = self._actions.action(
                    session_id,
                    matchstate=decision.matchstate,  # the dealer's line as it came
                    draw=hand,
                    wait_for_ready=returning,
                )
            except DeadlineExceededError as exc:
                self._missed(exc)
            except ServiceFailure as exc:
                self._fall_back(exc)
            else:
                self.service_seconds.append(time.perf_counter() - start)
                self._answered(hand)
                return choice.acpc_action
        self.fallback_decisions += 1
        return self.fallback.act(decision)

    def observe(self, hand: SeatHand) -> None:
        """Queue what this seat saw of the hand for the background sender (never waits)."""
        with self._wake:
            self._outbox.add(hand.matchstate)  # the dealer's line as it came
            self._hand = hand.hand + 1
            self._wake.notify()

    def close(self, *, patient: bool = True) -> None:
        """Stop the background thread, hand the service every hand its session has not acknowledged
        (on a new call: the open stream may be what failed), and close the channels.

        The match is over and nobody waits, so a ``patient`` close keeps trying for up to
        ``CLOSE_WAIT`` seconds: a missed deadline goes again with a doubled one (``_slower``), a
        failed call again after ``retry_interval`` (a Ray replica that replaces a lost one answers
        UNAVAILABLE meanwhile); one attempt was all it made, and a loaded machine's session lost its
        last hands in silence. An impatient close (Ctrl-C) makes one attempt. What the service did
        not take is said on stderr."""
        with self._wake:
            self._stop = True
            self._wake.notify()
            if self._starting is not None:  # still waiting for the service: end its calls
                self._starting.close()
        self._worker.join()
        self._stream.drop()
        try:
            self._deliver_the_rest(patient and self._session_id is not None)
        except ServiceFailure as exc:
            if self._session_id is not None and len(self._outbox):
                self._say(
                    f"{len(self._outbox)} hands not sent to the service ({failure_reason(exc)}): "
                    f"session {self._session_id} lacks them"
                )
        self._stream.close()
        self._actions.close()
        self._decisions.close()
        self._background.close()

    def _deliver_the_rest(self, patient: bool) -> None:
        """``close``'s sending: once, or (``patient``) until sent or ``CLOSE_WAIT`` is over."""
        give_up = time.monotonic() + CLOSE_WAIT
        while True:
            try:
                self._send_pending(patient=patient)
                return
            except ServiceFailure:
                if not patient or time.monotonic() + self.retry_interval > give_up:
                    raise
                time.sleep(self.retry_interval)

    # -- decisions' side -------------------------------------------------------------------
    def _answered(self, hand: int) -> None:
        with self._wake:
            self.service_decisions += 1
            self._untested_return = self._missed_last = False
            self._quarantine = 0.0
            if self.outages and self.outages[-1].back_at_hand is None:
                outage = self.outages[-1]
                self.outages[-1] = Outage(outage.first_hand, hand, outage.reason)
                if len(self.outages) <= MAX_REPORTED_OUTAGES:
                    self._say(
                        f"hand {hand}: back on the service after {hand - outage.first_hand} "
                        f"hands on {self.fallback_name}"
                    )

    def _missed(self, exc: DeadlineExceededError) -> None:
        """A decision missed its budget: the next one asks the service again, unless the one
        before missed too or no decision has been answered since the return (``_fall_back``)."""
        with self._wake:
            if self._missed_last or self._untested_return:
                self._fall_back(exc)
            else:
                self._missed_last = True

    def _fall_back(self, exc: BaseException) -> None:
        """Switch decisions to the fallback, open an outage unless one is open (the service has
        not answered a decision since it began), and wake the prober."""
        with self._wake:
            if self._on_service and self._untested_return:  # failed again before any answer
                self._quarantine = min(max(2 * self._quarantine, 0.05), MAX_QUARANTINE)
                self._quarantined_until = time.monotonic() + self._quarantine
            self._on_service = self._untested_return = self._missed_last = False
            if isinstance(exc, NotFoundError):  # the server lost the session: a new one, all hands
                self._session_id = None
            self._wake.notify()
            if self.outages and self.outages[-1].back_at_hand is None:
                return
            reason = failure_reason(exc)
            self.outages.append(Outage(self._hand, None, reason))
            if len(self.outages) <= MAX_REPORTED_OUTAGES:
                detail = "" if reason.endswith(str(exc)) else f": {exc}"
                self._say(
                    f"hand {self._hand}: the service failed ({reason}{detail}); playing "
                    f"{self.fallback_name} until it answers"
                    + (
                        "; further outages are counted in the tally only"
                        if len(self.outages) == MAX_REPORTED_OUTAGES
                        else ""
                    )
                )

    def _say(self, message: str) -> None:
        self.err.write(f"acpc-agent: {message}\n")
        self.err.flush()

    # -- start-up ---------------------------------------------------------------------------
    def _start(
        self, target: str, wait: float, timeout: float, options: tuple[tuple[str, int], ...]
    ) -> None:
        """Create the session; decisions start on the service if that worked, on the fallback
        otherwise. A service that does not answer the health check at once is waited for up to
        ``wait`` seconds, and the creation (and the first response, which loads the server's
        kernels) gets as long: each call's deadline is what is left of
        ``max(wait, timeout)``."""
        deadline = time.monotonic() + max(wait, timeout)
        try:
            try:  # serving: the usual case, and the decisions' channel is connected
                self._decisions.check_health()
                ready = True
            except ServiceFailure as exc:
                if wait <= 0:
                    raise
                ready = False
                self._say(
                    f"the service at {target} does not answer yet ({failure_reason(exc)}); "
                    f"waiting up to {wait:g} s for it to serve before the first decision"
                )
            with self._wake:
                if self._stop:
                    return
                self._starting = Deadline(target, deadline, options)
            try:
                self._starting.check_health(wait_for_ready=True)
                self._create_session(self._starting)
            except ValueError:  # "Cannot invoke RPC on closed channel": close() ended the start
                if not self._stop:
                    raise
                return
            finally:
                with self._wake:
                    self._starting.close()
                    self._starting = None
            if not ready:  # its last attempt failed: reconnect it now, not at the first decision
                self._decisions.check_health(wait_for_ready=True)
        except ServiceFailure as exc:
            if not self._stop:  # closed while starting (Ctrl-C, say): no failure to report
                self._fall_back(exc)
        else:
            self._on_service = True

    # -- the background thread -------------------------------------------------------------
    def _run(
        self, target: str, wait: float, timeout: float, options: tuple[tuple[str, int], ...]
    ) -> None:
        """Start (see ``_start``); then send hands while the service takes them, and while
        decisions are on the fallback, probe the service and hand them back once it serves."""
        try:
            self._start(target, wait, timeout, options)
        finally:
            self._started.set()
        while True:
            with self._wake:
                while not self._stop and self._on_service and not self._unsent():
                    self._wake.wait()
                if self._stop:
                    return
                on_service, unsent = self._on_service, self._unsent()
                quarantined = self._quarantined_until - time.monotonic()
            try:
                if not on_service and quarantined <= 0:
                    self._hand_back()
                elif not on_service and not unsent:
                    if self._pause(quarantined):
                        return
                    continue
                self._send_some()
            except DeadlineExceededError:
                self._slower()
                if self._pause(self.retry_interval):
                    return
            except ServiceFailure as exc:
                self._fall_back(exc)
                if self._pause(self.retry_interval):
                    return
            except OSError:  # the service's port refused the probe: still down
                if self._pause(self.retry_interval):
                    return

    def _hand_back(self) -> None:
        """Hand the decisions back once the service serves: its port accepts a connection (a
        test that fails at once while it is down; other targets skip it), then it answers the
        health check. A port accepts connections before its server serves (gRPC binds it before
        the server warms up), and a decision sent then would wait out its whole budget."""
        if self._address is not None:
            with socket.create_connection(self._address, timeout=self.deadline):
                pass
        # waits for the background channel's reconnection and the server's start (its deadline)
        self._background.check_health(wait_for_ready=True)
        if self._session_id is None:
            self._create_session()
        with self._wake:
            self._on_service = self._untested_return = True

    def _slower(self) -> bool:
        """A background call missed its deadline: the service is busy, not gone (a decision call
        decides outages, within its budget). Double the background calls' deadline, up to
        ``MAX_BACKGROUND_DEADLINE`` (a bound on a hang: a busy server's answer ends the call
        sooner); the hands stay unacknowledged and go again. Whether the deadline grew."""
        timeout = self._background.timeout
        self._background.timeout = max(timeout, min(2 * timeout, MAX_BACKGROUND_DEADLINE))
        return self._background.timeout > timeout

    def _unsent(self) -> bool:
        return self._session_id is None or len(self._outbox) > 0

    def _pause(self, seconds: float) -> bool:
        """Wait ``seconds`` unless stopped; whether the policy was stopped."""
        with self._wake:
            self._wake.wait_for(lambda: self._stop, timeout=seconds)
            return self._stop

    def _create_session(self, client: OpponentModelClient | None = None) -> None:
        client = client or self._background
        session = client.create_session(
            game=self.service_game.session_game,
            our_label=self.our_label,
            opponent_labels=self.opponent_labels,
            config=self.config,
            prior_mean=self.prior_strategy,
            default_strategy=self.prior_strategy,
            send_defaults=self.service_game.send_defaults,
            wait_for_solve=False,  # while the server solves the game, the fallback plays
        )
        warm_up(client, session.session_id)
        with self._wake:
            self._session_id = session.session_id
            self._outbox.rewind()

    def _send_pending(self, *, patient: bool = False) -> None:
        """Send every hand the session has not acknowledged. While the decisions are on the
        service (or when ``patient``), a send that missed its deadline goes again with a longer
        one (see ``_slower``)."""
        while True:
            try:
                if not self._send_some():
                    return
            except DeadlineExceededError:
                if not ((patient or self._on_service) and self._slower()):
                    raise

    def _send_some(self) -> bool:
        """Send the next hands the session has not acknowledged, at most ``RESEND_PIECE``; create
        the session again (and resend every hand) if the server lost it. Whether any were sent.

        A backlog (the hands played while the service was down) goes in pieces, so that on the
        server a decision never waits behind more than one piece's updates, and the thread
        returns to probing soon after a decision fails."""
        with self._wake:
            session_id, first = self._session_id, self._outbox.acknowledged + 1
            pending = self._outbox.unacknowledged(RESEND_PIECE)
        if session_id is None:
            self._create_session()
            return True
        if not pending:
            return False
        try:
            self._stream.send(session_id, first, pending)
        except NotFoundError:
            self._create_session()
            return True
        with self._wake:
            if self._session_id == session_id:
                self._outbox.acknowledge(first - 1 + len(pending))
        return True
