"""Python clients of ``chronomem serve`` (the ``client`` extra): :class:`Client` (blocking) and
:class:`AsyncClient`, with the engine's method names, arguments and return types, so
``Memory.open(path)`` can be swapped for ``Client(url, key=...)``.

>>> from chronomem.client import Client
>>> with Client("http://127.0.0.1:8420", key="cmk_…", space="town") as mem:  # doctest: +SKIP
...     mem.remember("Isabella is planning a party", agent="isabella")
...     hits = mem.recall("who is planning a party?", explain=True)

Each verb is defined once, in ``calls.py`` (the causal graph's in ``graph.py``, the service's
operations in ``operations.py``), as a function that validates its arguments and describes the
request; a :class:`Verb` gives both classes that function's signature, sending the call
blocking or awaiting. Errors come back as the engine's own exception classes (the service sends
them as problem documents); an unreachable service raises :class:`~chronomem.ServiceError` and a
refused key :class:`~chronomem.AccessDeniedError`.
"""

from __future__ import annotations

import functools
import ssl
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timedelta
from typing import Any, Generic, ParamSpec, Self, TypeVar, overload
from urllib.parse import quote

import httpx

from chronomem import errors
from chronomem.checks import require_text
from chronomem.client import calls, graph, operations
from chronomem.client.calls import Call, ClockReading
from chronomem.errors import AccessDeniedError, ChronomemError, ServiceError
from chronomem.telemetry.requests import REQUEST_ID

__all__ = ["AsyncClient", "Client", "ClockReading", "RemoteClock", "Verb", "tls_context"]

P = ParamSpec("P")
T = TypeVar("T")


class Verb(Generic[P, T]):
    """One verb on both clients: ``client.recall(...)`` builds the call with ``calls.recall``'s
    signature and sends it — blocking on a :class:`Client`, awaitable on an :class:`AsyncClient`."""

    def __init__(self, build: Callable[P, Call[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type) -> Verb[P, T]: ...

    @overload
    def __get__(self, client: Client, owner: type) -> Callable[P, T]: ...

    @overload
    def __get__(self, client: AsyncClient, owner: type) -> Callable[P, Awaitable[T]]: ...

    def __get__(self, client: object, owner: type) -> Any:
        if client is None:
            return self
        build = self._build
        if isinstance(client, AsyncClient):
            sender = client

            @functools.wraps(build)
            async def awaiting(*args: P.args, **kwargs: P.kwargs) -> T:
                return await sender.send(build(*args, **kwargs))

            return awaiting
        assert isinstance(client, Client)
        blocking_sender = client

        @functools.wraps(build)
        def blocking(*args: P.args, **kwargs: P.kwargs) -> T:
            return blocking_sender.send(build(*args, **kwargs))

        return blocking


class _Verbs:
    """The engine's verbs, shared by both clients."""

    remember = Verb(calls.remember)
    remember_many = Verb(calls.remember_many)
    remember_messages = Verb(calls.remember_messages)
    records = Verb(calls.records)
    get = Verb(calls.get)
    get_many = Verb(calls.get_many)
    dependants = Verb(calls.dependants)
    history = Verb(calls.history)
    audit = Verb(calls.audit)
    changes = Verb(calls.changes)
    supersede = Verb(calls.supersede)
    close_record = Verb(calls.close_record)
    verify = Verb(calls.verify)
    expire = Verb(calls.expire)
    feedback = Verb(calls.feedback)
    forget = Verb(calls.forget)
    close_where = Verb(calls.close_where)
    verify_where = Verb(calls.verify_where)
    forget_where = Verb(calls.forget_where)
    recall = Verb(calls.recall)
    peek = Verb(calls.peek)
    recall_many = Verb(calls.recall_many)
    context = Verb(calls.context)
    agents = Verb(calls.agents)
    stats = Verb(calls.stats)
    accumulated_importance = Verb(calls.accumulated_importance)
    core_blocks = Verb(calls.core_blocks)
    core_append = Verb(calls.core_append)
    core_replace = Verb(calls.core_replace)
    add_event = Verb(graph.add_event)
    get_event = Verb(graph.get_event)
    events = Verb(graph.events)
    link = Verb(graph.link)
    unlink = Verb(graph.unlink)
    links = Verb(graph.links)
    ancestors = Verb(graph.ancestors)
    descendants = Verb(graph.descendants)
    auto_link = Verb(graph.auto_link)
    reflect = Verb(calls.reflect)
    maybe_reflect = Verb(calls.maybe_reflect)
    extract = Verb(calls.extract)
    embed_passages = Verb(calls.embed_passages)
    embed_records = Verb(calls.embed_records)
    calibrate = Verb(calls.calibrate)
    scrub = Verb(calls.scrub)
    review = Verb(calls.review)
    proposals = Verb(calls.proposals)
    approve = Verb(calls.approve)
    reject = Verb(calls.reject)
    set_access_log = Verb(calls.set_access_log)
    accesses = Verb(calls.accesses)
    export = Verb(operations.export)
    import_ = Verb(operations.import_)
    clock_reading = Verb(operations.clock_reading)
    set_clock = Verb(operations.set_clock)
    advance_clock = Verb(operations.advance_clock)
    health = Verb(operations.health)
    add_webhook = Verb(operations.add_webhook)
    webhooks = Verb(operations.webhooks)
    webhook = Verb(operations.webhook)
    webhook_failures = Verb(operations.webhook_failures)
    remove_webhook = Verb(operations.remove_webhook)

    _base: str
    _space: str
    _headers: dict[str, str]
    _timeout: httpx.Timeout

    def _setup(
        self,
        url: str,
        key: str | None,
        space: str,
        headers: Mapping[str, str] | None,
        timeout: float,
    ) -> None:
        self._timeout = httpx.Timeout(timeout)
        self._space = require_text(space, "space")
        self._base = url.rstrip("/")
        self._headers = {"Accept": "application/json", **(headers or {})}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"

    @property
    def space(self) -> str:
        return self._space

    def _url(self, call: Call[Any]) -> str:
        if call.path.startswith("/v1/"):
            return self._base + call.path
        return f"{self._base}/v1/spaces/{quote(self._space, safe='')}{call.path}"

    def _request(self, call: Call[Any]) -> dict[str, Any]:
        out = {
            "method": call.method,
            "url": self._url(call),
            "json": call.body,
            "params": call.params,
            "content": call.content,
            "headers": self._named(self._headers),
        }
        if call.waits:
            t = self._timeout
            read = None if t.read is None else t.read + call.waits
            out["timeout"] = httpx.Timeout(connect=t.connect, read=read, write=t.write, pool=t.pool)
        return out

    @staticmethod
    def _named(headers: dict[str, str]) -> dict[str, str]:
        """``headers``, with ``X-Request-Id`` when the caller names its requests
        (:func:`chronomem.telemetry.request_id`)."""
        request = REQUEST_ID.get()
        return headers if request is None else {**headers, "X-Request-Id": request}


def _answer(call: Call[T], response: httpx.Response) -> T:
    """The verb's value, or the error the service reported, raised as the engine's class."""
    if response.status_code < 400:
        return call.read(response.content)
    raise _error(response)


def _error(response: httpx.Response) -> ChronomemError:
    try:
        problem = response.json()
        name, detail = str(problem["error"]), str(problem["detail"])
    except (ValueError, KeyError, TypeError):
        return ServiceError(
            f"the service answered {response.status_code}: {response.text[:200]}",
            status=response.status_code,
        )
    if response.status_code in (401, 403):
        return AccessDeniedError(detail, status=response.status_code)
    cls = getattr(errors, name, None)
    if name == "NotFound":
        cls = errors.NotFoundError
    if not (isinstance(cls, type) and issubclass(cls, ChronomemError)):
        return ServiceError(f"{name}: {detail}", status=response.status_code)
    err = cls.__new__(cls)
    Exception.__init__(err, detail)
    for member in ("field", "record_id", "event_id", "expected_model", "expected_dim",
                   "got_model", "got_dim"):  # fmt: skip
        setattr(err, member, problem.get(member))
    if isinstance(err, errors.DependentsExistError):
        err.dependants = tuple(problem.get("dependants") or ())
    if isinstance(err, errors.ReflectionError):
        err.reasons = tuple(problem.get("reasons") or ())
    if isinstance(err, errors.LLMHTTPError):
        err.status, err.body = int(problem.get("upstream_status") or 0), ""
    return err


def _unreachable(exc: httpx.HTTPError, url: str) -> ServiceError:
    return ServiceError(f"cannot reach the chronomem service at {url}: {exc}")


class Client(_Verbs):
    """A blocking client of one space of ``chronomem serve``.

    Args:
        url: the service's root, e.g. ``http://127.0.0.1:8420``.
        key: an API key (``cmk_…``); none for a local server that has no keys yet.
        space: the space every call addresses.
        timeout: seconds per request.
        transport: an ``httpx`` transport (tests, proxies).
        headers: sent with every request (a proxy's token). A request made inside
            :func:`chronomem.telemetry.request_id` also sends ``X-Request-Id``.
    """

    def __init__(
        self,
        url: str,
        *,
        key: str | None = None,
        space: str = "default",
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._setup(url, key, space, headers, timeout)
        self._http = httpx.Client(timeout=timeout, transport=transport, verify=_verify(transport))

    def send(self, call: Call[T]) -> T:
        """Send one call and read its answer."""
        try:
            response = self._http.request(**self._request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self._base) from exc
        return _answer(call, response)

    @property
    def clock(self) -> RemoteClock:
        """The space's clock on the service (a :class:`~chronomem.clock.Clock`)."""
        return RemoteClock(self)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient(_Verbs):
    """An asyncio client of one space of ``chronomem serve``: :class:`Client`'s verbs, awaited."""

    def __init__(
        self,
        url: str,
        *,
        key: str | None = None,
        space: str = "default",
        timeout: float = 60.0,
        transport: httpx.AsyncBaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self._setup(url, key, space, headers, timeout)
        self._http = httpx.AsyncClient(
            timeout=timeout, transport=transport, verify=_verify(transport)
        )

    async def send(self, call: Call[T]) -> T:
        """Send one call and read its answer."""
        try:
            response = await self._http.request(**self._request(call))
        except httpx.HTTPError as exc:
            raise _unreachable(exc, self._base) from exc
        return _answer(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS settings every client of this process verifies the service with: httpx's
    defaults (the CA bundle, ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` as set at the first client),
    made once. httpx makes them again for each client by default, loading the CA bundle each
    time: ~30 ms a client, a second for a simulation's 32 agents, during which an event loop
    runs nothing else. Shared: change nothing on it; ``tls_context.cache_clear()`` makes the
    next client read the environment again."""
    return httpx.create_ssl_context()


def _verify(transport: object) -> ssl.SSLContext | bool:
    """``verify`` for a client's httpx client: the shared context, unless a transport of the
    caller's carries its own settings (httpx then makes none)."""
    return tls_context() if transport is None else True


class RemoteClock:
    """A space's clock on the service, as a :class:`~chronomem.clock.Clock` with the
    :class:`~chronomem.SimClock` verbs (``set`` and ``advance`` need an admin key)."""

    def __init__(self, client: Client) -> None:
        self._client = client

    def now(self) -> datetime:
        return self._client.clock_reading().now

    def set(self, instant: datetime | None) -> datetime:
        return self._client.set_clock(instant).now

    def advance(self, delta: timedelta | None = None, **parts: float) -> datetime:
        by = (delta or timedelta()) + timedelta(**parts)
        return self._client.advance_clock(by).now
