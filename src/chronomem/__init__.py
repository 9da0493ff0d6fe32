"""chronomem: a memory engine for LLM agents and multi-agent simulations.

>>> from chronomem import Memory, SimClock
>>> from datetime import datetime, UTC
>>> clock = SimClock(datetime(2023, 2, 13, 8, tzinfo=UTC))
>>> with Memory.open(":memory:", embedder=None, clock=clock) as mem:  # doctest: +SKIP
...     mem.remember("Isabella is planning a Valentine's Day party", agent="isabella")

Every public name is importable from here and loaded on first use (PEP 562), so ``import
chronomem`` costs next to nothing and a program that only needs, say, the HTTP client never loads
the engine, numpy-heavy scoring or a database driver.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chronomem.clock import Clock, SimClock, SystemClock, Ticks, require_aware
    from chronomem.config import (
        PRESETS,
        CausalConfig,
        DepthWeighting,
        Fusion,
        LifecycleConfig,
        Normalisation,
        RecencyMode,
        ReflectionConfig,
        RelevanceMode,
        ReviewConfig,
        ScoringConfig,
        VersionConfig,
        WriteGate,
        resolve_preset,
    )
    from chronomem.embedders.base import Embedder
    from chronomem.embedders.onnx_runtime import OnnxEmbedder
    from chronomem.embedders.openai_compatible import OpenAICompatibleEmbedder
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder
    from chronomem.engine import Memory
    from chronomem.errors import (
        AccessDeniedError,
        CausalCycleError,
        CausalLinkError,
        CauseAfterEffectError,
        ChronomemError,
        CitationError,
        ConfigError,
        ConflictError,
        DependentsExistError,
        EmbedderError,
        EmbedderHTTPError,
        EmbedderMismatchError,
        EmbedderResponseError,
        EmbedderTimeoutError,
        InvalidInputError,
        LLMError,
        LLMHTTPError,
        LLMResponseError,
        LLMTimeoutError,
        NotFoundError,
        ReflectionError,
        ServiceError,
        StoreError,
        StoreUnavailableError,
    )
    from chronomem.llm import LLMClient, OpenAICompatibleLLM, ScriptedLLM
    from chronomem.model import (
        EMBEDDING_KEY,
        Ancestor,
        AuditEntry,
        Breakdown,
        CausalPart,
        Event,
        EventKind,
        EvidenceStatus,
        ForgetResult,
        Hit,
        Kind,
        Link,
        Provenance,
        Record,
        ScrubResult,
        Sensitivity,
        Status,
        Weights,
        WriteResult,
    )
    from chronomem.model.core import CoreBlock
    from chronomem.model.reflection import ReflectionResult
    from chronomem.model.review import Access, Proposal, ReviewAction
    from chronomem.model.transfer import ImportReport
    from chronomem.retrieval.options import ReadOptions
    from chronomem.stores.base import MemoryStore
    from chronomem.stores.postgres import PostgresStore
    from chronomem.stores.sqlite import SQLiteStore
    from chronomem.transfer.generative_agents import GAImportReport
    from chronomem.transfer.migrate import MigratedSpace, migrate
    from chronomem.writing.anchors import Anchor, EmbeddingImportance
    from chronomem.writing.importance import HeuristicImportance, ImportanceScorer, LLMImportance

__version__ = "0.1.0.dev0"

__all__ = [
    "Access",
    "AccessDeniedError",
    "Ancestor",
    "Anchor",
    "AuditEntry",
    "Breakdown",
    "CausalConfig",
    "CausalCycleError",
    "CausalLinkError",
    "CausalPart",
    "CauseAfterEffectError",
    "ChronomemError",
    "CitationError",
    "Clock",
    "ConfigError",
    "ConflictError",
    "CoreBlock",
    "DependentsExistError",
    "DepthWeighting",
    "EMBEDDING_KEY",
    "Embedder",
    "EmbedderError",
    "EmbedderHTTPError",
    "EmbedderMismatchError",
    "EmbedderResponseError",
    "EmbedderTimeoutError",
    "EmbeddingImportance",
    "Event",
    "EventKind",
    "EvidenceStatus",
    "ForgetResult",
    "Fusion",
    "GAImportReport",
    "HeuristicImportance",
    "Hit",
    "ImportReport",
    "ImportanceScorer",
    "InvalidInputError",
    "Kind",
    "LLMClient",
    "LLMError",
    "LLMHTTPError",
    "LLMImportance",
    "LLMResponseError",
    "LLMTimeoutError",
    "LifecycleConfig",
    "Link",
    "Memory",
    "MemoryStore",
    "MigratedSpace",
    "Normalisation",
    "NotFoundError",
    "OnnxEmbedder",
    "OpenAICompatibleEmbedder",
    "OpenAICompatibleLLM",
    "PRESETS",
    "PostgresStore",
    "Proposal",
    "Provenance",
    "ReadOptions",
    "RecencyMode",
    "Record",
    "ReflectionConfig",
    "ReflectionError",
    "ReflectionResult",
    "RelevanceMode",
    "ReviewAction",
    "ReviewConfig",
    "SQLiteStore",
    "ScoringConfig",
    "ScriptedLLM",
    "ScrubResult",
    "Sensitivity",
    "SentenceTransformerEmbedder",
    "ServiceError",
    "SimClock",
    "Status",
    "StoreError",
    "StoreUnavailableError",
    "SystemClock",
    "Ticks",
    "VersionConfig",
    "Weights",
    "WriteGate",
    "WriteResult",
    "migrate",
    "require_aware",
    "resolve_preset",
]

# Where each public name lives.
_HOMES: dict[str, str] = {
    "Access": "chronomem.model.review",
    "AccessDeniedError": "chronomem.errors",
    "Ancestor": "chronomem.model",
    "Anchor": "chronomem.writing.anchors",
    "AuditEntry": "chronomem.model",
    "Breakdown": "chronomem.model",
    "CausalConfig": "chronomem.config",
    "CausalCycleError": "chronomem.errors",
    "CausalLinkError": "chronomem.errors",
    "CausalPart": "chronomem.model",
    "CauseAfterEffectError": "chronomem.errors",
    "ChronomemError": "chronomem.errors",
    "CitationError": "chronomem.errors",
    "Clock": "chronomem.clock",
    "ConfigError": "chronomem.errors",
    "ConflictError": "chronomem.errors",
    "CoreBlock": "chronomem.model.core",
    "DependentsExistError": "chronomem.errors",
    "DepthWeighting": "chronomem.config",
    "EMBEDDING_KEY": "chronomem.model",
    "Embedder": "chronomem.embedders.base",
    "EmbeddingImportance": "chronomem.writing.anchors",
    "EmbedderError": "chronomem.errors",
    "EmbedderHTTPError": "chronomem.errors",
    "EmbedderMismatchError": "chronomem.errors",
    "EmbedderResponseError": "chronomem.errors",
    "EmbedderTimeoutError": "chronomem.errors",
    "Event": "chronomem.model",
    "EventKind": "chronomem.model",
    "EvidenceStatus": "chronomem.model",
    "ForgetResult": "chronomem.model",
    "Fusion": "chronomem.config",
    "GAImportReport": "chronomem.transfer.generative_agents",
    "HeuristicImportance": "chronomem.writing.importance",
    "Hit": "chronomem.model",
    "ImportReport": "chronomem.model.transfer",
    "ImportanceScorer": "chronomem.writing.importance",
    "InvalidInputError": "chronomem.errors",
    "Kind": "chronomem.model",
    "LLMClient": "chronomem.llm",
    "LLMError": "chronomem.errors",
    "LLMHTTPError": "chronomem.errors",
    "LLMImportance": "chronomem.writing.importance",
    "LLMResponseError": "chronomem.errors",
    "LLMTimeoutError": "chronomem.errors",
    "LifecycleConfig": "chronomem.config",
    "Link": "chronomem.model",
    "Memory": "chronomem.engine",
    "MemoryStore": "chronomem.stores.base",
    "MigratedSpace": "chronomem.transfer.migrate",
    "Normalisation": "chronomem.config",
    "NotFoundError": "chronomem.errors",
    "OnnxEmbedder": "chronomem.embedders.onnx_runtime",
    "OpenAICompatibleEmbedder": "chronomem.embedders.openai_compatible",
    "OpenAICompatibleLLM": "chronomem.llm",
    "PRESETS": "chronomem.config",
    "PostgresStore": "chronomem.stores.postgres",
    "Proposal": "chronomem.model.review",
    "Provenance": "chronomem.model",
    "ReadOptions": "chronomem.retrieval.options",
    "RecencyMode": "chronomem.config",
    "Record": "chronomem.model",
    "ReflectionConfig": "chronomem.config",
    "ReflectionError": "chronomem.errors",
    "ReflectionResult": "chronomem.model.reflection",
    "RelevanceMode": "chronomem.config",
    "ReviewAction": "chronomem.model.review",
    "ReviewConfig": "chronomem.config",
    "SQLiteStore": "chronomem.stores.sqlite",
    "ScoringConfig": "chronomem.config",
    "ScriptedLLM": "chronomem.llm",
    "ScrubResult": "chronomem.model",
    "Sensitivity": "chronomem.model",
    "SentenceTransformerEmbedder": "chronomem.embedders.sentence_transformers",
    "ServiceError": "chronomem.errors",
    "SimClock": "chronomem.clock",
    "Status": "chronomem.model",
    "StoreError": "chronomem.errors",
    "StoreUnavailableError": "chronomem.errors",
    "SystemClock": "chronomem.clock",
    "Ticks": "chronomem.clock",
    "VersionConfig": "chronomem.config",
    "Weights": "chronomem.model",
    "WriteGate": "chronomem.config",
    "WriteResult": "chronomem.model",
    "migrate": "chronomem.transfer.migrate",
    "require_aware": "chronomem.clock",
    "resolve_preset": "chronomem.config",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'chronomem' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
