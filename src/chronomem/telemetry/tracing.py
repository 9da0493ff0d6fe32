"""OpenTelemetry spans (docs/observability.md): one per verb of :class:`~chronomem.Memory`
(``chronomem.recall``, ``chronomem.remember``, …) and one per stage of a read
(``chronomem.read.embed``, ``…sync``, ``…relevance``, ``…scoring``, ``…causal``, ``…hits``,
``…touch``), with the space, the agent count, the candidate count and ``k`` as attributes —
never a memory's or a query's text.

Off until :func:`instrument` is called: the verbs (the public methods of the classes marked
:func:`traced`: :class:`~chronomem.Memory`) are then wrapped (the classes' own methods
are left as they were, so an uninstrumented process runs no tracing code in a verb), and a
read's stages cost one check of a module global each. :func:`instrument` takes a tracer provider
(the global one by default: ``opentelemetry-instrument chronomem serve …`` sets it from the
``OTEL_*`` environment variables); it needs the ``observe`` extra.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from typing import Any

from chronomem.errors import ConfigError
from chronomem.telemetry.requests import REQUEST_ID

__all__ = [
    "instrument",
    "instrument_if_configured",
    "instrumented",
    "request",
    "stage",
    "traced",
    "uninstrument",
]

Attribute = str | int | float | bool

_tracer: Any = None  # the OpenTelemetry tracer while instrumented
_MISSING = object()
_classes: list[type] = []  # the classes whose public methods are verbs (:func:`traced`)
_saved: dict[tuple[type, str], object] = {}  # each class's own attribute per wrapped name


class _Off:
    """A stage while tracing is off: does nothing."""

    __slots__ = ()

    def __enter__(self) -> _Off:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, **attributes: Attribute | None) -> None:
        return None

    def name_after(self, method: str, route: str) -> None:
        return None


_OFF = _Off()


def _attributes(found: dict[str, Attribute | None]) -> dict[str, Attribute]:
    out = {f"chronomem.{k}": v for k, v in found.items() if v is not None}
    request = REQUEST_ID.get()
    if request is not None:
        out["chronomem.request_id"] = request
    return out


class _Span:
    """A stage while tracing is on: a span, current while the block runs."""

    __slots__ = ("_current", "_span")

    def __init__(self, name: str, attributes: dict[str, Attribute | None], **options: Any) -> None:
        self._current = _tracer.start_as_current_span(
            name, attributes=_attributes(attributes), **options
        )
        self._span: Any = None

    def __enter__(self) -> _Span:
        self._span = self._current.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._current.__exit__(*exc)

    def set(self, **attributes: Attribute | None) -> None:
        """Attributes learnt inside the block (a candidate count)."""
        self._span.set_attributes(
            {f"chronomem.{k}": v for k, v in attributes.items() if v is not None}
        )

    def name_after(self, method: str, route: str) -> None:
        """Name a request's span after its route, as OpenTelemetry's HTTP conventions do."""
        self._span.update_name(f"{method} {route}")
        self._span.set_attributes({"http.request.method": method, "http.route": route})


def stage(name: str, **attributes: Attribute | None) -> _Off | _Span:
    """The span of one stage (``chronomem.<name>``) as a context manager whose ``set`` adds
    attributes; a no-op while tracing is off. ``None`` attributes are left out."""
    if _tracer is None:
        return _OFF
    return _Span(f"chronomem.{name}", attributes)


def request(method: str, headers: Iterable[tuple[bytes, bytes]]) -> _Off | _Span:
    """The server span of one HTTP request, a child of the caller's trace when its headers
    carry one (W3C ``traceparent``); a no-op while tracing is off."""
    if _tracer is None:
        return _OFF
    from opentelemetry import propagate
    from opentelemetry.trace import SpanKind

    carrier = {k.decode("latin-1"): v.decode("latin-1") for k, v in headers}
    return _Span(f"{method}", {}, kind=SpanKind.SERVER, context=propagate.extract(carrier))


def instrumented() -> bool:
    return _tracer is not None


def instrument(tracer_provider: Any = None) -> None:
    """Trace every verb and read stage from now on, to ``tracer_provider`` (default: the
    global one). Calling it again switches the provider.

    Raises:
        ConfigError: OpenTelemetry is not installed (``pip install 'chronomem[observe]'``).
    """
    global _tracer
    try:
        from opentelemetry import trace
    except ImportError as exc:
        raise ConfigError(
            f"tracing needs OpenTelemetry: pip install 'chronomem[observe]' ({exc})"
        ) from exc
    from chronomem import __version__

    _tracer = trace.get_tracer("chronomem", __version__, tracer_provider=tracer_provider)
    if not _saved:
        _wrap_verbs()


def instrument_if_configured() -> bool:
    """Instrument when the process has a global tracer provider that records (one set by the
    application or by ``opentelemetry-instrument``); whether it did."""
    try:
        from opentelemetry import trace
    except ImportError:
        return False
    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return False
    instrument(provider)
    return True


def traced(cls: type) -> type:
    """Class decorator: the public methods of ``cls`` (its own and inherited from chronomem's
    classes) get a span each while instrumented."""
    _classes.append(cls)
    if _tracer is not None:
        _wrap(cls)
    return cls


def uninstrument() -> None:
    """Stop tracing; the verbs are the classes' own again."""
    global _tracer
    _tracer = None
    for (cls, name), own in _saved.items():
        if own is _MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, own)
    _saved.clear()


def _wrap_verbs() -> None:
    for cls in _classes:
        _wrap(cls)


def _wrap(cls: type) -> None:
    names = {
        name
        for base in cls.__mro__
        if base.__module__.startswith("chronomem.")
        for name, value in vars(base).items()
        if not name.startswith("_") and (callable(value) or isinstance(value, classmethod))
    }
    for name in sorted(names):
        raw = next(vars(c)[name] for c in cls.__mro__ if name in vars(c))
        if isinstance(raw, staticmethod | property | type):
            continue
        _saved[(cls, name)] = vars(cls).get(name, _MISSING)
        if isinstance(raw, classmethod):
            setattr(cls, name, classmethod(_traced(name, raw.__func__, of_class=True)))
        else:
            setattr(cls, name, _traced(name, raw, of_class=False))


def _traced(name: str, verb: Callable[..., Any], *, of_class: bool) -> Callable[..., Any]:
    span_name = f"chronomem.{name}"

    @functools.wraps(verb)
    def traced(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _tracer is None:
            return verb(self, *args, **kwargs)
        space = None if of_class else getattr(self, "space", None)
        with _tracer.start_as_current_span(
            span_name, attributes=_attributes({"verb": name, "space": space})
        ):
            return verb(self, *args, **kwargs)

    return traced
