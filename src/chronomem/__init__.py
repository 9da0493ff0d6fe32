"""chronomem: a memory engine for LLM agents and multi-agent simulations.

>>> from chronomem import Memory, SimClock
>>> from datetime import datetime, UTC
>>> clock = SimClock(datetime(2023, 2, 13, 8, tzinfo=UTC))
>>> with Memory.open(":memory:", embedder=None, clock=clock) as mem:  # doctest: +SKIP
...     mem.remember("Isabella is planning a Valentine's Day party", agent="isabella")
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

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
    ScoringConfig,
    VersionConfig,
    WriteGate,
    resolve_preset,
)
from chronomem.embedders.base import Embedder
from chronomem.engine import Memory
from chronomem.engine.reflect import ReflectionResult
from chronomem.errors import (
    CausalCycleError,
    CausalLinkError,
    CauseAfterEffectError,
    ChronomemError,
    CitationError,
    ConfigError,
    ConflictError,
    DependentsExistError,
    EmbedderError,
    EmbedderMismatchError,
    InvalidInputError,
    LLMError,
    LLMHTTPError,
    LLMResponseError,
    LLMTimeoutError,
    NotFoundError,
    ReflectionError,
    StoreError,
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
    Sensitivity,
    Status,
    Weights,
    WriteResult,
)
from chronomem.retrieval.options import ReadOptions
from chronomem.stores.base import MemoryStore
from chronomem.stores.postgres import PostgresStore
from chronomem.stores.sqlite import SQLiteStore
from chronomem.transfer.archive import ImportReport
from chronomem.transfer.generative_agents import GAImportReport
from chronomem.transfer.migrate import MigratedSpace, migrate
from chronomem.writing.importance import HeuristicImportance, ImportanceScorer, LLMImportance

if TYPE_CHECKING:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

__version__ = "0.1.0.dev0"

__all__ = [
    "Ancestor",
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
    "DependentsExistError",
    "DepthWeighting",
    "EMBEDDING_KEY",
    "Embedder",
    "EmbedderError",
    "EmbedderMismatchError",
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
    "OpenAICompatibleLLM",
    "PRESETS",
    "PostgresStore",
    "Provenance",
    "ReadOptions",
    "RecencyMode",
    "Record",
    "ReflectionConfig",
    "ReflectionError",
    "ReflectionResult",
    "RelevanceMode",
    "SQLiteStore",
    "ScoringConfig",
    "ScriptedLLM",
    "Sensitivity",
    "SentenceTransformerEmbedder",
    "SimClock",
    "Status",
    "StoreError",
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


def __getattr__(name: str) -> Any:
    # The default embedder pulls in torch; import it only when asked for.
    if name == "SentenceTransformerEmbedder":
        from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder
    raise AttributeError(f"module 'chronomem' has no attribute {name!r}")
