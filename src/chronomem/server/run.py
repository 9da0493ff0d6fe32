"""Starting ``chronomem serve``: open the store, check the keys rule, run uvicorn."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chronomem.embedders.base import Embedder
from chronomem.errors import ConfigError
from chronomem.llm.base import LLMClient
from chronomem.retrieval.compact import set_scan_threads
from chronomem.server.auth import is_loopback
from chronomem.server.observe import ACCESS_LOG

__all__ = ["ServeSettings", "one_blas_thread", "one_scan_thread", "serve"]

_log = logging.getLogger(__name__)

# The variables that set numpy's BLAS thread count: where one is set, the operator chose.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    db: str | os.PathLike[str]
    host: str = "127.0.0.1"
    port: int = 8420
    embedder: Embedder | None = None
    preset: str = "default"
    llm: LLMClient | None = None
    max_body_bytes: int = 16 << 20
    log_level: str = "info"
    embedder_runs: int = 1
    readers: int = 1  # handles per space that may read at once (``Spaces.reader``)
    log_format: str = "text"  # or "json": one JSON object per line (``observe.JsonLines``)
    webhook_lease: float = 30.0  # seconds a process may keep a webhook from the others


def serve(settings: ServeSettings) -> int:
    """Run the service until interrupted. Refuses a non-loopback address while the store holds
    no active key (an open server would give every caller admin rights on every space)."""
    try:
        import uvicorn

        from chronomem.server.app import create_app
        from chronomem.server.spaces import SharedEmbedder, Spaces
        from chronomem.server.stopping import StoppingServer
        from chronomem.telemetry.tracing import instrument_if_configured
    except ImportError as exc:
        raise ConfigError(
            f"chronomem serve needs the serve extra: pip install 'chronomem[serve]' ({exc})"
        ) from exc
    one_blas_thread(os.environ)
    one_scan_thread(os.environ)
    embedder = (
        None
        if settings.embedder is None
        else SharedEmbedder(settings.embedder, runs=settings.embedder_runs)
    )
    spaces = Spaces(
        location=settings.db, embedder=embedder, preset=settings.preset, llm=settings.llm,
        readers=settings.readers,
    )  # fmt: skip
    try:
        loopback = is_loopback(settings.host)
        keyed = any(k.is_active for k in spaces.admin.api_keys())
        if not loopback and not keyed:
            raise ConfigError(
                f"refusing to serve on {settings.host} without API keys: anyone who can reach it "
                f"would have admin rights. Create one with `chronomem keys create --scope admin "
                f"--all-spaces`, or serve on 127.0.0.1"
            )
        app = create_app(
            spaces, loopback=loopback, max_body_bytes=settings.max_body_bytes,
            webhook_lease=settings.webhook_lease,
        )  # fmt: skip
        mode = (
            "API keys required" if keyed or not loopback else "open to the local user (no keys yet)"
        )
        print(
            f"chronomem serving {len(spaces.admin.spaces())} space(s) on "
            f"http://{settings.host}:{settings.port} ({mode}); docs at /docs",
            file=sys.stderr,
        )
        traced = instrument_if_configured()
        if traced:
            print("chronomem tracing to the configured OpenTelemetry provider", file=sys.stderr)
        config = uvicorn.Config(
            app, host=settings.host, port=settings.port, log_level=settings.log_level,
            **_logging(settings),
        )  # fmt: skip
        server = StoppingServer(config, spaces.stopping)
        server.run()
    finally:
        spaces.close()
    return 0 if server.started else 3  # as uvicorn.run: "could not start" (it said why)


def one_blas_thread(environ: Mapping[str, str]) -> bool:
    """Run numpy's BLAS on one thread in this process, unless ``environ`` sets its thread count
    (:data:`BLAS_THREAD_VARIABLES`); returns whether it did. The service scores many requests at
    once, each on a thread of its own. When reads still multiplied the query by a space's
    passages in float32 and OpenBLAS split that product over every core, a read's int8 scan
    took about twice as long, and the read 1.5×; the float32 reads (smaller agents, several
    agents) still make such products (docs/http.md, "Threads"). Needs ``threadpoolctl`` (the
    serve extra)."""
    if any(environ.get(name) for name in BLAS_THREAD_VARIABLES):
        return False
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        _log.warning("threadpoolctl is not installed: numpy's BLAS keeps a thread per core")
        return False
    threadpool_limits(limits=1, user_api="blas")
    return True


def one_scan_thread(environ: Mapping[str, str]) -> int:
    """Run this process's int8 scans (``retrieval/compact.py``) on ``OMP_NUM_THREADS`` threads
    when ``environ`` sets it to a count, else on one; returns the count. Left to itself,
    SimSIMD splits each scan over every core, and its threads wait busily for more work after
    it, taking a core from the requests scored beside it (docs/http.md, "Threads")."""
    chosen = environ.get("OMP_NUM_THREADS", "").strip()
    count = int(chosen) if chosen.isdigit() and int(chosen) > 0 else 1
    set_scan_threads(count)
    return count


def _logging(settings: ServeSettings) -> dict[str, Any]:
    """uvicorn's logging arguments: its own text lines, or every line (the service's per
    request, uvicorn's, chronomem's) as JSON on standard error, without uvicorn's access
    lines (the service's carry more)."""
    if settings.log_format == "text":  # uvicorn writes its access lines; the service's are off
        logging.getLogger(ACCESS_LOG).setLevel(logging.WARNING)
        return {}
    if settings.log_format != "json":
        raise ConfigError(f"log format must be text or json; got {settings.log_format!r}")
    logging.getLogger(ACCESS_LOG).setLevel(logging.NOTSET)  # the root's level
    level = settings.log_level.upper()
    handler = {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
    return {
        "access_log": False,
        "log_config": {
            "version": 1,
            "disable_existing_loggers": False,
            "formatters": {"json": {"()": "chronomem.server.observe.JsonLines"}},
            "handlers": {"json": handler},
            "root": {"handlers": ["json"], "level": level},
            "loggers": {
                "uvicorn": {"handlers": [], "propagate": True},
                "uvicorn.error": {"handlers": [], "propagate": True},
                "uvicorn.access": {"handlers": [], "propagate": False},
            },
        },
    }
