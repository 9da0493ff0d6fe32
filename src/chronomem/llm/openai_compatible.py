"""A client for any OpenAI-compatible chat completions endpoint (OpenAI, Ollama, vLLM,
llama.cpp server), over plain HTTP with the standard library.

Retries 429 and 5xx answers, timeouts and dropped connections with exponential backoff
(honouring ``Retry-After``); an endpoint that refuses the connection fails at once; every failure
is a typed :class:`~chronomem.errors.LLMError`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chronomem.errors import ConfigError, LLMError, LLMHTTPError, LLMResponseError, LLMTimeoutError
from chronomem.llm.base import Message
from chronomem.retry import Failures, RetryPolicy, post_once

__all__ = ["OpenAICompatibleLLM"]

# An unreachable endpoint fails at once (a misconfigured URL should not wait out the retries).
_FAILURES = Failures(
    error=LLMError, http=LLMHTTPError, timeout=LLMTimeoutError, retry_unreachable=False
)


class OpenAICompatibleLLM:
    """Chat completions over HTTP.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1``, ``http://localhost:11434/v1``
            (Ollama), ``http://localhost:8000/v1`` (vLLM), ``http://localhost:8080/v1``
            (llama.cpp server); ``/chat/completions`` is appended.
        model: the model name the server expects.
        api_key: sent as a bearer token when given.
        timeout: seconds for one request.
        max_retries: extra attempts after a 429, a 5xx or a timeout.
        backoff: seconds before the first retry, doubled each time (``Retry-After`` wins when the
            server sends it, capped at ``max_wait``).
        json_mode: how to ask for JSON when a schema is given: ``"schema"`` (``response_format``
            with a JSON Schema; OpenAI, vLLM, llama.cpp, recent Ollama), ``"object"`` (plain JSON
            mode) or ``"none"`` (the prompt alone asks for JSON).
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_wait: float = 30.0,
        json_mode: str = "schema",
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"base_url must be an http(s) URL; got {base_url!r}")
        if json_mode not in {"schema", "object", "none"}:
            raise ConfigError(f"json_mode must be schema, object or none; got {json_mode!r}")
        if timeout <= 0 or max_retries < 0 or backoff < 0:
            raise ConfigError("timeout must be positive; max_retries and backoff non-negative")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self._model = model
        self._api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_wait = max_wait
        self.json_mode = json_mode
        self._sleep = sleep

    @property
    def model(self) -> str:
        return self._model

    def __repr__(self) -> str:
        return f"OpenAICompatibleLLM({self.url!r}, model={self._model!r})"

    def _payload(
        self,
        messages: Sequence[Message],
        schema: Mapping[str, Any] | None,
        temperature: float,
        max_tokens: int | None,
    ) -> bytes:
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [dict(m) for m in messages],
            "temperature": temperature,
        }
        if max_tokens is not None:
            body["max_tokens"] = max_tokens
        if schema is not None and self.json_mode == "schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "answer", "schema": dict(schema), "strict": True},
            }
        elif schema is not None and self.json_mode == "object":
            body["response_format"] = {"type": "json_object"}
        return json.dumps(body).encode("utf-8")

    def complete(
        self,
        messages: Sequence[Message],
        *,
        schema: Mapping[str, Any] | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
    ) -> str:
        """The completion text of the first choice.

        Raises:
            LLMHTTPError: an error status, after retries for 429/5xx.
            LLMTimeoutError: no answer within ``timeout``, after retries.
            LLMResponseError: a body that is not a chat completion, or no text in it.
        """
        data = self._payload(messages, schema, temperature, max_tokens)
        policy = RetryPolicy(
            max_retries=self.max_retries, backoff=self.backoff, max_wait=self.max_wait
        )
        raw = policy.run(
            lambda: post_once(
                self.url, data, api_key=self._api_key, timeout=self.timeout, failures=_FAILURES
            ),
            self._sleep,
        )
        return self._content(raw)

    def _content(self, raw: bytes) -> str:
        try:
            body = json.loads(raw)
            choice = body["choices"][0]
            content = choice["message"]["content"]
        except (json.JSONDecodeError, KeyError, IndexError, TypeError):
            raise LLMResponseError(
                f"{self.url} did not return a chat completion: {raw[:200]!r}"
            ) from None
        if not isinstance(content, str) or not content.strip():
            raise LLMResponseError(
                f"{self.url} returned no text (finish: {choice.get('finish_reason')})"
            )
        return content
