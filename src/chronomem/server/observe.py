"""What the service tells its operators (docs/observability.md): a request id on every request,
a span per request when tracing is on, Prometheus metrics at ``/metrics``, and one log line per
request — as JSON with ``--log-format json``.

:class:`Observed` is the outermost ASGI middleware. It takes the client's ``X-Request-Id``
(1–128 letters, digits, ``.``, ``_``, ``:`` or ``-``; anything else is replaced) or makes one,
sends it back in the response's ``X-Request-Id``, and keeps it in
:data:`~chronomem.telemetry.REQUEST_ID` while the request runs, so the verb's spans and its
audit entries name it. Routes are labelled by their template (``/v1/spaces/{space}/recall``),
never by the path a client sent; the space label is given only to answers under 400, so
requests for made-up spaces cannot grow the metrics.
"""

from __future__ import annotations

import json
import logging
import re
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, MutableMapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from chronomem.clock import SystemClock
from chronomem.telemetry import tracing
from chronomem.telemetry.requests import REQUEST_ID

if TYPE_CHECKING:
    from chronomem.server.spaces import Spaces

__all__ = ["ACCESS_LOG", "REQUEST_ID_KEY", "JsonLines", "Metrics", "Observed", "ROUTE"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Any]]
Send = Callable[[Any], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The scope key a handler outside the framework's router sets to its route's template.
ROUTE = "chronomem.route"
_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
#: The logger of the service's line per request (``run.py`` sets its level by log format).
ACCESS_LOG = "chronomem.server.access"
_access = logging.getLogger(ACCESS_LOG)
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class Metrics:
    """The service's Prometheus metrics, in a registry of its own (two apps in one process do
    not mix): requests by route, method and status; latency by route and space; errors by type;
    the embedder's batch sizes; and, read when scraped, each open space's records, the store's
    bytes on disk and the age of each space's index snapshot.

    Raises:
        ConfigError: ``prometheus_client`` is not installed (the ``observe`` extra).
    """

    def __init__(self, spaces: Spaces) -> None:
        try:
            from prometheus_client import CollectorRegistry, Counter, Histogram
        except ImportError as exc:
            from chronomem.errors import ConfigError

            raise ConfigError(
                f"metrics need prometheus_client: pip install 'chronomem[observe]' ({exc})"
            ) from exc
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "chronomem_requests", "HTTP requests answered", ["route", "method", "status"],
            registry=self.registry,
        )  # fmt: skip
        self.latency = Histogram(
            "chronomem_request_duration_seconds", "Time to answer a request",
            ["route", "space"], buckets=_LATENCY_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.errors = Counter(
            "chronomem_errors", "Requests answered with a problem document, by its error",
            ["type"], registry=self.registry,
        )  # fmt: skip
        self.batches = Histogram(
            "chronomem_embedder_batch_texts", "Texts per model run of the shared embedder",
            buckets=_BATCH_BUCKETS, registry=self.registry,
        )  # fmt: skip
        self.registry.register(_StoreCollector(spaces))

    def render(self) -> tuple[bytes, str]:
        """The exposition (text format) and its media type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _StoreCollector:
    """Gauges read from the store at each scrape, for the spaces the service has open that the
    store holds."""

    def __init__(self, spaces: Spaces) -> None:
        self._spaces = spaces

    def describe(self) -> list[Any]:
        return []  # read at each scrape (no fixed series)

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        records = GaugeMetricFamily("chronomem_records", "Records of the space", labels=["space"])
        snapshot = GaugeMetricFamily(
            "chronomem_index_snapshot_age_seconds",
            "Seconds since the space's index snapshot was written (absent: none)",
            labels=["space"],
        )
        size = GaugeMetricFamily("chronomem_store_bytes", "The store's size on disk")
        now, sized = SystemClock().now().timestamp(), False
        stored = set(self._spaces.admin.spaces())  # not a name some request made up
        for space, memory in self._spaces.open_spaces():
            if space not in stored:
                continue
            stats = memory.stats()
            records.add_metric([space], float(stats["records"]))
            written = stats.get("index_snapshot_at")
            if written is not None:
                age = now - datetime.fromisoformat(written).timestamp()
                snapshot.add_metric([space], max(0.0, age))
            if not sized and stats.get("bytes_on_disk") is not None:
                size.add_metric([], float(stats["bytes_on_disk"]))
                sized = True
        yield from (records, snapshot, size)


class JsonLines(logging.Formatter):
    """One JSON object per log record: time, level, logger, message, and the request's fields
    (``request_id``, ``method``, ``route``, ``space``, ``status``, ``duration_ms``) when the
    record carries them."""

    FIELDS = ("request_id", "method", "route", "space", "status", "duration_ms", "error")

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        request = REQUEST_ID.get()
        if request is not None:
            out["request_id"] = request
        for name in self.FIELDS:
            if name in record.__dict__:
                out[name] = record.__dict__[name]
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, ensure_ascii=False, default=str)


#: Where a request's scope keeps its id, for the answers written outside this middleware.
REQUEST_ID_KEY = "chronomem.request_id"


class Observed:
    """ASGI middleware (outermost): request ids, a span per request, metrics and the access
    log. ``metrics``: ``None`` when the service keeps none."""

    def __init__(self, app: ASGIApp, metrics: Metrics | None) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        sent = _header(scope, b"x-request-id")
        request_id = sent if sent is not None and _ID.fullmatch(sent) else uuid.uuid4().hex
        token = REQUEST_ID.set(request_id)
        scope[REQUEST_ID_KEY] = request_id  # for the 500 the outer error middleware writes
        method = scope["method"]
        status, error = 500, None
        started = time.perf_counter()

        async def answer(message: Any) -> None:
            nonlocal status, error
            if message["type"] == "http.response.start":
                status = int(message["status"])
                message = {
                    **message,
                    "headers": [
                        *message.get("headers", []),
                        (b"x-request-id", request_id.encode()),
                    ],
                }
            elif message["type"] == "http.response.body" and status >= 400 and error is None:
                error = _problem_error(message.get("body", b""))
            await send(message)

        route = "unmatched"
        try:
            with tracing.request(method, scope.get("headers") or []) as span:
                try:
                    await self.app(scope, receive, answer)
                except Exception:  # the outer error middleware answers 500 and logs it
                    status, error = 500, error or "InternalError"
                    raise
                finally:
                    route = _route(scope)
                    span.name_after(method, route)
                    span.set(route=route, status=status)
        finally:
            REQUEST_ID.reset(token)
            self._record(request_id, method, route, scope, status, error, started)

    def _record(
        self, request_id: str, method: str, route: str, scope: Scope, status: int,
        error: str | None, started: float,
    ) -> None:  # fmt: skip
        """The request's metrics and access line."""
        seconds = time.perf_counter() - started
        space = scope.get("path_params", {}).get("space") if status < 400 else None
        if self.metrics is not None:
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, space or "-").observe(seconds)
            if status >= 400:
                self.metrics.errors.labels(error or f"HTTP {status}").inc()
        if not _access.isEnabledFor(logging.INFO):
            return
        _access.info(
            "%s %s %d %.1f ms", method, route, status, seconds * 1000,
            extra={
                "request_id": request_id, "method": method, "route": route, "space": space,
                "status": status, "duration_ms": round(seconds * 1000, 3), "error": error,
            },
        )  # fmt: skip


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or ():
        if key == name:
            return bytes(value).decode("latin-1")
    return None


def _route(scope: Scope) -> str:
    """The template of the route that answered (``unmatched`` for none)."""
    named = scope.get(ROUTE)
    if named is not None:
        return str(named)
    route = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


def _problem_error(body: bytes) -> str | None:
    """The ``error`` of a problem document (``None``: the body is not one)."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
    found = document.get("error") if isinstance(document, dict) else None
    return str(found) if isinstance(found, str) and found else None
