"""The request bodies of the HTTP service (pydantic, at the wire only — STYLE). Responses are the
engine's own value types (``Record``, ``Hit``, ``WriteResult``, ...), serialised by pydantic from
the dataclasses, so the service, its OpenAPI schema and the Python client share one definition.

Instants must carry an offset (``AwareDatetime``: a naive instant is a 422). Fields are typed for
the schema; the engine's own checks (``checks.py``, ``ReadOptions``) still run on every value, so
the service accepts exactly what the library accepts. The read models' fields come from the verb
table (``chronomem/verbs.py``): names, defaults, descriptions and bounds are defined there once.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, get_args, get_origin

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, create_model

from chronomem.checks import MAX_INT
from chronomem.model.record import Kind
from chronomem.verbs import MAX_K, PARAMS, RECORD, Param, params, record_params

__all__ = [
    "AccessLogIn",
    "AdvanceIn",
    "AutoLinkIn",
    "BatchIn",
    "ClockIn",
    "ClockOut",
    "WebhookIn",
    "CloseIn",
    "CloseWhereIn",
    "CoreAppendIn",
    "CoreReplaceIn",
    "ContextIn",
    "EventIn",
    "ExtractIn",
    "FeedbackIn",
    "ForgetIn",
    "ForgetWhereIn",
    "GetManyIn",
    "LinkIn",
    "MaybeReflectIn",
    "MessagesIn",
    "PeekIn",
    "ReadIn",
    "RecallIn",
    "RecallManyIn",
    "RecordFields",
    "RejectIn",
    "ReflectIn",
    "RememberIn",
    "SupersedeIn",
    "VerifyIn",
    "VerifyWhereIn",
]


#: The most queries of one recall-many.
MAX_QUERIES = 1_000


class _In(BaseModel):
    model_config = ConfigDict(extra="forbid")


def annotation(p: Param) -> Any:
    """The pydantic type of a table parameter: instants with an offset, choices as literals."""
    args = get_args(p.value)
    optional = type(None) in args
    base = next(a for a in args if a is not type(None)) if optional else p.value
    if base is datetime:
        base = AwareDatetime
    if p.choices is not None and p.wire_choices:
        choice: Any = Literal.__getitem__(p.choices)
        base = list[choice] if get_origin(base) is list else choice
    return base | None if optional else base


def fields_of(table: Iterable[Param], *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """The table's parameters as pydantic field definitions (``create_model``'s keywords);
    required ones (and those named in ``required``) have no default."""
    return {
        p.name: (
            annotation(p),
            Field(
                default=... if p.required or p.name in required else p.default,
                description=p.doc,
                **p.bounds,
            ),
        )
        for p in table
    }


if TYPE_CHECKING:  # built from the verb table's record fields; to a type checker, any
    _NewRecord: TypeAlias = Any
    RecordFields: TypeAlias = Any
    RememberIn: TypeAlias = Any
    BatchIn: TypeAlias = Any
    SupersedeIn: TypeAlias = Any
else:
    _NewRecord = create_model(
        "_NewRecord", __base__=_In,
        __doc__="A new record's fields (``remember``'s keyword arguments); unset fields take the "
        "engine's defaults.",
        **fields_of(record_params(without=("supersedes", "replace")), required=("text",)),
    )  # fmt: skip
    RecordFields = create_model(
        "RecordFields", __base__=_NewRecord,
        **fields_of([RECORD["supersedes"], RECORD["replace"]]),
    )  # fmt: skip
    RememberIn = create_model("RememberIn", __base__=RecordFields)
    BatchIn = create_model(
        "BatchIn", __base__=_In, items=(list[RecordFields], ...),
        agent=(str | None, None), kind=(Kind | None, None),
        session=(str | None, Field(default=None, description="for the items that set none")),
    )  # fmt: skip
    SupersedeIn = create_model(
        "SupersedeIn", __base__=_NewRecord,
        __doc__="The replacement record; agent, kind and domain default to the old record's.",
        reason=(str | None, None),
    )  # fmt: skip


if TYPE_CHECKING:  # built from the verb table when the module runs; to a type checker, any
    ReadIn: TypeAlias = Any
    PeekIn: TypeAlias = Any
    RecallIn: TypeAlias = Any
    RecallManyIn: TypeAlias = Any
else:
    ReadIn = create_model(
        "ReadIn", __base__=_In, __doc__="Read options (``ReadOptions``); see ``recall``.",
        **fields_of(params("peek")),
    )  # fmt: skip
    PeekIn = create_model(
        "PeekIn", __base__=ReadIn, query=(str, ""), query_embedding=(list[float] | None, None)
    )
    RecallIn = create_model("RecallIn", __base__=PeekIn, **fields_of([PARAMS["touch"]]))
    RecallManyIn = create_model(
        "RecallManyIn", __base__=ReadIn,
        queries=(list[str], Field(max_length=MAX_QUERIES)),
        query_embeddings=(list[list[float] | None] | None, None),
        **fields_of([PARAMS["touch"], PARAMS["sequential"]]),
    )  # fmt: skip


if TYPE_CHECKING:
    CloseWhereIn: TypeAlias = Any
    VerifyWhereIn: TypeAlias = Any
    ForgetWhereIn: TypeAlias = Any
else:
    _Required = {"filter": (dict[str, Any], Field(description=PARAMS["filter"].doc))}
    CloseWhereIn = create_model(
        "CloseWhereIn", __base__=_In, **_Required, reason=(str, ...),
        valid_until=(AwareDatetime | None, None),
        **fields_of(params("close_where", without=("filter",))),
    )  # fmt: skip
    VerifyWhereIn = create_model(
        "VerifyWhereIn", __base__=_In, **_Required, reason=(str | None, None),
        **fields_of(params("verify_where", without=("filter",))),
    )  # fmt: skip
    ForgetWhereIn = create_model(
        "ForgetWhereIn", __base__=_In, **_Required, reason=(str, ...),
        **fields_of(params("forget_where", without=("filter",))),
    )  # fmt: skip


if TYPE_CHECKING:  # built from the verb table; to a type checker, any
    CloseIn: TypeAlias = Any
    VerifyIn: TypeAlias = Any
    FeedbackIn: TypeAlias = Any
    ForgetIn: TypeAlias = Any
    EventIn: TypeAlias = Any
    LinkIn: TypeAlias = Any
    AutoLinkIn: TypeAlias = Any
    CoreAppendIn: TypeAlias = Any
    CoreReplaceIn: TypeAlias = Any
else:

    def _body(name: str, verb: str, **more: Any) -> type[_In]:
        """The request body of ``verb``: its table parameters (and ``more``)."""
        return create_model(name, __base__=_In, **fields_of(params(verb)), **more)

    CloseIn = _body("CloseIn", "close_record")
    VerifyIn = _body("VerifyIn", "verify")
    FeedbackIn = _body("FeedbackIn", "feedback")
    ForgetIn = _body("ForgetIn", "forget")
    EventIn = _body("EventIn", "add_event")
    LinkIn = _body(
        "LinkIn", "link", cause=(str, Field(description="the cause's event id")),
        effect=(str, Field(description="the effect's event id")),
    )  # fmt: skip
    AutoLinkIn = _body("AutoLinkIn", "auto_link")
    CoreAppendIn = _body("CoreAppendIn", "core_append")
    CoreReplaceIn = _body("CoreReplaceIn", "core_replace")


class _ContextIn(_In):
    query: str | None = None
    agent: str | None = None
    agents: list[str] | None = None
    crisis: str | None = None
    k: int = Field(default=12, ge=1, le=MAX_K)
    budget_tokens: int | None = None
    as_of: AwareDatetime | None = None
    touch: bool = True
    preset: str | None = None


if TYPE_CHECKING:
    ContextIn: TypeAlias = Any
else:
    ContextIn = create_model("ContextIn", __base__=_ContextIn, **fields_of(params("context")))


class ReflectIn(_In):
    agent: str
    as_of: AwareDatetime | None = None
    touch: bool | None = None


class MessagesIn(_In):
    """A conversation (``remember_messages``): OpenAI or LangChain messages as dicts."""

    messages: list[dict[str, Any]]
    agent: str = "default"
    session: str | None = Field(default=None, max_length=100)


class ExtractIn(_In):
    """An extraction with the service's LLM (``extract``): the policy's mode and trusted
    speakers."""

    agent: str = "default"
    session: str | None = None
    mode: Literal["apply", "review"] = "apply"
    trusted_speakers: list[str] = Field(default_factory=lambda: ["user"])


class MaybeReflectIn(_In):
    agent: str
    as_of: AwareDatetime | None = None


class GetManyIn(_In):
    record_ids: list[str] = Field(max_length=MAX_K, description="the records' ids")


class RejectIn(_In):
    reason: str


class AccessLogIn(_In):
    on: bool


class ClockIn(_In):
    """``now``: the space's simulated instant, or ``null`` to follow the wall clock again."""

    now: AwareDatetime | None


class AdvanceIn(_In):
    """How far to move the space's simulated clock (ISO 8601 duration or seconds)."""

    by: timedelta


class ClockOut(BaseModel):
    now: AwareDatetime
    simulated: bool


class WebhookIn(_In):
    """A subscription to the space's changes (docs/design/change-feed.md)."""

    url: str = Field(
        pattern=r"^https?://", max_length=2000, description="where each change is POSTed"
    )
    secret: str | None = Field(
        None, min_length=16, max_length=200,
        description="the HMAC-SHA256 key of the signatures (default: a new random one, shown once)",
    )  # fmt: skip
    after: int | None = Field(
        None, ge=0, le=MAX_INT,
        description="deliver the changes after this seq (default: from now on)",
    )  # fmt: skip
