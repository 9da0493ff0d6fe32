"""The embedder contract and vector validation."""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from chronomem.errors import InvalidInputError

__all__ = [
    "Embedder",
    "as_vector",
    "card_languages",
    "declared_languages",
    "is_thread_safe",
    "model_languages",
    "read_lengths",
]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.

    ``model_id`` names the model (recorded in the store: a store built with one model refuses
    another); ``dim`` is the vector length. ``embed`` returns an ``(n, dim)`` float32 array.

    An embedder that may be called from several threads at once says so with a class attribute
    ``thread_safe = True`` (see :func:`is_thread_safe`); the engine then embeds outside a
    handle's lock, so one call's model run never holds up another call's store work. Without it
    the engine calls it under the lock, one call at a time.

    An embedder may declare the languages its model reads (``languages``: ISO 639-1 codes, or
    ``None`` for every language, see :func:`model_languages`); where a query or a record is in a
    language it does not read, the hybrid fusion counts words only for that pair (DESIGN §9).
    """

    @property
    def model_id(self) -> str: ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]: ...


def is_thread_safe(embedder: object) -> bool:
    """Whether ``embedder`` declares ``thread_safe = True``: it may be called from several
    threads at once (``None`` and embedders that do not say so: no)."""
    return getattr(embedder, "thread_safe", False) is True


def model_languages(embedder: object) -> frozenset[str] | None:
    """The languages ``embedder`` declares it reads (``languages``: ISO 639-1 codes), or
    ``None`` — every language — when it declares none (as for any embedder that predates the
    attribute: its cosines count everywhere, as they always did)."""
    found = getattr(embedder, "languages", None)
    return None if found is None else frozenset(str(x) for x in found)


def card_languages(folder: Path) -> frozenset[str] | None:
    """The languages a model folder's card declares (``language:`` in its ``README.md`` front
    matter: one code or a list); ``None`` when it declares none or says ``multilingual``."""
    card = folder / "README.md"
    if not card.is_file():
        return None
    text = card.read_text(encoding="utf-8", errors="replace")
    if not text.startswith("---"):
        return None
    front = text[3 : text.find("\n---", 3)] if "\n---" in text[3:] else ""
    found: list[str] = []
    lines = front.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("language:"):
            continue
        value = line.split(":", 1)[1].strip()
        if value.startswith("["):
            found += [v.strip(" '\"") for v in value.strip("[]").split(",")]
        elif value:
            found.append(value.strip(" '\""))
        else:
            for item in lines[i + 1 :]:
                if not item.lstrip().startswith("-"):
                    break
                found.append(item.lstrip()[1:].strip(" '\""))
        break
    codes = {f.lower() for f in found if f}
    if not codes or "multilingual" in codes:
        return None
    return frozenset(codes)


def declared_languages(
    folder: Path, given: Collection[str] | Literal["card"] | None
) -> frozenset[str] | None:
    """An embedder's ``languages``: the ones given, or (``"card"``) the folder card's."""
    if given == "card":
        return card_languages(folder)
    return None if given is None else frozenset(given)


def read_lengths(embedder: object, texts: Sequence[str]) -> list[int]:
    """How many characters of each text ``embedder`` reads: its ``read_lengths(texts)`` when it
    has one (a model that truncates long texts says where it stops), else every character."""
    method = getattr(embedder, "read_lengths", None)
    return [len(t) for t in texts] if method is None else [int(n) for n in method(texts)]


def as_vector(
    value: object, *, dim: int | None, name: str = "embedding"
) -> npt.NDArray[np.float32]:
    """Validate a caller-supplied vector: 1-D, finite, non-zero, of length ``dim`` (if known).

    Returns it as a contiguous float32 array (the stored form).
    """
    try:
        given = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(
            f"{name} must be a sequence of numbers: {exc}", field=name
        ) from None
    if given.dtype.kind not in "iuf":  # booleans, strings, None and ragged lists are not vectors
        raise InvalidInputError(
            f"{name} must be a sequence of numbers; got {type(value).__name__} of "
            f"{given.dtype.name}",
            field=name,
        )
    vector = given.astype(np.float64)
    if vector.ndim != 1 or vector.size == 0:
        raise InvalidInputError(
            f"{name} must be a non-empty 1-D vector; got shape {vector.shape}", field=name
        )
    if not np.all(np.isfinite(vector)):
        raise InvalidInputError(f"{name} contains NaN or infinite values", field=name)
    if dim is not None and vector.size != dim:
        raise InvalidInputError(
            f"{name} has length {vector.size}; this store's vectors have length {dim}", field=name
        )
    with np.errstate(over="ignore"):  # an overflow is reported below, as an error
        as32 = vector.astype(np.float32)
    if not np.any(as32):
        raise InvalidInputError(f"{name} is the zero vector; cosine is undefined", field=name)
    if not np.all(np.isfinite(as32)):
        raise InvalidInputError(f"{name} overflows float32", field=name)
    return np.ascontiguousarray(as32)


def read_dim(folder: Path) -> int | None:
    """The output dimension from a sentence-transformers folder, without loading the model."""
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        return int(json.loads(pooling.read_text())["word_embedding_dimension"])
    return None
