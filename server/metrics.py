"""Prometheus metrics of one server, in its own registry (several servers can share a process)."""

from __future__ import annotations

from wsgiref.simple_server import WSGIServer

import grpc
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server

_LATENCY_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 1.0, 5.0)
_ESS_BUCKETS = (1, 1.5, 2, 3, 5, 10, 20, 50, 100, 1000)


class Metrics:
    """Requests and latencies per RPC, live sessions, observations applied, posterior ESS."""

    def __init__(self) -> None:
        self._http: WSGIServer | None = None
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "oppmodel_requests",
            "RPCs handled, by method and status code",
            ("method", "code"),
            registry=self.registry,
        )
        self.latency = Histogram(
            "oppmodel_request_seconds",
            "RPC latency (streams: per observation)",
            ("method",),
            buckets=_LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.live_sessions = Gauge(
            "oppmodel_live_sessions", "Sessions loaded in memory", registry=self.registry
        )
        self.live_session_bytes = Gauge(
            "oppmodel_live_session_bytes",
            "Estimated memory of the sessions loaded (bounded by --memory-mb)",
            registry=self.registry,
        )
        self.observations = Counter(
            "oppmodel_observations_applied",
            "Observations committed and applied to a posterior",
            registry=self.registry,
        )
        self.ess = Histogram(
            "oppmodel_posterior_ess",
            "Effective sample size of opponent posteriors returned by GetModel",
            buckets=_ESS_BUCKETS,
            registry=self.registry,
        )

        self._children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}
        self._observe_latency = self.latency.labels("Observe")

    def count(self, method: str, code: grpc.StatusCode, seconds: float | None) -> None:
        """Count one finished RPC and record its latency."""
        key = (method, code.name)
        children = self._children.get(key)
        if children is None:  # labels() lookups are slow; cache the children
            children = (self.requests.labels(*key), self.latency.labels(method))
            self._children[key] = children
        children[0].inc()
        if seconds is not None:
            children[1].observe(seconds)

    def observe_latency(self, seconds: float) -> None:
        """Record the time to store and apply one observation of an Observe stream."""
        self._observe_latency.observe(seconds)

    def serve(self, port: int, host: str = "127.0.0.1") -> int:
        """Expose /metrics over HTTP on ``host:port`` (a daemon thread); returns the bound port
        (``port`` 0 picks a free one)."""
        self._http, _ = start_http_server(port, addr=host, registry=self.registry)
        return self._http.server_port

    def close(self) -> None:
        """Stop serving /metrics (idempotent; nothing to do if it never served)."""
        http, self._http = self._http, None
        stop_serving(http)


def stop_serving(http: WSGIServer | None) -> None:
    """Stop a /metrics server that ``start_http_server`` started (None: nothing to stop)."""
    if http is not None:
        http.shutdown()
        http.server_close()
