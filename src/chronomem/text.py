"""Text normalisation shared by reads and writes: dedup keys and full-text query terms."""

from __future__ import annotations

import hashlib
import re

__all__ = ["dedup_key", "normalise_text", "query_terms"]

_WORD = re.compile(r"\w+", re.UNICODE)
_MAX_TERMS = 64


def normalise_text(text: str) -> str:
    """Case-folded, whitespace-collapsed text: two records with the same normalised text are the
    same memory for multi-agent dedup (DESIGN §2 step 8)."""
    return " ".join(text.casefold().split())


def dedup_key(text: str) -> int:
    """A stable signed 64-bit hash of :func:`normalise_text` (stable across processes)."""
    digest = hashlib.blake2b(normalise_text(text).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


def query_terms(text: str) -> list[str]:
    """Distinct lower-cased word terms of a query, in order of first appearance, at most 64."""
    seen: dict[str, None] = {}
    for match in _WORD.finditer(text.casefold()):
        seen.setdefault(match.group(0), None)
        if len(seen) >= _MAX_TERMS:
            break
    return list(seen)
