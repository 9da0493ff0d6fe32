"""What the MCP tools answer, within a model's context: the tools' bounds, and records, hits
and core blocks as the JSON a tool returns (texts cut, saying so)."""

from __future__ import annotations

from typing import Any

from chronomem.model.core import CoreBlock
from chronomem.model.record import Hit, Record, WriteResult

__all__ = [
    "HIT_CHARS",
    "QUERY_CHARS",
    "RESULT_CHARS",
    "SHORT_CHARS",
    "TEXT_CHARS",
    "block_answer",
    "budget",
    "core_text",
    "cut",
    "hit_answer",
    "record_answer",
    "vars_of",
    "written",
]

# Bounds of the tools: what a model writes is a statement, and what it reads costs its context.
#: The longest text a tool stores (a memory, a correction, a core block edit).
TEXT_CHARS = 8_000
#: The longest query.
QUERY_CHARS = 2_000
#: The longest reason, label or short field.
SHORT_CHARS = 500
#: The most characters of one record's text in an answer (``recall``, ``history``): a longer
#: text is cut, saying so (``get`` gives up to :data:`RESULT_CHARS`).
HIT_CHARS = 1_500
#: The most characters of record text in one answer; past it, texts are cut further.
RESULT_CHARS = 12_000


def cut(text: str, limit: int) -> tuple[str, dict[str, Any]]:
    """``text`` cut to ``limit`` characters, with what an answer says about the cut."""
    if len(text) <= limit:
        return text, {}
    return text[:limit] + "…", {"text_cut": True, "text_chars": len(text)}


def budget(texts: list[str]) -> list[int]:
    """How many characters of each text an answer of several keeps: at most :data:`HIT_CHARS`
    each and :data:`RESULT_CHARS` in all, the first (best) texts served first."""
    left = RESULT_CHARS
    out = []
    for text in texts:
        keep = max(0, min(len(text), HIT_CHARS, left))
        out.append(keep)
        left -= keep
    return out


def hit_answer(hit: Hit, limit: int = HIT_CHARS) -> dict[str, Any]:
    r = hit.record
    text, trimmed = cut(r.text, limit)
    out: dict[str, Any] = {
        "id": r.id, "text": text, **trimmed, "kind": r.kind.value, "score": round(hit.score, 4),
        "importance": r.importance, "occurred_at": r.occurred_at.isoformat(),
        "status": r.status.value,
    }  # fmt: skip
    if r.superseded_by:
        out["superseded_by"] = r.superseded_by
    if r.feedback_score < 0:
        out["pushed_down"] = True
    if hit.breakdown is not None:
        out["why"] = hit.breakdown.to_dict()
    return out


def record_answer(r: Record, limit: int = RESULT_CHARS) -> dict[str, Any]:
    out = r.to_dict()
    out.pop("space", None)
    out["text"], trimmed = cut(r.text, limit)
    out.update(trimmed)
    return out


def written(result: WriteResult) -> dict[str, Any]:
    return {k: v for k, v in vars_of(result).items() if v is not None}


def vars_of(value: Any) -> dict[str, Any]:
    return {name: getattr(value, name) for name in value.__dataclass_fields__}


def block_answer(block: CoreBlock) -> dict[str, Any]:
    return block.to_dict()


def core_text(blocks: list[CoreBlock]) -> str:
    if not blocks:
        return ""
    parts = [f"<{b.label}>\n{b.text}\n</{b.label}>" for b in blocks]
    return "Core memory:\n" + "\n".join(parts) + "\n\n"
