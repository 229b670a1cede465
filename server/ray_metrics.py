"""Prometheus ``/metrics`` of ``oppmodel serve --ray``: every replica's metrics, served from the
serve process, each series labelled with its replica.

Push, not pull: each replica sends its registry's current samples (cumulative values, so a lost
push loses nothing) every :data:`PUSH_SECONDS` to a named actor, the *board*, which keeps the
latest set of each replica; the serve process's HTTP endpoint answers a scrape with the board's
sets of the replicas heard from in the last :data:`STALE_SECONDS` (one that stopped pushing, being
gone, drops out). Pulling instead would have the serve process find and call every replica at
scrape time, and Ray offers no public way to list a deployment's replicas or to call one of them
in particular (the router picks); the board needs only our own actor's name. A replica's cost is
one small message a second, whatever its load; a slow board costs a replica nothing (a push waits
for the previous one to be delivered or is skipped), and a scrape waits for the board at most
:data:`SCRAPE_TIMEOUT_SECONDS`, then answers with nothing rather than fail.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, start_http_server
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from oppmodel.server.metrics import stop_serving

log = logging.getLogger("oppmodel.server")

BOARD_NAME = "oppmodel-metrics"
BOARD_NAMESPACE = "oppmodel"
REPLICA_LABEL = "replica"
PUSH_SECONDS = 1.0
STALE_SECONDS = 5.0  # a replica not heard from for this long (five pushes) is dropped
SCRAPE_TIMEOUT_SECONDS = 2.0


class MetricsBoard:
    """The Ray actor that holds each replica's latest samples (``ray.remote`` makes it one)."""

    def __init__(
        self,
        stale_seconds: float = STALE_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stale_seconds = stale_seconds
        self._clock = clock
        self._latest: dict[str, tuple[float, list[Metric]]] = {}

    def push(self, replica: str, families: list[Metric]) -> None:
        """Keep ``families`` as ``replica``'s current samples."""
        self._latest[replica] = (self._clock(), families)

    def snapshot(self) -> dict[str, list[Metric]]:
        """The latest samples of every replica heard from recently; the others are forgotten."""
        now = self._clock()
        self._latest = {
            replica: (heard, families)
            for replica, (heard, families) in self._latest.items()
            if now - heard <= self._stale_seconds
        }
        return {replica: families for replica, (_, families) in self._latest.items()}


def labelled(snapshot: dict[str, list[Metric]]) -> list[Metric]:
    """One family per metric name with every replica's samples, each labelled with its replica
    (so ``sum by (method, code) (oppmodel_requests_total)`` is the service's total)."""
    merged: dict[str, Metric] = {}
    for replica, families in sorted(snapshot.items()):
        for family in families:
            into = merged.get(family.name)
            if into is None:
                into = merged[family.name] = Metric(
                    family.name, family.documentation, family.type, family.unit
                )
            into.samples.extend(
                sample._replace(labels={**sample.labels, REPLICA_LABEL: replica})
                for sample in family.samples
            )
    return list(merged.values())


class _BoardCollector(Collector):
    """Answers a scrape with the board's snapshot, waiting for it a bounded time."""

    def __init__(self, snapshot: Callable[[], dict[str, list[Metric]]]) -> None:
        self._snapshot = snapshot

    def collect(self) -> Iterable[Metric]:
        """The replicas' families, labelled; none if the board does not answer in time."""
        try:
            return labelled(self._snapshot())
        except Exception as exc:  # the board is slow, not started yet or gone: still answer
            log.warning("metrics board did not answer", extra={"error": repr(exc)})
            return []


class ReplicaMetricsEndpoint:
    """The serve process's ``/metrics``: bound at once (before Ray starts, so that a busy port is
    refused first), answering once :meth:`start_board` has created the board."""

    def __init__(self, port: int, host: str) -> None:
        # (imported here: the board's Ray worker imports this module, and needs none of the
        # server's machinery, numba included)
        from oppmodel.server.listening import start_metrics_endpoint

        self._board: Any = None
        registry = CollectorRegistry()
        registry.register(_BoardCollector(self._snapshot))
        http, _ = start_metrics_endpoint(
            lambda port, host: start_http_server(port, addr=host, registry=registry), host, port
        )
        self._http: WSGIServer | None = http
        self.port: int = http.server_port

    def start_board(self) -> None:
        """Create the board the replicas push to (Ray must be connected)."""
        import ray

        board = ray.remote(num_cpus=0)(MetricsBoard)
        self._board = board.options(name=BOARD_NAME, namespace=BOARD_NAMESPACE).remote()

    def _snapshot(self) -> dict[str, list[Metric]]:
        if self._board is None:
            return {}
        import ray

        snapshot: dict[str, list[Metric]] = ray.get(
            self._board.snapshot.remote(), timeout=SCRAPE_TIMEOUT_SECONDS
        )
        return snapshot

    def close(self) -> None:
        """Stop serving and remove the board (idempotent)."""
        board, self._board = self._board, None
        if board is not None:
            import ray

            if ray.is_initialized():  # (else it went with Ray)
                ray.kill(board)
        http, self._http = self._http, None
        stop_serving(http)


class MetricsPusher:
    """A replica's daemon thread that pushes ``registry``'s samples to the board every
    ``interval`` seconds, from its start until :meth:`close`; it finds the board by name (again
    after the board went away), and skips a push while the previous one is undelivered."""

    def __init__(
        self, registry: CollectorRegistry, replica: str, *, interval: float = PUSH_SECONDS
    ) -> None:
        self._registry = registry
        self._replica = replica
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="oppmodel-metrics", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        board: Any = None
        pending: Any = None  # the last push's reference until it is delivered
        failing = False
        for _ in self._ticks():
            try:
                board, pending = self._push(board, pending)
                failing = False
            except Exception as exc:  # Ray going down, the board gone mid-call: retry anew
                if not failing:
                    log.warning("metrics push failed", extra={"error": repr(exc)})
                board, pending, failing = None, None, True

    def _push(self, board: Any, pending: Any) -> tuple[Any, Any]:
        """Push unless the previous push is undelivered; returns the board and the push."""
        import ray

        if pending is not None:
            done, _ = ray.wait([pending], timeout=0)
            if not done:
                return board, pending  # the board is busy: the next push carries the same counts
            try:
                ray.get(pending)
            except ray.exceptions.RayError:  # the board went away: look it up again
                board = None
        if board is None:
            try:
                board = ray.get_actor(BOARD_NAME, namespace=BOARD_NAMESPACE)
            except ValueError:  # no board (yet)
                return None, None
        return board, board.push.remote(self._replica, list(self._registry.collect()))

    def _ticks(self) -> Iterator[None]:
        """Now, then every ``interval`` seconds until closed."""
        while not self._stop.is_set():
            yield None
            self._stop.wait(self._interval)

    def close(self) -> None:
        """Stop pushing (the board forgets this replica :data:`STALE_SECONDS` later)."""
        self._stop.set()
