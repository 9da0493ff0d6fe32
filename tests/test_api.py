"""The public API is pinned: ``__all__`` is sorted, complete, and importable without torch."""

from __future__ import annotations

import subprocess
import sys

import chronomem


def test_all_is_sorted_and_every_name_resolves() -> None:
    assert list(chronomem.__all__) == sorted(chronomem.__all__)
    for name in chronomem.__all__:
        assert getattr(chronomem, name) is not None


def test_public_api_is_pinned() -> None:
    assert set(chronomem.__all__) == {
        "Access", "AccessDeniedError", "Ancestor", "Anchor", "AuditEntry", "Breakdown",
        "CausalConfig",
        "CausalCycleError", "CausalLinkError", "CausalPart", "CauseAfterEffectError",
        "ChronomemError", "CitationError", "Clock", "ConfigError", "ConflictError", "CoreBlock",
        "DependentsExistError", "DepthWeighting", "EMBEDDING_KEY", "Embedder", "EmbedderError",
        "EmbeddingImportance",
        "EmbedderHTTPError", "EmbedderMismatchError", "EmbedderResponseError",
        "EmbedderTimeoutError", "Event", "EventKind", "EvidenceStatus", "ForgetResult", "Fusion",
        "GAImportReport", "HeuristicImportance", "Hit", "ImportReport", "ImportanceScorer",
        "InvalidInputError", "Kind", "LLMClient", "LLMError", "LLMHTTPError", "LLMImportance",
        "LLMResponseError", "LLMTimeoutError", "LifecycleConfig", "Link", "Memory", "MemoryStore",
        "MigratedSpace", "Normalisation", "NotFoundError", "OnnxEmbedder",
        "OpenAICompatibleEmbedder", "OpenAICompatibleLLM", "PRESETS", "PostgresStore", "Proposal",
        "Provenance", "ReadOptions", "RecencyMode", "Record", "ReflectionConfig",
        "ReflectionError", "ReflectionResult", "RelevanceMode", "ReviewAction", "ReviewConfig",
        "SQLiteStore", "ScoringConfig", "ScriptedLLM", "ScrubResult", "Sensitivity",
        "SentenceTransformerEmbedder", "ServiceError", "SimClock", "Status", "StoreError",
        "StoreUnavailableError", "SystemClock", "Ticks", "VersionConfig", "Weights", "WriteGate",
        "WriteResult", "migrate", "require_aware", "resolve_preset",
    }  # fmt: skip


def test_import_is_light() -> None:
    code = (
        "import sys, chronomem;"
        "print('torch' in sys.modules, 'sentence_transformers' in sys.modules,"
        " 'psycopg' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False", "False"]


def test_presets_are_read_only() -> None:
    import dataclasses

    import pytest

    with pytest.raises(TypeError):
        chronomem.PRESETS["default"] = chronomem.PRESETS["generative-agents"]  # type: ignore[index]
    with pytest.raises(dataclasses.FrozenInstanceError):
        chronomem.PRESETS["default"].recency_decay = 0.5  # type: ignore[misc]
