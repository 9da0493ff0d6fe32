"""An embedder for any OpenAI-compatible ``/v1/embeddings`` endpoint (OpenAI and other hosted APIs,
Ollama, vLLM, Hugging Face TEI, llama.cpp server), over plain HTTP with the standard library.

Texts go in batches; 429, 408, 409 and 5xx answers, timeouts and refused connections are
retried with exponential backoff (``Retry-After`` in seconds wins, capped); every failure is a typed
:class:`~chronomem.errors.EmbedderError`. Vectors are checked (one per text, of the model's length,
finite, non-zero) and unit-normalised, as the local backends return them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from chronomem.errors import (
    ConfigError,
    EmbedderError,
    EmbedderHTTPError,
    EmbedderResponseError,
    EmbedderTimeoutError,
)
from chronomem.retry import Failures, RetryPolicy, post_once

__all__ = ["OpenAICompatibleEmbedder"]

# A refused or dropped connection is retried: a local embedding server may be restarting.
_FAILURES = Failures(
    error=EmbedderError, http=EmbedderHTTPError, timeout=EmbedderTimeoutError,
    retry_unreachable=True,
)  # fmt: skip


class OpenAICompatibleEmbedder:
    """Embeddings over HTTP.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1``, ``http://localhost:11434/v1``
            (Ollama), ``http://localhost:8000/v1`` (vLLM), ``http://localhost:8080/v1`` (TEI);
            ``/embeddings`` is appended.
        model: the model name the server expects.
        dim: the vector length, if known; otherwise the first use asks the server once (a
            one-text request). Every answer is checked against it.
        model_id: the id recorded in the store; default ``model``. Two servers of the same model
            give the same vectors, so a store is portable between them; give another id when they
            do not (another quantisation, another ``dimensions``).
        api_key: sent as a bearer token when given (never shown in ``repr``).
        batch_size: texts per request.
        timeout: seconds for one request.
        max_retries: extra attempts after a 429/5xx, a timeout or a refused connection.
        backoff: seconds before the first retry, doubled each time (``Retry-After`` wins when the
            server sends seconds), each wait capped at ``max_wait``.
        sleep: how to wait between attempts (tests pass a recorder).
        languages: the languages the model reads (ISO 639-1 codes); ``None`` (the default):
            every language — say which when the model is monolingual, so its cosines do not
            outvote words in a language it does not read.

    Thread-safe (``thread_safe``): each request is independent, so the engine embeds before a
    handle's lock and a slow server holds up no other call on the handle.
    """

    thread_safe = True

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        dim: int | None = None,
        model_id: str | None = None,
        api_key: str | None = None,
        batch_size: int = 64,
        timeout: float = 60.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        max_wait: float = 30.0,
        sleep: Callable[[float], None] = time.sleep,
        languages: Collection[str] | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL; got {base_url!r}")
        if not model:
            raise ConfigError("model must name the embedding model the server expects")
        if dim is not None and dim < 1:
            raise ConfigError(f"dim must be >= 1; got {dim}")
        if batch_size < 1 or timeout <= 0:
            raise ConfigError(
                f"batch_size must be >= 1 and timeout positive; got {batch_size} and {timeout}"
            )
        self.url = base_url.rstrip("/") + "/embeddings"
        self.model = model
        self._model_id = model_id or model
        self._dim = dim
        self._api_key = api_key
        self.batch_size = batch_size
        self.timeout = timeout
        self._policy = RetryPolicy(max_retries=max_retries, backoff=backoff, max_wait=max_wait)
        self._sleep = sleep
        self.languages = None if languages is None else frozenset(languages)

    @property
    def model_id(self) -> str:
        return self._model_id

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    def __repr__(self) -> str:
        return f"OpenAICompatibleEmbedder({self.url!r}, model={self.model!r})"

    def embed(self, texts: Sequence[str], *, progress: bool = False) -> npt.NDArray[np.float32]:
        """Unit-normalised float32 vectors, one row per text, in order.

        Raises:
            EmbedderHTTPError: an error status, after retries for 429/408/409/5xx.
            EmbedderTimeoutError: no answer within ``timeout``, after retries.
            EmbedderResponseError: an answer that is not one valid vector per text.
            EmbedderError: the server cannot be reached, after retries.
        """
        if len(texts) == 0:
            return np.empty((0, self.dim), dtype=np.float32)
        parts = [
            self._request(list(texts[start : start + self.batch_size]))
            for start in range(0, len(texts), self.batch_size)
        ]
        return np.ascontiguousarray(np.concatenate(parts), dtype=np.float32)

    def _request(self, batch: list[str]) -> npt.NDArray[np.float32]:
        data = json.dumps({"model": self.model, "input": batch, "encoding_format": "float"}).encode(
            "utf-8"
        )
        raw = self._policy.run(
            lambda: post_once(
                self.url, data, api_key=self._api_key, timeout=self.timeout, failures=_FAILURES
            ),
            self._sleep,
        )
        return self._vectors(raw, len(batch))

    def _vectors(self, raw: bytes, count: int) -> npt.NDArray[np.float32]:
        try:
            rows: list[Any] = json.loads(raw)["data"]
            ordered = sorted(rows, key=lambda row: int(row["index"]))
            matrix = np.asarray([row["embedding"] for row in ordered], dtype=np.float64)
        except (json.JSONDecodeError, KeyError, TypeError, ValueError, UnicodeDecodeError):
            raise EmbedderResponseError(
                f"{self.url} did not return embeddings: {raw[:200]!r}"
            ) from None
        if [int(row["index"]) for row in ordered] != list(range(count)) or matrix.ndim != 2:
            raise EmbedderResponseError(
                f"{self.url} returned {len(rows)} embeddings for {count} texts"
            )
        if self._dim is not None and matrix.shape[1] != self._dim:
            raise EmbedderResponseError(
                f"{self.url} returned vectors of length {matrix.shape[1]}; expected {self._dim} "
                f"(model {self.model!r})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(matrix)) or not np.all(norms > 0):
            raise EmbedderResponseError(f"{self.url} returned a NaN, infinite or zero vector")
        unit: npt.NDArray[np.float32] = (matrix / norms).astype(np.float32)
        return unit
