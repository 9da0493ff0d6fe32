"""Every error chronomem raises, in one tree.

::

    ChronomemError                 root: catch this to catch everything chronomem raises
    ├── ConfigError                unknown preset, missing optional extra, invalid option value
    ├── InvalidInputError          bad argument: naive datetime, empty text, NaN or wrong-length
    │                              vector, importance outside 1..10 (also a ValueError)
    ├── NotFoundError              a record or event id that does not exist in this space
    │                              (also a LookupError)
    ├── ConflictError              the request contradicts what is stored (duplicate id, ...)
    │   ├── DependentsExistError   deleting a record that other records depend on
    │   └── CausalLinkError        a link the graph cannot hold (``err.cause``, ``err.effect``)
    │       ├── CauseAfterEffectError  the cause occurred after its effect
    │       └── CausalCycleError       the link would close a cycle (``err.path``)
    ├── StoreError                 the storage backend failed, or the file is incompatible
    │   └── StoreUnavailableError  the server cannot be reached (after bounded reconnects)
    ├── EmbedderError              the embedder failed or is unavailable
    │   ├── EmbedderMismatchError  a store opened with a different embedder than it was built with
    │   ├── EmbedderHTTPError      an embeddings endpoint answered with an error status
    │   │                          (``err.status``), after retries for 429/5xx
    │   ├── EmbedderTimeoutError   an embeddings endpoint did not answer within the timeout
    │   └── EmbedderResponseError  an answer that is not usable vectors (count, length, NaN, zero)
    ├── ServiceError               the HTTP service could not be reached or failed (``err.status``)
    │   └── AccessDeniedError      401/403: no key, an unknown or revoked key, or too small a scope
    └── LLMError                   an LLM call failed; never mistaken for model output
        ├── LLMHTTPError           the endpoint answered with an error status (``err.status``)
        ├── LLMTimeoutError        no answer within the timeout
        ├── LLMResponseError       an answer that is not a usable completion (bad JSON, no text)
        ├── CitationError          an LLM answer cites evidence that does not validate
        └── ReflectionError        reflection gave up after its retries; nothing was stored

Errors carry structured context as attributes (``err.record_id``, ``err.expected``) and a message a
user can act on. Backend exceptions (``sqlite3``, HTTP clients) are translated once, inside the
backend, with ``raise ... from exc``.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The longest message an error carries: a longer one is cut, saying so (a message that quotes a
#: caller's input must not echo a large input whole; the checks quote a short prefix anyway).
MAX_MESSAGE_CHARS = 2000


class ChronomemError(Exception):
    """Root of every error raised by chronomem."""

    def __init__(self, *args: object) -> None:
        if args and isinstance(args[0], str) and len(args[0]) > MAX_MESSAGE_CHARS:
            text = args[0]
            cut = f"… (message cut: {len(text):,} characters)"
            args = (text[: MAX_MESSAGE_CHARS - len(cut)] + cut, *args[1:])
        super().__init__(*args)


class ConfigError(ChronomemError):
    """A configuration value is invalid, unknown, or needs an optional extra that is missing."""


class InvalidInputError(ChronomemError, ValueError):
    """An argument is invalid. Nothing was written."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(ChronomemError, LookupError):
    """A record or event id does not exist in this space (``err.record_id`` or
    ``err.event_id`` says which)."""

    def __init__(
        self, message: str, *, record_id: str | None = None, event_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.record_id = record_id
        self.event_id = event_id

    def __str__(self) -> str:  # LookupError would otherwise repr() the message like KeyError
        return str(self.args[0]) if self.args else ""


class ConflictError(ChronomemError):
    """The request contradicts the stored state (for example, an id that already exists)."""

    def __init__(self, message: str, *, record_id: str | None = None) -> None:
        super().__init__(message)
        self.record_id = record_id


class DependentsExistError(ConflictError):
    """A record cannot be deleted because other records depend on it; close it instead."""

    def __init__(self, message: str, *, record_id: str, dependants: Sequence[str]) -> None:
        super().__init__(message, record_id=record_id)
        self.dependants = tuple(dependants)


class CausalLinkError(ConflictError):
    """A causal link the graph cannot hold; ``err.cause`` and ``err.effect`` name the events.
    Nothing was written."""

    def __init__(self, message: str, *, cause: str, effect: str) -> None:
        super().__init__(message)
        self.cause = cause
        self.effect = effect


class CauseAfterEffectError(CausalLinkError):
    """The cause occurred after its effect (``occurred_at``); a cause may be simultaneous."""


class CausalCycleError(CausalLinkError):
    """The link would close a cycle: ``err.path`` is the existing chain from the effect back to
    the cause (event ids, effect first)."""

    def __init__(self, message: str, *, cause: str, effect: str, path: Sequence[str]) -> None:
        super().__init__(message, cause=cause, effect=effect)
        self.path = tuple(path)


class StoreError(ChronomemError):
    """The storage backend failed, or the store is incompatible with this version."""


class StoreUnavailableError(StoreError):
    """The store's server cannot be reached: the connection dropped and reconnecting (with
    bounded retries) failed, or it dropped inside a transaction. Nothing was written, unless
    ``err.outcome_unknown``: the connection dropped while committing, so the write may or may
    not have been applied. The handle stays usable: its next call reconnects."""

    def __init__(self, message: str, *, outcome_unknown: bool = False) -> None:
        super().__init__(message)
        self.outcome_unknown = outcome_unknown


class EmbedderError(ChronomemError):
    """The embedder failed or is unavailable."""


class EmbedderMismatchError(EmbedderError):
    """The store was built with another embedder (model id or dimension) than the one given."""

    def __init__(
        self,
        message: str,
        *,
        expected_model: str | None,
        expected_dim: int | None,
        got_model: str | None,
        got_dim: int | None,
    ) -> None:
        super().__init__(message)
        self.expected_model = expected_model
        self.expected_dim = expected_dim
        self.got_model = got_model
        self.got_dim = got_dim


class EmbedderHTTPError(EmbedderError):
    """An embeddings endpoint answered with an HTTP error status (after retries for 429/5xx)."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class EmbedderTimeoutError(EmbedderError):
    """An embeddings endpoint did not answer within the timeout (after retries)."""


class EmbedderResponseError(EmbedderError):
    """An embeddings endpoint answered, but not with one usable vector per text."""


class ServiceError(ChronomemError):
    """The HTTP service could not be reached, or answered with an error that is not one of the
    engine's (``err.status``: the HTTP status, 0 when there was no answer)."""

    def __init__(self, message: str, *, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class AccessDeniedError(ServiceError):
    """The service refused the key: none was sent, it is unknown or revoked (401), or its scope
    does not allow the verb (403)."""


class LLMError(ChronomemError):
    """An LLM call failed (transport, status, timeout, or an answer that cannot be used)."""


class LLMHTTPError(LLMError):
    """The LLM endpoint answered with an HTTP error status."""

    def __init__(self, message: str, *, status: int, body: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.body = body


class LLMTimeoutError(LLMError):
    """The LLM endpoint did not answer within the timeout."""


class LLMResponseError(LLMError):
    """The endpoint answered, but not with a usable completion."""


class CitationError(LLMError):
    """An LLM answer cites evidence that is out of range, missing, or invisible."""


class ExtractionError(LLMError):
    """Extraction gave up on a batch of turns: the model's answers kept the wrong shape after
    every retry (``err.reasons`` lists what was wrong each time), or the model could not be
    reached. Nothing of that batch was stored; the next extraction reads it again."""

    def __init__(self, message: str, *, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons


class ReflectionError(LLMError):
    """Reflection gave up: the model's answers stayed invalid after every retry (``err.reasons``
    lists what was wrong each time), or the model could not be reached. Nothing was stored."""

    def __init__(self, message: str, *, reasons: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.reasons = reasons
