"""The drift test: every public verb's parameters agree across chronomem's five interfaces
(STYLE, "Declare once, derive the rest"; docs/design/verbs-and-filters.md).

The library is the reference: ``inspect.signature`` of each public verb of :class:`Memory`.
:data:`VERBS` maps each verb to its counterpart on the Python clients (``Client``, whose
signatures ``AsyncClient`` shares), the HTTP service (the OpenAPI document of the app: path and
query parameters and the request body's properties), the MCP tools (their input schemas) and the
CLI (the subcommand's argparse dests). For each (verb, interface) the test compares:

- parameter names, after the interface's spellings (:data:`SPELLINGS`: the CLI's repeatable
  ``--kind`` for ``kinds``, ``--no-touch`` for ``touch``, ...), in both directions;
- defaults, where both sides state a comparable one (bools, numbers, strings, enum values,
  ``None``). An interface default of ``None`` states none: the parameter is left out and the
  library's default applies (the client's ``given()``, the service's ``exclude_unset``);
- on the client, which parameters are positional and in which order (it promises the engine's
  signatures, so ``Memory.open(path)`` can be swapped for ``Client(url)``);
- the numeric bounds (``minimum``/``maximum``) HTTP and MCP schemas carry for the same parameter
  of the same verb (reported on the MCP side); a separate test pins HTTP's to ``server/wire.py``.

Every deliberate difference is declared once, in :data:`DIFFERENCES`, keyed by (verb,
interface, parameter) with its reason; ``"*"`` as the verb means every verb of that interface,
``"*"`` as the parameter means the whole verb is absent there, and :data:`NO_VERB` keys the
operations of an interface that are no library verb. An undeclared difference fails naming
verb, interface, parameter and what differs; a declaration matching no difference fails too, so
the table cannot rot. Entries whose reason starts with ``DRIFT:`` are differences found when this
test was written and not yet fixed: fixing one makes its entry stale, and the test says so.

A command or route serving several verbs (``link`` and ``link --remove``, ``GET
/events/{event_id}/{direction}``) names the flag or path parameter that selects each verb
(:class:`Via`); that selector, and the flags of the other verbs it serves, are not counted as
extras of a verb.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

import pytest

from chronomem import Memory
from chronomem.cli.main import build_parser
from chronomem.client import AsyncClient, Client, Verb
from chronomem.server import wire
from chronomem.server.app import create_app
from chronomem.server.mcp_server import build_server
from chronomem.server.spaces import Spaces

INTERFACES = ("client", "http", "mcp", "cli")
#: Memory's methods that manage the handle rather than act on memories (the clients have their
#: own constructor and ``close``; the service preloads each space it opens).
HANDLE_METHODS = frozenset({"open", "close", "preload"})
#: The verb of a (verb, interface, parameter) key naming an interface operation that is no
#: library verb (the parameter is the operation's name).
NO_VERB = "(no library verb)"
#: A whole verb (as the parameter of a key) or every verb (as its verb).
ALL = "*"


# -- the name mapping ---------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Via:
    """A counterpart serving several verbs: ``selector`` (a flag or path parameter) chooses this
    verb; ``None`` for the verb the operation performs without it."""

    operation: str
    selector: str | None = None


Counterpart = str | tuple[str, ...] | Via  # several names: the union of their parameters


@dataclass(frozen=True, slots=True)
class Row:
    """A verb's counterparts: the client method, the HTTP operation (``METHOD /path``, relative
    to ``/v1/spaces/{space}`` unless it starts with ``/v1/``), the MCP tool, the CLI command
    (subcommands joined by a space). ``None``: absent, which DIFFERENCES must declare."""

    client: Counterpart | None = None
    http: Counterpart | None = None
    mcp: Counterpart | None = None
    cli: Counterpart | None = None


# fmt: off
VERBS: dict[str, Row] = {
    # records and their lifecycle
    "remember": Row(client="remember", http="POST /records", mcp="remember", cli="remember"),
    "remember_many": Row(client="remember_many", http="POST /records/batch"),
    "remember_messages": Row(client="remember_messages", http="POST /messages",
                             cli="remember-messages"),
    "records": Row(client="records", http="GET /records", cli="list"),
    "get": Row(client="get", http="GET /records/{record_id}", mcp="get", cli="show"),
    "get_many": Row(client="get_many", http="POST /records/get-many"),
    "dependants": Row(client="dependants", http="GET /records/{record_id}/dependants",
                      cli="dependants"),
    "history": Row(client="history", http="GET /records/{record_id}/history", mcp="history",
                   cli="history"),
    "audit": Row(client="audit", http=("GET /audit", "GET /records/{record_id}/audit"),
                 cli="audit"),
    "changes": Row(client="changes", http="GET /changes", cli="watch"),
    "supersede": Row(client="supersede", http="POST /records/{record_id}/supersede",
                     mcp="correct", cli="supersede"),
    "close_record": Row(client="close_record", http="POST /records/{record_id}/close",
                        mcp="close", cli="close"),
    "verify": Row(client="verify", http="POST /records/{record_id}/verify", mcp="verify",
                  cli="verify"),
    "expire": Row(client="expire", http="POST /expire", cli="expire"),
    "feedback": Row(client="feedback", http="POST /records/{record_id}/feedback",
                    mcp="feedback", cli="feedback"),
    "forget": Row(client="forget", http="POST /records/{record_id}/forget", mcp="forget",
                  cli="forget"),
    "scrub": Row(client="scrub", http="POST /scrub", cli="scrub"),
    # changes by filter
    "close_where": Row(client="close_where", http="POST /records/close-where",
                       cli="close-where"),
    "verify_where": Row(client="verify_where", http="POST /records/verify-where",
                        cli="verify-where"),
    "forget_where": Row(client="forget_where", http="POST /records/forget-where",
                        cli="forget-where"),
    # reads
    "recall": Row(client="recall", http="POST /recall", mcp="recall", cli="recall"),
    "peek": Row(client="peek", http="POST /peek", cli=Via("recall", "touch")),  # --no-touch
    "recall_many": Row(client="recall_many", http="POST /recall-many"),
    "context": Row(client="context", http="POST /context", mcp="context", cli="context"),
    "agents": Row(client="agents", http="GET /agents"),
    "stats": Row(client="stats", http="GET /stats", cli="stats"),
    "accumulated_importance": Row(client="accumulated_importance",
                                  http="GET /agents/{agent}/importance",
                                  cli=Via("reflect", "importance")),
    # core memory blocks
    "core_blocks": Row(client="core_blocks", http="GET /agents/{agent}/core",
                       mcp="core_memory_read", cli="core show"),
    "core_append": Row(client="core_append", http="POST /agents/{agent}/core/{label}/append",
                       mcp="core_memory_append", cli="core append"),
    "core_replace": Row(client="core_replace", http="POST /agents/{agent}/core/{label}/replace",
                        mcp="core_memory_replace", cli="core replace"),
    # the causal graph
    "add_event": Row(client="add_event", http="POST /events", cli="event"),
    "events": Row(client="events", http="GET /events", cli="events"),
    "get_event": Row(client="get_event", http="GET /events/{event_id}",
                     cli=Via("show", "event")),
    "link": Row(client="link", http="POST /links", cli="link"),
    "unlink": Row(client="unlink", http="DELETE /links/{cause}/{effect}",
                  cli=Via("link", "remove")),
    "links": Row(client="links", http="GET /links", cli="links"),
    "ancestors": Row(client="ancestors", http=Via("GET /events/{event_id}/{direction}",
                                                  "direction"), cli="ancestors"),
    "descendants": Row(client="descendants", http=Via("GET /events/{event_id}/{direction}",
                                                      "direction"),
                       cli=Via("ancestors", "descendants")),
    "auto_link": Row(client="auto_link", http="POST /events/{event_id}/auto-link",
                     cli="auto-link"),
    # reflection
    "reflect": Row(client="reflect", http="POST /reflections", cli="reflect"),
    "extract": Row(client="extract", http="POST /extractions", cli="extract"),
    "maybe_reflect": Row(client="maybe_reflect", http="POST /reflections/if-due",
                         cli=Via("reflect", "if_due")),
    # models and vectors
    "embed_records": Row(client="embed_records", http="POST /embed-records", cli="embed-records"),
    "embed_passages": Row(client="embed_passages", http="POST /embed-passages",
                          cli="embed-passages"),
    "calibrate": Row(client="calibrate", http="POST /calibrate", cli="calibrate"),
    "reembed": Row(cli="reembed"),
    "reembed_state": Row(cli=Via("reembed", "status")),
    "cancel_reembed": Row(cli=Via("reembed", "cancel")),
    # review and the access log
    "review": Row(client="review", http="GET /review", mcp="review", cli="review"),
    "proposals": Row(client="proposals", http="GET /review/proposals", cli="review list"),
    "approve": Row(client="approve", http="POST /review/{proposal_id}/approve", mcp="approve",
                   cli="review approve"),
    "reject": Row(client="reject", http="POST /review/{proposal_id}/reject", mcp="reject",
                  cli="review reject"),
    "set_access_log": Row(client="set_access_log", http="PUT /access-log", cli="access-log"),
    "accesses": Row(client="accesses", http="GET /accesses", cli=Via("access-log", "action")),
    # moving data in and out
    "export": Row(client="export", http="GET /export", cli="export"),
    "import_": Row(client="import_", http="POST /import", cli="import"),
    "import_generative_agents": Row(cli=Via("import", "format")),
}
# fmt: on


# -- spellings ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Spelling:
    """Other names a library parameter goes by on an interface. The library's own name is
    always tried first; every name present counts as the parameter's."""

    names: tuple[str, ...]
    negated: bool = False  # a flag that turns it off: --no-touch is touch=False
    parts: bool = False  # the value is built from these flags: no one default to compare


def alias(*names: str) -> Spelling:
    return Spelling(names)


def negation(name: str) -> Spelling:
    return Spelling((name,), negated=True)


def built_from(*names: str) -> Spelling:
    return Spelling(names, parts=True)


#: Keyed by (verb, interface); ``"*"`` as the verb: every verb of the interface.
SPELLINGS: dict[tuple[str, str], dict[str, Spelling]] = {
    # a query string repeats a singular name: ?kind=fact&kind=plan, ?agent=a&agent=b
    (ALL, "http"): {"kinds": alias("kind"), "agents": alias("agent")},
    (ALL, "cli"): {
        "kinds": alias("kind"),  # --kind, repeatable
        # --agent, repeatable: one agent or several (stored as agent or as agents)
        "agent": alias("agents"),
        "agents": alias("agent"),
        "touch": negation("no_touch"),
        "cut_over": negation("no_cut_over"),
        "record_id": alias("id"),  # the positional ID
        "event_id": alias("id"),
        "proposal_id": alias("id"),
        "tags": built_from("tags", "tag_list"),  # --tag (repeatable) beside --tags a,b
        "llm": built_from("llm_url", "model"),  # an OpenAI-compatible endpoint and model
    },
    ("supersede", "http"): {"old_ids": alias("record_id")},  # one old record per call
    ("supersede", "mcp"): {"old_ids": alias("record_id")},
    ("supersede", "cli"): {"old_ids": alias("ids")},
    ("remember_messages", "cli"): {"messages": alias("path")},  # a JSON or JSONL file
    ("extract", "http"): {"policy": built_from("mode", "trusted_speakers")},
    ("extract", "cli"): {"policy": built_from("review", "trust")},
    ("core_append", "mcp"): {"text": alias("content")},  # Letta's (MemGPT's) tool names
    ("core_replace", "mcp"): {"old": alias("old_content"), "new": alias("new_content")},
    ("records", "cli"): {"status": alias("state")},
    ("set_access_log", "cli"): {"on": alias("action")},  # access-log on|off
    ("import_generative_agents", "cli"): {"persona_dir": alias("path")},
    ("reflect", "cli"): {"config": built_from("questions", "insights")},
    ("reembed", "cli"): {"embedder": built_from("to", "to_url", "to_languages")},
}


# -- the deliberate differences -----------------------------------------------------------------
ACTOR = (
    "the audit's actor is the caller: over HTTP the key (the routes pass caller.actor), over MCP "
    "the connection (mcp:<client>:<agent>)"
)
BOUND_AGENT = (
    "MCP tools act for the one agent the connection is bound to (--agent, or the URL): no tool "
    "takes an agent (docs/agents.md)"
)
CLI_OPTION = (
    "an option of every command, not of a verb: the store or service it opens (Memory.open's "
    "location and space; --server, --key), its clock (--now), its output (--json), the model "
    "(--no-embedder)"
)
SPACE = "the space is the routes' prefix, /v1/spaces/{space}; a Memory handle is one space"
PROGRESS = (
    "a progress bar is a library and terminal concern: the CLI shows one when stderr is a "
    "terminal, the service answers when done"
)
READ_OPTIONS = (
    "ReadOptions is the Python value of the read keywords; the other interfaces take the "
    "keywords one by one"
)
VECTORS = "vectors are not typed at a shell (tests/cli/test_write_flags.py)"
MCP_VECTORS = "a model writes and asks in words: the vectors are the server's embedder's"
PYTHON_VALUE = (
    "a Python value (a callable, an LLM client, a config object) does not cross the wire: the "
    "server uses its own (client/calls.py docstrings)"
)
CLI_CONFIG = (
    "a Python config object: the CLI runs the verb with the defaults (no ReviewConfig flags)"
)
OPEN_OPTION = (
    "an option of the handle, Memory.open(allow_missing_vectors=), given to the commands that "
    "write records"
)
MCP_TOOLS = (
    "the MCP tools offer a model the parameters docs/agents.md lists ('Tools'), not every "
    "option of the verb"
)
MCP_CORRECT = (
    "`correct` takes the record, the new text and the reason (docs/agents.md 'Tools'); the new "
    "record's other fields come from the old one"
)
MCP_CONTEXT = (
    "sized for a model's context (docs/agents.md 'Bounds'): k 1..50 (recall: 8 by default), "
    "context budgeted at 3,000 tokens (50..8,000) by default"
)
OPERATOR_ONLY = (
    "changes by filter are an operator's (a curator, an erasure request), never a model's: one "
    "call could close or purge a whole memory (docs/filters.md)"
)
NOT_A_TOOL = "not an MCP tool: the tools are an agent's own reads and memory edits (docs/agents.md)"
LABEL_FILTER = "one block's label: a filter of the answer (mcp_server.py, cli/curation.py)"
SERVER_BATCHES = "the server embeds in its own batches (client/calls.py embed_records)"
ARCHIVE = "the archive is the request (import) or the response (export) body, not a server path"
BESIDE_SERVICE = (
    "a model switch runs beside the service, on the store: `chronomem reembed` refuses --server "
    "(cli/commands.py reembed_command)"
)
LOCAL_FILES = (
    "reads a persona folder on this machine: the CLI refuses it through --server "
    "(cli/commands.py import_command)"
)
CLI_PAGE = "the CLI prints a page of 20 (docs/cli.md 'Browsing'; the library's default is 100)"
CLI_LINKS = "the CLI filters and pages Memory.links() itself (cli/browse.py links_command)"
ONE_CALL = "a batch verb: a command makes one call (bulk loads go through `import`)"
VIA_STATS = "`chronomem stats` lists every agent with its counts"
SERVICE_ONLY = "the service's own: its health and each space's simulated clock"
KEYS = "the service's API keys (server/keys.py), not a Memory verb"
WEBHOOKS = "webhook subscriptions are kept and delivered by the service (server/webhooks.py)"
LONG_POLL = "a long poll: the service holds the answer until a change commits (routes/changes.py)"


#: (verb, interface, parameter) -> why the interface differs from the library there. ``"*"`` as
#: the verb: every verb of the interface; as the parameter: the verb has no counterpart there.
DIFFERENCES: dict[tuple[str, str, str], str] = {
    # -- every verb of an interface
    (ALL, "http", "space"): SPACE,
    (ALL, "http", "actor"): ACTOR,
    (ALL, "http", "progress"): PROGRESS,
    (ALL, "http", "options"): READ_OPTIONS,
    (ALL, "mcp", "agent"): BOUND_AGENT,
    (ALL, "mcp", "agents"): BOUND_AGENT,
    (ALL, "mcp", "actor"): ACTOR,
    (ALL, "mcp", "embedding"): MCP_VECTORS,
    (ALL, "mcp", "query_embedding"): MCP_VECTORS,
    (ALL, "mcp", "passage_embeddings"): MCP_VECTORS,
    (ALL, "mcp", "options"): READ_OPTIONS,
    (ALL, "cli", "db"): CLI_OPTION,
    (ALL, "cli", "space"): CLI_OPTION,
    (ALL, "cli", "server"): CLI_OPTION,
    (ALL, "cli", "key"): CLI_OPTION,
    (ALL, "cli", "now"): CLI_OPTION,
    (ALL, "cli", "json"): CLI_OPTION,
    (ALL, "cli", "no_embedder"): CLI_OPTION,
    (ALL, "cli", "progress"): PROGRESS,
    (ALL, "cli", "embedding"): VECTORS,
    (ALL, "cli", "query_embedding"): VECTORS,
    (ALL, "cli", "passage_embeddings"): VECTORS,
    (ALL, "cli", "options"): READ_OPTIONS,
    # -- operations that are no library verb
    (NO_VERB, "client", "clock_reading"): SERVICE_ONLY,
    (NO_VERB, "client", "set_clock"): SERVICE_ONLY,
    (NO_VERB, "client", "advance_clock"): SERVICE_ONLY,
    (NO_VERB, "client", "health"): SERVICE_ONLY,
    (NO_VERB, "http", "GET /clock"): SERVICE_ONLY,
    (NO_VERB, "http", "PUT /clock"): SERVICE_ONLY,
    (NO_VERB, "http", "POST /clock/advance"): SERVICE_ONLY,
    (NO_VERB, "http", "GET /v1/health"): SERVICE_ONLY,
    (NO_VERB, "cli", "serve"): "runs the HTTP service",
    (NO_VERB, "cli", "mcp"): "runs the MCP server over stdio",
    (NO_VERB, "cli", "migrate"): "copies spaces between stores (chronomem.migrate, a function)",
    (NO_VERB, "cli", "completion"): "prints a shell completion script",
    (NO_VERB, "cli", "demo"): "runs the end-to-end demo",
    (NO_VERB, "client", "add_webhook"): WEBHOOKS,
    (NO_VERB, "client", "webhooks"): WEBHOOKS,
    (NO_VERB, "client", "webhook"): WEBHOOKS,
    (NO_VERB, "client", "webhook_failures"): WEBHOOKS,
    (NO_VERB, "client", "remove_webhook"): WEBHOOKS,
    (NO_VERB, "http", "POST /webhooks"): WEBHOOKS,
    (NO_VERB, "http", "GET /webhooks"): WEBHOOKS,
    (NO_VERB, "http", "GET /webhooks/{webhook_id}"): WEBHOOKS,
    (NO_VERB, "http", "GET /webhooks/{webhook_id}/failures"): WEBHOOKS,
    (NO_VERB, "http", "DELETE /webhooks/{webhook_id}"): WEBHOOKS,
    (NO_VERB, "http", "GET /changes/stream"): "the change feed as Server-Sent Events",
    (NO_VERB, "http", "GET /v1/changes"): "the service's own feed (keys bound to no space)",
    (NO_VERB, "cli", "keys create"): KEYS,
    (NO_VERB, "cli", "keys list"): KEYS,
    (NO_VERB, "cli", "keys revoke"): KEYS,
    # -- the clients
    ("context", "client", "count_tokens"): PYTHON_VALUE,
    ("reflect", "client", "llm"): PYTHON_VALUE,
    ("maybe_reflect", "client", "llm"): PYTHON_VALUE,
    ("extract", "client", "llm"): PYTHON_VALUE,
    ("reflect", "client", "config"): PYTHON_VALUE,
    ("reembed", "client", ALL): BESIDE_SERVICE,
    ("reembed_state", "client", ALL): BESIDE_SERVICE,
    ("cancel_reembed", "client", ALL): BESIDE_SERVICE,
    ("import_generative_agents", "client", ALL): LOCAL_FILES,
    # -- HTTP
    ("context", "http", "count_tokens"): PYTHON_VALUE,
    ("reflect", "http", "llm"): PYTHON_VALUE,
    ("maybe_reflect", "http", "llm"): PYTHON_VALUE,
    ("extract", "http", "llm"): PYTHON_VALUE,
    ("reflect", "http", "config"): PYTHON_VALUE,
    ("review", "http", "config"): PYTHON_VALUE,
    ("embed_records", "http", "batch"): SERVER_BATCHES,
    ("embed_passages", "http", "batch"): SERVER_BATCHES,
    ("export", "http", "path"): ARCHIVE,
    ("import_", "http", "path"): ARCHIVE,
    ("reembed", "http", ALL): BESIDE_SERVICE,
    ("reembed_state", "http", ALL): BESIDE_SERVICE,
    ("cancel_reembed", "http", ALL): BESIDE_SERVICE,
    ("import_generative_agents", "http", ALL): LOCAL_FILES,
    # -- MCP: the tools' own choices
    ("remember", "mcp", "valid_from"): MCP_TOOLS,
    ("remember", "mcp", "evidence"): MCP_TOOLS,
    ("remember", "mcp", "event_id"): MCP_TOOLS,
    ("remember", "mcp", "supersedes"): MCP_TOOLS + "; a correction is `correct`",
    ("remember", "mcp", "replace"): MCP_TOOLS + "; a correction is `correct`",
    ("remember", "mcp", "sensitivity"): MCP_TOOLS,
    ("remember", "mcp", "speaker"): MCP_TOOLS,
    ("remember", "mcp", "metadata"): MCP_TOOLS,
    ("remember", "mcp", "expires_at"): MCP_TOOLS + "; a model gives a span (ttl)",
    ("remember", "mcp", "source_id"): MCP_TOOLS + "; a model's own note is made from nothing",
    ("recall", "mcp", "k"): MCP_CONTEXT,
    ("recall", "mcp", "touch"): MCP_TOOLS + "; an agent's own recall touches",
    ("recall", "mcp", "valid_at"): MCP_TOOLS,
    ("recall", "mcp", "preset"): MCP_TOOLS,
    ("recall", "mcp", "crisis"): MCP_TOOLS + "; `context` takes the crisis",
    ("recall", "mcp", "asker"): MCP_TOOLS,
    ("recall", "mcp", "dedup"): MCP_TOOLS + "; a one-agent read has nothing to merge",
    ("recall", "mcp", "rank_by"): MCP_TOOLS,
    ("supersede", "mcp", "kind"): MCP_CORRECT,
    ("supersede", "mcp", "session"): MCP_CORRECT,
    ("supersede", "mcp", "importance"): MCP_CORRECT,
    ("supersede", "mcp", "occurred_at"): MCP_CORRECT,
    ("supersede", "mcp", "valid_from"): MCP_CORRECT,
    ("supersede", "mcp", "valid_until"): MCP_CORRECT,
    ("supersede", "mcp", "domain"): MCP_CORRECT,
    ("supersede", "mcp", "tags"): MCP_CORRECT,
    ("supersede", "mcp", "metadata"): MCP_CORRECT,
    ("supersede", "mcp", "ttl"): MCP_CORRECT,
    ("supersede", "mcp", "expires_at"): MCP_CORRECT,
    ("supersede", "mcp", "source_id"): MCP_CORRECT,
    ("supersede", "mcp", "evidence"): MCP_CORRECT,
    ("supersede", "mcp", "event_id"): MCP_CORRECT,
    ("supersede", "mcp", "sensitivity"): MCP_CORRECT,
    ("supersede", "mcp", "speaker"): MCP_CORRECT,
    ("close_record", "mcp", "valid_until"): MCP_TOOLS + "; `close` closes now",
    ("context", "mcp", "k"): MCP_CONTEXT,
    ("context", "mcp", "filter"): MCP_CONTEXT + "; `recall` takes the filter and the session",
    ("context", "mcp", "session"): MCP_CONTEXT + "; `recall` takes the filter and the session",
    ("context", "mcp", "budget_tokens"): MCP_CONTEXT,
    ("context", "mcp", "as_of"): MCP_TOOLS,
    ("context", "mcp", "touch"): MCP_TOOLS,
    ("context", "mcp", "preset"): MCP_TOOLS,
    ("context", "mcp", "count_tokens"): PYTHON_VALUE,
    ("core_blocks", "mcp", "label"): LABEL_FILTER,
    ("core_append", "mcp", "limit"): MCP_TOOLS + "; a block holds the default 2,000 characters",
    ("core_replace", "mcp", "limit"): MCP_TOOLS + "; a block holds the default 2,000 characters",
    ("review", "mcp", "as_of"): MCP_TOOLS,
    ("review", "mcp", "config"): PYTHON_VALUE,
    # -- MCP: verbs that are no tool
    ("remember_many", "mcp", ALL): NOT_A_TOOL,
    ("extract", "mcp", ALL): NOT_A_TOOL,
    ("remember_messages", "mcp", ALL): (
        "not an MCP tool: the host application hands its conversation over, the agent edits "
        "its own memories (docs/design/conversations.md)"
    ),
    ("close_where", "mcp", ALL): OPERATOR_ONLY,
    ("verify_where", "mcp", ALL): OPERATOR_ONLY,
    ("expire", "mcp", ALL): NOT_A_TOOL + "; reads never need it (docs/lifecycle.md)",
    ("forget_where", "mcp", ALL): OPERATOR_ONLY,
    ("records", "mcp", ALL): NOT_A_TOOL,
    ("get_many", "mcp", ALL): NOT_A_TOOL,
    ("dependants", "mcp", ALL): NOT_A_TOOL,
    ("audit", "mcp", ALL): NOT_A_TOOL,
    ("changes", "mcp", ALL): NOT_A_TOOL,
    ("changes", "client", "wait"): LONG_POLL,
    ("changes", "http", "wait"): LONG_POLL,
    ("changes", "cli", "follow"): "`watch --follow` keeps reading as changes commit",
    ("changes", "cli", "interval"): "how often `watch --follow` asks a store (cli/watch.py)",
    ("changes", "cli", "limit"): "`watch` reads every page in turn (cli/watch.py)",
    ("scrub", "mcp", ALL): NOT_A_TOOL,
    ("peek", "mcp", ALL): NOT_A_TOOL,
    ("recall_many", "mcp", ALL): NOT_A_TOOL,
    ("agents", "mcp", ALL): NOT_A_TOOL,
    ("stats", "mcp", ALL): NOT_A_TOOL,
    ("accumulated_importance", "mcp", ALL): NOT_A_TOOL,
    ("add_event", "mcp", ALL): NOT_A_TOOL,
    ("events", "mcp", ALL): NOT_A_TOOL,
    ("get_event", "mcp", ALL): NOT_A_TOOL,
    ("link", "mcp", ALL): NOT_A_TOOL,
    ("unlink", "mcp", ALL): NOT_A_TOOL,
    ("links", "mcp", ALL): NOT_A_TOOL,
    ("ancestors", "mcp", ALL): NOT_A_TOOL,
    ("descendants", "mcp", ALL): NOT_A_TOOL,
    ("auto_link", "mcp", ALL): NOT_A_TOOL,
    ("reflect", "mcp", ALL): NOT_A_TOOL,
    ("maybe_reflect", "mcp", ALL): NOT_A_TOOL,
    ("embed_records", "mcp", ALL): NOT_A_TOOL,
    ("embed_passages", "mcp", ALL): NOT_A_TOOL,
    ("calibrate", "mcp", ALL): NOT_A_TOOL,
    ("reembed", "mcp", ALL): NOT_A_TOOL,
    ("reembed_state", "mcp", ALL): NOT_A_TOOL,
    ("cancel_reembed", "mcp", ALL): NOT_A_TOOL,
    ("proposals", "mcp", ALL): NOT_A_TOOL,
    ("set_access_log", "mcp", ALL): NOT_A_TOOL,
    ("accesses", "mcp", ALL): NOT_A_TOOL,
    ("export", "mcp", ALL): NOT_A_TOOL,
    ("import_", "mcp", ALL): NOT_A_TOOL,
    ("import_generative_agents", "mcp", ALL): NOT_A_TOOL,
    # -- the CLI
    ("remember", "cli", "allow_missing_vectors"): OPEN_OPTION,
    ("supersede", "cli", "allow_missing_vectors"): OPEN_OPTION,
    ("remember_messages", "cli", "allow_missing_vectors"): OPEN_OPTION,
    ("import_", "cli", "allow_missing_vectors"): OPEN_OPTION,
    ("import_generative_agents", "cli", "allow_missing_vectors"): OPEN_OPTION,
    ("records", "cli", "limit"): CLI_PAGE,
    ("events", "cli", "limit"): CLI_PAGE,
    ("links", "cli", "since"): CLI_LINKS,
    ("links", "cli", "until"): CLI_LINKS,
    ("links", "cli", "as_of"): CLI_LINKS,
    ("links", "cli", "event"): CLI_LINKS,
    ("links", "cli", "limit"): CLI_LINKS,
    ("links", "cli", "offset"): CLI_LINKS,
    ("context", "cli", "count_tokens"): PYTHON_VALUE,
    ("core_blocks", "cli", "label"): LABEL_FILTER,
    ("review", "cli", "config"): CLI_CONFIG,
    ("remember_many", "cli", ALL): ONE_CALL,
    ("recall_many", "cli", ALL): ONE_CALL,
    ("get_many", "cli", ALL): ONE_CALL,
    ("agents", "cli", ALL): VIA_STATS,
}


# -- what each interface declares ---------------------------------------------------------------
class _Mark(Enum):
    REQUIRED = "no default"
    OPAQUE = "a default not compared"  # a tuple, a timedelta, a function, ...


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    default: Any = _Mark.REQUIRED
    position: int | None = None  # among the positional parameters; None: keyword-only
    bounds: tuple[float | None, float | None] = (None, None)


Operation = dict[str, Param]


class Surfaces:
    """Every interface's operations by name, each a mapping of its parameters."""

    def __init__(self, operations: dict[str, dict[str, Operation]], openapi: dict[str, Any]):
        self.operations = operations
        self.openapi = openapi

    def of(self, interface: str) -> dict[str, Operation]:
        return self.operations[interface]

    def __repr__(self) -> str:  # a failing test's locals stay readable
        return f"Surfaces({', '.join(self.operations)})"


def _comparable(value: Any) -> Any:
    if value is inspect.Parameter.empty:
        return _Mark.REQUIRED
    if isinstance(value, Enum):
        return value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return _Mark.OPAQUE


def _signature(fn: Any) -> Operation:
    out: Operation = {}
    position = 0
    for p in inspect.signature(fn).parameters.values():
        if p.name == "self":
            continue
        assert p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD), f"{fn}: *{p.name}"
        positional = p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        out[p.name] = Param(p.name, _comparable(p.default), position if positional else None)
        position += positional
    return out


def _library() -> dict[str, Operation]:
    return {name: _signature(getattr(Memory, name)) for name in _public_methods()}


def _public_methods() -> list[str]:
    names = []
    for name in dir(Memory):
        if name.startswith("_") and name != "import_":
            continue
        if isinstance(inspect.getattr_static(Memory, name), property):
            continue
        if callable(getattr(Memory, name)) and name not in HANDLE_METHODS:
            names.append(name)
    return sorted(names)


def _client_verbs() -> list[str]:
    return sorted(n for n, v in inspect.getmembers(Client) if isinstance(v, Verb))


def _clients() -> tuple[dict[str, Operation], dict[str, Operation]]:
    blocking, awaiting = Client("http://127.0.0.1:9"), AsyncClient("http://127.0.0.1:9")
    try:
        return (
            {n: _signature(getattr(blocking, n)) for n in _client_verbs()},
            {n: _signature(getattr(awaiting, n)) for n in _client_verbs()},
        )
    finally:
        blocking.close()
        asyncio.run(awaiting.aclose())


def _bounds(schema: Mapping[str, Any]) -> tuple[float | None, float | None]:
    """``minimum``/``maximum`` of a schema or of the non-null member of its ``anyOf``."""
    for part in [schema, *schema.get("anyOf", ())]:
        if "minimum" in part or "maximum" in part:
            return part.get("minimum"), part.get("maximum")
    return None, None


def _schema_params(schema: Mapping[str, Any]) -> Operation:
    required = set(schema.get("required", ()))
    return {
        name: Param(
            name,
            _Mark.REQUIRED if name in required or "default" not in prop else prop["default"],
            bounds=_bounds(prop),
        )
        for name, prop in schema.get("properties", {}).items()
    }


_PREFIX = "/v1/spaces/{space}"


def _http(openapi: Mapping[str, Any]) -> dict[str, Operation]:
    components = openapi["components"]["schemas"]
    out: dict[str, Operation] = {}
    for path, methods in openapi["paths"].items():
        for method, op in methods.items():
            params: Operation = {}
            for p in op.get("parameters", ()):
                schema = p.get("schema", {})
                default = _Mark.REQUIRED if p.get("required") else schema.get("default")
                params[p["name"]] = Param(p["name"], default, bounds=_bounds(schema))
            for content in op.get("requestBody", {}).get("content", {}).values():
                schema = content.get("schema", {})
                if "$ref" in schema:
                    schema = components[schema["$ref"].rsplit("/", 1)[1]]
                params.update(_schema_params(schema))
            name = path.removeprefix(_PREFIX) if path.startswith(_PREFIX + "/") else path
            out[f"{method.upper()} {name}"] = params
    return out


def _mcp() -> dict[str, Operation]:
    def unbound(ctx: Any) -> Any:
        raise AssertionError("no tool is called here")

    tools = asyncio.run(build_server(unbound).list_tools())
    return {t.name: _schema_params(t.input_schema) for t in tools}


def _cli(parser: argparse.ArgumentParser, prefix: str = "") -> dict[str, Operation]:
    """Every command (a parser with a ``func``), its dests; sub-commands joined by a space."""
    out: dict[str, Operation] = {}
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for name, sub in action.choices.items():
            command = f"{prefix}{name}"
            if "func" in sub._defaults:
                out[command] = {
                    a.dest: Param(a.dest, _comparable(a.default))
                    for a in sub._actions
                    if a.dest != argparse.SUPPRESS
                    and not isinstance(a, argparse._SubParsersAction | argparse._HelpAction)
                }
            out.update(_cli(sub, f"{command} "))
    return out


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> Surfaces:
    spaces = Spaces(location=tmp_path_factory.mktemp("drift") / "store.db", embedder=None)
    try:
        openapi = create_app(spaces, loopback=True).openapi()
    finally:
        spaces.close()
    blocking, awaiting = _clients()
    return Surfaces(
        {
            "library": _library(),
            "client": blocking,
            "async-client": awaiting,
            "http": _http(openapi),
            "mcp": _mcp(),
            "cli": _cli(build_parser()),
        },
        openapi,
    )


# -- the comparison -----------------------------------------------------------------------------
def _counterparts(verb: str, interface: str) -> tuple[tuple[str, ...], str | None]:
    """The operation names of ``verb`` on ``interface`` and its selector."""
    found = getattr(VERBS[verb], interface)
    if found is None:
        return (), None
    if isinstance(found, Via):
        return (found.operation,), found.selector
    return ((found,) if isinstance(found, str) else found), None


def _spellings(verb: str, interface: str, param: str) -> list[Spelling]:
    own = SPELLINGS.get((verb, interface), {}).get(param)
    wide = SPELLINGS.get((ALL, interface), {}).get(param)
    return [Spelling((param,)), *(s for s in (own, wide) if s is not None)]


def _covered(verb: str, interface: str, library: Operation, names: set[str]) -> set[str]:
    """The interface's names that spell one of ``library``'s parameters."""
    return {
        n for p in library for s in _spellings(verb, interface, p) for n in s.names if n in names
    }


def _shown(value: Any) -> str:
    return value.value if isinstance(value, _Mark) else repr(value)


def differences(verb: str, interface: str, surfaces: Surfaces) -> dict[str, str]:
    """Each parameter of ``verb`` that differs on ``interface`` -> what differs (``"*"``: the
    verb has no counterpart there)."""
    library = surfaces.of("library")[verb]
    names, selector = _counterparts(verb, interface)
    if not names:
        return {ALL: f"no counterpart on {interface} (map it in VERBS or declare it absent)"}
    ops = surfaces.of(interface)
    for name in names:
        assert name in ops, f"VERBS maps {verb} to {name!r}, which {interface} does not have"
    theirs: Operation = {}
    for name in names:
        theirs.update(ops[name])
    assert selector is None or selector in theirs, (
        f"VERBS selects {verb} on {interface} {names[0]!r} by {selector!r}, which it does not have"
    )
    out: dict[str, list[str]] = {}
    # the library's parameters, as the interface spells them
    for param, mine in library.items():
        present = [
            (s, n) for s in _spellings(verb, interface, param) for n in s.names if n in theirs
        ]
        if not present:
            out[param] = [
                f"the library has it (default {_shown(mine.default)}); {interface} has no such "
                "parameter"
            ]
            continue
        spelling, name = present[0]
        other, said = theirs[name], out.setdefault(param, [])
        default = _default_difference(mine.default, other.default, spelling)
        if default:
            said.append(default if name == param else f"{default} (spelled {name!r})")
        if interface in ("client", "async-client") and mine.position != other.position:
            said.append(
                f"{_place(mine.position)} in the library, {_place(other.position)} on {interface}"
            )
        if interface == "mcp":
            bounds = _http_bounds(verb, param, surfaces)
            if bounds is not None and bounds != other.bounds:
                said.append(f"bounds {list(other.bounds)} over MCP, {list(bounds)} over HTTP")
    # the interface's own parameters
    foreign = _foreign(verb, interface, names, surfaces)
    for extra in set(theirs) - _covered(verb, interface, library, set(theirs)) - foreign:
        out[extra] = [f"{interface} has it; the library has no such parameter"]
    return {param: "; ".join(said) for param, said in out.items() if said}


def _place(position: int | None) -> str:
    return "keyword-only" if position is None else f"positional #{position + 1}"


def _default_difference(mine: Any, theirs: Any, spelling: Spelling) -> str | None:
    if spelling.parts or _Mark.REQUIRED in (mine, theirs) or _Mark.OPAQUE in (mine, theirs):
        return None
    if theirs is None:  # states no default: the parameter is left out, the library's applies
        return None
    if spelling.negated and isinstance(theirs, bool):
        theirs = not theirs
    if type(mine) is bool or type(theirs) is bool:
        same = type(mine) is type(theirs) and mine == theirs
    else:
        same = mine == theirs
    return None if same else f"default {theirs!r} on the interface, {mine!r} in the library"


def _http_bounds(verb: str, param: str, surfaces: Surfaces) -> tuple[Any, Any] | None:
    """The bounds HTTP's counterpart of ``verb`` carries for ``param`` (None: no such one)."""
    names, _ = _counterparts(verb, "http")
    for name in names:
        found = surfaces.of("http")[name].get(param)
        if found is not None:
            return found.bounds
    return None


def _foreign(verb: str, interface: str, names: tuple[str, ...], surfaces: Surfaces) -> set[str]:
    """Names on ``verb``'s operations that are other verbs': their selectors and their own
    parameters as spelled there."""
    out: set[str] = set()
    for other in VERBS:
        shared, selector = _counterparts(other, interface)
        if not set(shared) & set(names):
            continue
        if selector is not None:
            out.add(selector)
        if other != verb:
            theirs = {n for name in shared for n in surfaces.of(interface)[name]}
            out |= _covered(other, interface, surfaces.of("library")[other], theirs)
    own = _covered(verb, interface, surfaces.of("library")[verb], out)
    return out - own


def _undeclared(verb: str, interface: str, surfaces: Surfaces) -> list[str]:
    return [
        f"{verb} / {interface} / {param}: {what}"
        for param, what in sorted(differences(verb, interface, surfaces).items())
        if (verb, interface, param) not in DIFFERENCES
        and (ALL, interface, param) not in DIFFERENCES
    ]


def _counterpart_names(interface: str) -> set[str]:
    return {name for verb in VERBS for name in _counterparts(verb, interface)[0]}


# -- the tests ----------------------------------------------------------------------------------
CASES = [(verb, interface) for verb in VERBS for interface in INTERFACES]


@pytest.mark.parametrize(("verb", "interface"), CASES, ids=[f"{v}-{i}" for v, i in CASES])
def test_parameters_agree_with_the_library(verb: str, interface: str, surfaces: Surfaces) -> None:
    found = _undeclared(verb, interface, surfaces)
    assert not found, (
        "undeclared differences (fix the interface, or declare the difference with its reason "
        "in DIFFERENCES):\n  " + "\n  ".join(found)
    )


def _key_id(key: tuple[str, str, str]) -> str:
    verb, interface, param = key
    return f"{'no-verb' if verb == NO_VERB else verb}-{interface}-{param}".replace(" ", "_")


@pytest.mark.parametrize("key", list(DIFFERENCES), ids=[_key_id(k) for k in DIFFERENCES])
def test_each_declared_difference_is_still_real(
    key: tuple[str, str, str], surfaces: Surfaces
) -> None:
    verb, interface, param = key
    assert interface in INTERFACES, f"{key}: no interface {interface!r}"
    assert DIFFERENCES[key].strip(), f"{key}: say why"
    fixed = "the drift is fixed" if DIFFERENCES[key].startswith("DRIFT:") else "it agrees now"
    if verb == NO_VERB:
        assert param in surfaces.of(interface), f"{key}: {interface} has no {param!r}: remove it"
        assert param not in _counterpart_names(interface), (
            f"{key}: VERBS maps a verb to {param!r}: remove the declaration"
        )
    elif verb == ALL:
        assert any(param in differences(v, interface, surfaces) for v in VERBS), (
            f"{key}: no verb differs in {param!r} on {interface} ({fixed}): remove the declaration"
        )
    else:
        assert verb in VERBS, f"{key}: no verb {verb!r}"
        assert (ALL, interface, param) not in DIFFERENCES, f"{key}: declared for every verb"
        assert param in differences(verb, interface, surfaces), (
            f"{key}: {verb} no longer differs in {param!r} on {interface} ({fixed}): remove the "
            "declaration"
        )


def test_every_public_verb_is_mapped(surfaces: Surfaces) -> None:
    public = set(surfaces.of("library"))
    assert sorted(public - set(VERBS)) == [], "new verbs: map them in VERBS"
    assert sorted(set(VERBS) - public) == [], "VERBS names methods Memory does not have"


@pytest.mark.parametrize("interface", INTERFACES)
def test_every_operation_of_an_interface_is_a_verb(interface: str, surfaces: Surfaces) -> None:
    declared = {
        param for verb, where, param in DIFFERENCES if verb == NO_VERB and where == interface
    }
    unmapped = set(surfaces.of(interface)) - _counterpart_names(interface) - declared
    assert sorted(unmapped) == [], (
        f"operations of {interface} that no verb maps to: map them in VERBS, or declare them "
        "(NO_VERB, interface, name) in DIFFERENCES"
    )


def test_the_async_client_has_the_blocking_clients_signatures(surfaces: Surfaces) -> None:
    assert surfaces.of("async-client") == surfaces.of("client")


def test_http_read_bounds_are_the_wire_constants(surfaces: Surfaces) -> None:
    """Every ``k`` over HTTP is at most ``MAX_K``; a recall-many at most ``MAX_QUERIES``
    queries."""
    bounded = {
        (verb, name): surfaces.of("http")[name]["k"].bounds
        for verb in VERBS
        for name in _counterparts(verb, "http")[0]
        if "k" in surfaces.of("http")[name]
    }
    assert {verb for verb, _ in bounded} >= {"recall", "peek", "recall_many", "context"}
    assert {key: bounds[1] for key, bounds in bounded.items()} == dict.fromkeys(bounded, wire.MAX_K)
    body = surfaces.openapi["components"]["schemas"]["RecallManyIn"]
    assert body["properties"]["queries"]["maxItems"] == wire.MAX_QUERIES
