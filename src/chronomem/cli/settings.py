"""The CLI's configuration, read in exactly one place (:func:`settings`), and the handles it
opens from it. The engine, the model and the HTTP client are imported only by the command that
needs them: a command run through ``--server`` never loads the engine."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from chronomem.checks import parse_instant
from chronomem.cli.host import os_user
from chronomem.errors import ConfigError, InvalidInputError

if TYPE_CHECKING:
    from chronomem.client import Client
    from chronomem.embedders.base import Embedder
    from chronomem.engine import Memory
    from chronomem.llm import OpenAICompatibleLLM

__all__ = ["Settings", "engine_class", "llm_client", "open_memory", "settings"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    db: str
    space: str
    embedder: bool
    torch_threads: int | None
    actor: str | None
    llm_url: str | None
    llm_model: str | None
    llm_api_key: str | None
    server: str | None = None
    key: str | None = None
    now: datetime | None = None
    embedder_backend: str = "auto"
    cache_dir: str | None = None
    embed_model: str | None = None
    embed_url: str | None = None
    embed_api_key: str | None = None
    embed_languages: tuple[str, ...] | None = None


def settings(args: argparse.Namespace, environ: Mapping[str, str]) -> Settings:
    """The one place the CLI reads its environment: ``CHRONOMEM_DB``, ``CHRONOMEM_SPACE``,
    ``CHRONOMEM_TORCH_THREADS``, ``CHRONOMEM_ACTOR`` (else ``USER``, else the OS account's name,
    else ``uid N``: never nobody) for the audit log, and
    ``CHRONOMEM_LLM_URL`` / ``CHRONOMEM_LLM_MODEL`` / ``CHRONOMEM_LLM_API_KEY`` for reflection,
    ``CHRONOMEM_URL`` / ``CHRONOMEM_KEY`` to run every verb through a ``chronomem serve``,
    ``CHRONOMEM_NOW`` for a simulated now (``--now``),
    ``CHRONOMEM_EMBEDDER`` (``auto``, ``torch``, ``onnx``, ``onnx-int8``) for the model's backend
    and ``CHRONOMEM_CACHE_DIR`` for where its ONNX export is kept; another model:
    ``CHRONOMEM_EMBED_MODEL`` (a local sentence-transformers folder, or with
    ``CHRONOMEM_EMBED_URL`` the model an OpenAI-compatible endpoint serves),
    ``CHRONOMEM_EMBED_API_KEY`` and ``CHRONOMEM_EMBED_LANGUAGES`` (the endpoint's languages,
    comma-separated ISO 639-1 codes; a folder's come from its card unless given).
    Flags win over the environment; the LLM's API key is read from the environment only."""
    threads = environ.get("CHRONOMEM_TORCH_THREADS")
    actor = (
        getattr(args, "actor", None)
        or environ.get("CHRONOMEM_ACTOR")
        or environ.get("USER")
        or os_user()
    )
    return Settings(
        db=args.db or environ.get("CHRONOMEM_DB") or "chronomem.db",
        space=args.space or environ.get("CHRONOMEM_SPACE") or "default",
        embedder=not args.no_embedder,
        torch_threads=_count(threads, "CHRONOMEM_TORCH_THREADS"),
        actor=actor,
        llm_url=getattr(args, "llm_url", None) or environ.get("CHRONOMEM_LLM_URL"),
        llm_model=getattr(args, "model", None) or environ.get("CHRONOMEM_LLM_MODEL"),
        llm_api_key=environ.get("CHRONOMEM_LLM_API_KEY"),
        server=getattr(args, "server", None) or environ.get("CHRONOMEM_URL"),
        key=getattr(args, "key", None) or environ.get("CHRONOMEM_KEY"),
        now=getattr(args, "now", None) or _instant(environ.get("CHRONOMEM_NOW"), "CHRONOMEM_NOW"),
        embedder_backend=environ.get("CHRONOMEM_EMBEDDER") or "auto",
        cache_dir=environ.get("CHRONOMEM_CACHE_DIR") or None,
        embed_model=environ.get("CHRONOMEM_EMBED_MODEL") or None,
        embed_url=environ.get("CHRONOMEM_EMBED_URL") or None,
        embed_api_key=environ.get("CHRONOMEM_EMBED_API_KEY") or None,
        embed_languages=language_codes(environ.get("CHRONOMEM_EMBED_LANGUAGES")),
    )


def language_codes(text: str | None) -> tuple[str, ...] | None:
    """``"ko, en"`` as ``("ko", "en")``; ``None`` for nothing given."""
    codes = tuple(c.strip() for c in (text or "").split(",") if c.strip())
    return codes or None


def _count(text: str | None, name: str) -> int | None:
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise ConfigError(f"{name} must be a whole number; got {text!r}") from None


def _instant(text: str | None, name: str) -> datetime | None:
    if not text:
        return None
    try:
        return parse_instant(text, name)
    except InvalidInputError as exc:
        raise ConfigError(str(exc)) from None


def embedder_for(cfg: Settings) -> Embedder | None:
    """The embedder the settings ask for: none with ``--no-embedder``; an OpenAI-compatible
    endpoint or a local folder (``CHRONOMEM_EMBED_URL``, ``CHRONOMEM_EMBED_MODEL``); else the
    bundled model on the ``CHRONOMEM_EMBEDDER`` backend."""
    if not cfg.embedder:
        return None
    if cfg.embed_url:
        from chronomem.embedders.openai_compatible import OpenAICompatibleEmbedder

        if not cfg.embed_model:
            raise ConfigError(
                "CHRONOMEM_EMBED_URL needs CHRONOMEM_EMBED_MODEL: the model the endpoint serves"
            )
        return OpenAICompatibleEmbedder(
            cfg.embed_url, cfg.embed_model, api_key=cfg.embed_api_key,
            languages=cfg.embed_languages,
        )  # fmt: skip
    if cfg.embed_model:
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(
            cfg.embed_model, num_threads=cfg.torch_threads, languages=cfg.embed_languages or "card"
        )
    from chronomem.embedders.default import default_embedder

    return default_embedder(
        cfg.embedder_backend, num_threads=cfg.torch_threads, cache_dir=cfg.cache_dir
    )


def llm_client(cfg: Settings, what: str = "reflection") -> OpenAICompatibleLLM:
    """The OpenAI-compatible client the settings describe (``what`` needs it)."""
    from chronomem.llm import OpenAICompatibleLLM

    if not cfg.llm_url or not cfg.llm_model:
        raise ConfigError(
            f"{what} needs an LLM: pass --llm-url and --model (or set CHRONOMEM_LLM_URL and "
            "CHRONOMEM_LLM_MODEL), e.g. http://localhost:11434/v1 and llama3.1 for Ollama"
        )
    return OpenAICompatibleLLM(cfg.llm_url, cfg.llm_model, api_key=cfg.llm_api_key)


def open_memory(
    cfg: Settings,
    preset: str | None = None,
    *,
    create: bool = False,
    allow_missing_vectors: bool = False,
    writes: bool = False,
) -> Memory | Client:
    """The space the settings name: through the service when ``--server`` (or ``CHRONOMEM_URL``)
    is set — the model stays loaded there between commands, and the service decides about
    creating and vectors — else the store itself. Only commands that add to a store create one
    (``create``): every other command refuses a location that holds no store, so a mistyped
    ``--db`` creates nothing.

    With a simulated now (``--now``, ``CHRONOMEM_NOW``) the handle's clock is fixed at that
    instant; a command that ``writes`` refuses a now earlier than the space's newest write
    (see :func:`~chronomem.cli.simulated.check_not_backwards`). Through the service its space
    clock applies, so ``--now`` is refused there."""
    if cfg.server:
        from chronomem.client import Client

        if cfg.now is not None:
            raise ConfigError(
                "--now (CHRONOMEM_NOW) applies to a store (--db); through --server the "
                "space's clock applies: set it with PUT /v1/spaces/{space}/clock"
            )
        return Client(cfg.server, key=cfg.key, space=cfg.space)
    from chronomem.clock import SimClock
    from chronomem.engine import Memory

    memory = Memory.open(
        cfg.db,
        embedder=embedder_for(cfg),
        clock=None if cfg.now is None else SimClock(cfg.now),
        space=cfg.space,
        preset=preset or "default",
        create=create,
        allow_missing_vectors=allow_missing_vectors,
    )
    if writes and cfg.now is not None:
        from chronomem.cli.simulated import check_not_backwards

        with _closing_on_error(memory):
            check_not_backwards(memory, cfg.now)
    return memory


@contextmanager
def _closing_on_error(memory: Memory) -> Iterator[None]:
    try:
        yield
    except BaseException:
        memory.close()
        raise


def engine_class() -> type[Memory]:
    """The engine's class, imported when a command must tell the store from the service."""
    from chronomem.engine import Memory

    return Memory
