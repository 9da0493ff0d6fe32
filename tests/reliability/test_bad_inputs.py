"""A catalogue of bad inputs over the API and the CLI, on every store (docs/reliability.md,
"Bad input"): each gets a typed error whose message names the field, and changes nothing — the
row count of every table and every space's change sequence stay as they were.

One store per backend for the whole module, seeded with records (one cited by another, one
superseded), an event chain and a link, so the lifecycle and graph verbs have something to
refuse. Cases are data: (name, the call, the error class, the field its message names)."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from chronomem import (
    ChronomemError,
    ConfigError,
    ConflictError,
    DependentsExistError,
    InvalidInputError,
    Memory,
    NotFoundError,
    ReadOptions,
    StoreError,
    migrate,
)
from chronomem.cli.main import main

from ..conftest import T0, store_of
from .conftest import Seed
from .harness import row_counts

MISSING = "01ABCDEFGHJKMNPQRSTVWXYZ00"


def _nothing_created(path: Path, call: Callable[[], object]) -> object:
    try:
        return call()
    finally:
        assert not path.exists(), f"{path} was created by a call that failed"


def _deep(levels: int) -> dict[str, Any]:
    """A mapping nested ``levels`` deep."""
    top: dict[str, Any] = {}
    inner = top
    for _ in range(levels):
        inner["a"] = {}
        inner = inner["a"]
    return top


NAIVE = datetime(2024, 1, 1)  # noqa: DTZ001 (the point)
DIM = 3


@dataclass(frozen=True)
class Bad:
    name: str
    call: Callable[[Memory, Seed], object]
    error: type[ChronomemError]
    field: str  # named in the message (and err.field, for InvalidInputError)


def _archive(seed: Seed, name: str, lines: list[object], header: object = None) -> Path:
    path = seed.directory / f"{name}.jsonl"
    head = header if header is not None else {"format": "chronomem", "version": 3}
    path.write_text("\n".join(json.dumps(x) for x in [head, *lines]) + "\n")
    return path


def _record_line(**fields: Any) -> dict[str, Any]:
    line = {
        "type": "record",
        "id": "1RPDVPD7V9006P26MTGXAM80E6",
        "agent": "ada",
        "kind": "observation",
        "text": "imported",
        "importance": 5,
        "occurred_at": "2024-01-01T00:00:00+00:00",
        "recorded_at": "2024-01-01T00:00:00+00:00",
        "last_accessed_at": "2024-01-01T00:00:00+00:00",
    }
    return {**line, **fields}


def _import(name: str, *lines: object, header: object = None) -> Callable[[Memory, Seed], object]:
    return lambda m, s: m.import_(_archive(s, name, list(lines), header))


INV, NF, CF, CO = InvalidInputError, NotFoundError, ConfigError, ConflictError


def R(**kw: Any) -> Callable[[Memory, Seed], object]:
    """remember(**kw)."""
    return lambda m, s: m.remember(**kw)


# fmt: off
API: list[Bad] = [
    # remember: the text
    Bad("empty text", R(text=""), INV, "text"),
    Bad("blank text", R(text=" \t\n"), INV, "text"),
    Bad("no text", R(text=None), INV, "text"),
    Bad("number as text", R(text=42), INV, "text"),
    Bad("bytes as text", R(text=b"lamp"), INV, "text"),
    Bad("NUL in text", R(text="lamp\x00lit"), INV, "text"),
    Bad("lone surrogate in text", R(text="lamp \ud800"), INV, "text"),
    # remember: who and what
    Bad("empty agent", R(text="x", agent=""), INV, "agent"),
    Bad("NUL in agent", R(text="x", agent="a\x00"), INV, "agent"),
    Bad("number as agent", R(text="x", agent=5), INV, "agent"),
    Bad("unknown kind", R(text="x", kind="dream"), INV, "kind"),
    Bad("number as kind", R(text="x", kind=3), INV, "kind"),
    Bad("unknown sensitivity", R(text="x", sensitivity="top-secret"), INV, "sensitivity"),
    # remember: importance
    Bad("importance 0", R(text="x", importance=0), INV, "importance"),
    Bad("importance 11", R(text="x", importance=11), INV, "importance"),
    Bad("importance NaN", R(text="x", importance=math.nan), INV, "importance"),
    Bad("importance infinite", R(text="x", importance=math.inf), INV, "importance"),
    Bad("importance as text", R(text="x", importance="7"), INV, "importance"),
    Bad("importance as a boolean", R(text="x", importance=True), INV, "importance"),
    # remember: instants
    Bad("naive occurred_at", R(text="x", occurred_at=NAIVE), INV, "occurred_at"),
    Bad("occurred_at as text", R(text="x", occurred_at="2024-01-01"), INV, "occurred_at"),
    Bad("naive valid_from", R(text="x", valid_from=NAIVE), INV, "valid_from"),
    Bad("naive valid_until", R(text="x", valid_until=NAIVE), INV, "valid_until"),
    Bad(
        "valid_until before valid_from",
        R(text="x", valid_from=T0 + timedelta(days=2), valid_until=T0 + timedelta(days=1)),
        INV,
        "valid_until",
    ),
    Bad("an empty validity window", R(text="x", valid_from=T0, valid_until=T0), INV, "valid_until"),
    # remember: domain, tags, metadata
    Bad("empty domain", R(text="x", domain=""), INV, "domain"),
    Bad("NUL in domain", R(text="x", domain="ops\x00"), INV, "domain"),
    Bad("one string as tags", R(text="x", tags="urgent"), INV, "tags"),
    Bad("an empty tag", R(text="x", tags=["ok", ""]), INV, "tags"),
    Bad("a number as a tag", R(text="x", tags=[1]), INV, "tags"),
    Bad("a lone surrogate in a tag", R(text="x", tags=["\udfff"]), INV, "tags"),
    Bad("a list as metadata", R(text="x", metadata=["a"]), INV, "metadata"),
    Bad("an object in metadata", R(text="x", metadata={"k": object()}), INV, "metadata"),
    Bad("NaN in metadata", R(text="x", metadata={"k": math.nan}), INV, "metadata"),
    Bad("NUL in a metadata key", R(text="x", metadata={"k\x00": 1}), INV, "metadata"),
    Bad(
        "a surrogate deep in metadata",
        R(text="x", metadata={"a": [{"b": "\ud834"}]}),
        INV,
        "metadata",
    ),
    # remember: references
    Bad("one string as evidence", R(text="x", evidence="01ABC"), INV, "evidence"),
    Bad("a number as evidence", R(text="x", evidence=[5]), INV, "evidence"),
    Bad("missing evidence", R(text="x", evidence=[MISSING]), NF, "evidence"),
    Bad("missing witnessed event", R(text="x", event_id=MISSING), NF, "event"),
    Bad("empty event_id", R(text="x", event_id=""), INV, "event_id"),
    Bad("one string as supersedes", R(text="x", supersedes="01ABC"), INV, "supersedes"),
    Bad("superseding a missing record", R(text="x", supersedes=[MISSING]), NF, "supersede"),
    Bad(
        "superseding a closed record",
        lambda m, s: m.remember("x", supersedes=[s.closed]),
        CO,
        "superseded",
    ),
    # remember: vectors
    Bad("an empty vector", R(text="x", embedding=[]), INV, "embedding"),
    Bad("NaN in a vector", R(text="x", embedding=[1, math.nan, 0]), INV, "embedding"),
    Bad("a vector of another length", R(text="x", embedding=[1, 0]), INV, "embedding"),
    Bad("the zero vector", R(text="x", embedding=[0, 0, 0]), INV, "embedding"),
    Bad("text as a vector", R(text="x", embedding="abc"), INV, "embedding"),
    Bad("a matrix as a vector", R(text="x", embedding=[[1, 0, 0]]), INV, "embedding"),
    Bad("booleans as a vector", R(text="x", embedding=[True, False, True]), INV, "embedding"),
    Bad("a vector beyond float32", R(text="x", embedding=[1e39, 1, 1]), INV, "embedding"),
    Bad("an int beyond float64", R(text="x", embedding=[10**400, 1, 1]), INV, "embedding"),
    Bad("empty actor", R(text="x", actor=""), INV, "actor"),
    Bad("NUL in actor", R(text="x", actor="ops\x00"), INV, "actor"),
    # remember_many
    Bad("no items", lambda m, s: m.remember_many(None), INV, "items"),
    Bad("one text as items", lambda m, s: m.remember_many("lamp"), INV, "items"),
    Bad("one mapping as items", lambda m, s: m.remember_many({"text": "x"}), INV, "items"),
    Bad("numbers as items", lambda m, s: m.remember_many([1, 2]), INV, "items"),
    Bad("an unknown item field", lambda m, s: m.remember_many([{"txt": "x"}]), INV, "txt"),
    Bad(
        "a bad second item",
        lambda m, s: m.remember_many(["ok", {"text": "x", "importance": 99}]),
        INV,
        "importance",
    ),
    Bad("an empty batch agent", lambda m, s: m.remember_many(["ok"], agent=""), INV, "agent"),
    # lifecycle
    Bad("supersede nothing", lambda m, s: m.supersede([], "x"), INV, "old_ids"),
    Bad("supersede a missing record", lambda m, s: m.supersede(MISSING, "x"), NF, "record"),
    Bad("supersede with empty text", lambda m, s: m.supersede(s.rid, ""), INV, "text"),
    Bad("supersede a closed record", lambda m, s: m.supersede(s.closed, "y"), CO, "superseded"),
    Bad(
        "supersede with an empty reason",
        lambda m, s: m.supersede(s.rid, "y", reason=""),
        INV,
        "reason",
    ),
    Bad("close with an empty reason", lambda m, s: m.close_record(s.rid, ""), INV, "reason"),
    Bad(
        "close with a naive end",
        lambda m, s: m.close_record(s.rid, "r", valid_until=NAIVE),
        INV,
        "valid_until",
    ),
    Bad("close a missing record", lambda m, s: m.close_record(MISSING, "r"), NF, "record"),
    Bad("close a closed record", lambda m, s: m.close_record(s.closed, "r"), CO, "record"),
    Bad("verify a missing record", lambda m, s: m.verify(MISSING), NF, "record"),
    Bad("verify with a number as id", lambda m, s: m.verify(7), INV, "record_id"),
    Bad("an unknown signal", lambda m, s: m.feedback(s.rid, "great"), INV, "signal"),
    Bad("a signal above 1", lambda m, s: m.feedback(s.rid, 2), INV, "signal"),
    Bad("a NaN signal", lambda m, s: m.feedback(s.rid, math.nan), INV, "signal"),
    Bad("a boolean signal", lambda m, s: m.feedback(s.rid, True), INV, "signal"),
    Bad("NUL in a feedback reason", lambda m, s: m.feedback(s.rid, 1, "r\x00"), INV, "reason"),
    Bad("forget with an empty reason", lambda m, s: m.forget(s.rid, ""), INV, "reason"),
    Bad(
        "forget a cited record", lambda m, s: m.forget(s.rid, "r"), DependentsExistError, "depend"
    ),
    Bad("forget a missing record", lambda m, s: m.forget(MISSING, "r"), NF, "record"),
    # reads
    Bad("an empty query", lambda m, s: m.recall(""), INV, "query"),
    Bad("no query", lambda m, s: m.recall(None), INV, "query"),
    Bad("NUL in a query", lambda m, s: m.recall("lamp\x00"), INV, "query"),
    Bad("a surrogate in a query", lambda m, s: m.peek("\ud800"), INV, "query"),
    Bad("k = 0", lambda m, s: m.recall("lamp", k=0), INV, "k"),
    Bad("k < 0", lambda m, s: m.recall("lamp", k=-1), INV, "k"),
    Bad("fractional k", lambda m, s: m.recall("lamp", k=1.5), INV, "k"),
    Bad("boolean k", lambda m, s: m.peek("lamp", k=True), INV, "k"),
    Bad("naive as_of", lambda m, s: m.recall("lamp", as_of=NAIVE), INV, "as_of"),
    Bad(
        "a touching read in the future",
        lambda m, s: m.recall("lamp", as_of=m.clock.now() + timedelta(days=1)),
        INV,
        "as_of",
    ),
    Bad("naive valid_at", lambda m, s: m.peek("lamp", valid_at=NAIVE), INV, "valid_at"),
    Bad("agent and agents", lambda m, s: m.recall("lamp", agent="a", agents=["b"]), INV, "agents"),
    Bad("one string as agents", lambda m, s: m.recall("lamp", agents="ada"), INV, "agents"),
    Bad("an empty agent name", lambda m, s: m.recall("lamp", agents=[""]), INV, "agents"),
    Bad("one string as kinds", lambda m, s: m.recall("lamp", kinds="fact"), INV, "kinds"),
    Bad("an unknown kind", lambda m, s: m.recall("lamp", kinds=["dream"]), INV, "kinds"),
    Bad("an unknown preset", lambda m, s: m.recall("lamp", preset="best"), CF, "preset"),
    Bad(
        "a query vector of another length",
        lambda m, s: m.recall("lamp", query_embedding=[1, 0]),
        INV,
        "query_embedding",
    ),
    Bad(
        "NaN in a query vector",
        lambda m, s: m.peek("lamp", query_embedding=[math.nan, 0, 0]),
        INV,
        "query_embedding",
    ),
    Bad("touch as text", lambda m, s: m.recall("lamp", touch="yes"), INV, "touch"),
    Bad("explain as a number", lambda m, s: m.peek("lamp", explain=1), INV, "explain"),
    Bad("a missing crisis", lambda m, s: m.recall("lamp", crisis=MISSING), NF, "event"),
    Bad("an empty crisis", lambda m, s: m.recall("lamp", crisis=""), INV, "crisis"),
    Bad("an empty asker", lambda m, s: m.peek("lamp", asker=""), INV, "asker"),
    Bad(
        "options and keywords",
        lambda m, s: m.recall("lamp", k=3, options=ReadOptions(k=2)),
        INV,
        "options",
    ),
    Bad("options of another type", lambda m, s: m.recall("lamp", options={"k": 2}), INV, "options"),
    Bad("one string as queries", lambda m, s: m.recall_many("lamp"), INV, "queries"),
    Bad("no queries", lambda m, s: m.recall_many(None), INV, "queries"),
    Bad(
        "one vector for two queries",
        lambda m, s: m.recall_many(["a", "b"], query_embeddings=[[1, 0, 0]]),
        INV,
        "query_embeddings",
    ),
    Bad("context of nothing", lambda m, s: m.context(), INV, "query"),
    Bad(
        "a zero token budget", lambda m, s: m.context("lamp", budget_tokens=0), INV, "budget_tokens"
    ),
    Bad("purge as text", lambda m, s: m.forget(s.rid, "r", purge="no"), INV, "purge"),
    Bad("a number as old ids", lambda m, s: m.supersede(5, "x"), INV, "old_ids"),
    Bad("importance beyond any float", R(text="x", importance=10**400), INV, "importance"),
    Bad("an instant beyond UTC's range", R(text="x", occurred_at=datetime(
        1, 1, 1, tzinfo=timezone(timedelta(hours=5)))), INV, "occurred_at"),
    Bad("metadata nested beyond reason", R(text="x", metadata=_deep(5000)), INV, "metadata"),
    Bad("a number as a metadata key", R(text="x", metadata={1: "one"}), INV, "metadata"),
    Bad("a batch whose progress is text",
        lambda m, s: m.remember_many(["x"], progress="yes"), INV, "progress"),
    Bad("audit of a number", lambda m, s: m.audit(5), INV, "record_id"),
    Bad("a query that is a number", lambda m, s: m.context(5), INV, "query"),
    Bad("a token counter that is not a function",
        lambda m, s: m.context("lamp", count_tokens="len"), INV, "count_tokens"),
    Bad("a model that is not one", lambda m, s: m.reflect("ada", llm="gpt"), CF, "llm"),
    # the causal graph
    Bad("an empty event", lambda m, s: m.add_event(""), INV, "text"),
    Bad("an unknown event kind", lambda m, s: m.add_event("war", kind="war"), INV, "kind"),
    Bad(
        "a naive event time", lambda m, s: m.add_event("war", occurred_at=NAIVE), INV, "occurred_at"
    ),
    Bad("an empty scope", lambda m, s: m.add_event("war", scope=""), INV, "scope"),
    Bad(
        "event metadata as a list", lambda m, s: m.add_event("war", metadata=[1]), INV, "metadata"
    ),
    Bad("a self-link", lambda m, s: m.link(s.cause, s.cause), INV, "effect"),
    Bad("a zero weight", lambda m, s: m.link(s.cause, s.effect, 0), INV, "weight"),
    Bad("a weight above 1", lambda m, s: m.link(s.cause, s.effect, 1.5), INV, "weight"),
    Bad("a NaN weight", lambda m, s: m.link(s.cause, s.effect, math.nan), INV, "weight"),
    Bad(
        "an unknown provenance",
        lambda m, s: m.link(s.cause, s.effect, 0.5, "guess"),
        INV,
        "provenance",
    ),
    Bad("a link to a missing event", lambda m, s: m.link(s.cause, MISSING), NF, "event"),
    Bad("a similarity as text", lambda m, s: m.link(s.cause, s.effect, 0.5, similarity="high"),
        INV, "similarity"),
    Bad("unlinking numbers", lambda m, s: m.unlink(5, 6), INV, "cause"),
    Bad("a window as text", lambda m, s: m.auto_link(s.effect, window="30d"), INV, "window"),
    Bad("a NaN threshold", lambda m, s: m.auto_link(s.effect, threshold=math.nan), INV,
        "threshold"),
    Bad("ancestors within 0 links", lambda m, s: m.ancestors(s.effect, 0), INV, "max_depth"),
    Bad("ancestors of a missing event", lambda m, s: m.ancestors(MISSING), NF, "event"),
    Bad(
        "a negative window",
        lambda m, s: m.auto_link(s.effect, window=timedelta(days=-1)),
        INV,
        "window",
    ),
    Bad(
        "a zero weight scale",
        lambda m, s: m.auto_link(s.effect, weight_scale=0), INV, "weight_scale",
    ),
    # core blocks, browsing, review and the access log
    Bad("an empty block label", lambda m, s: m.core_append("ada", "", "x"), INV, "label"),
    Bad("an empty core text", lambda m, s: m.core_append("ada", "persona", ""), INV, "text"),
    Bad("a zero block limit", lambda m, s: m.core_append("ada", "persona", "x", limit=0), INV,
        "limit"),
    Bad("replacing in a missing block", lambda m, s: m.core_replace("ada", "nope", "a", "b"), NF,
        "nope"),
    Bad("an empty text to replace", lambda m, s: m.core_replace("ada", "persona", "", "b"), INV,
        "old"),
    Bad("core blocks of no agent", lambda m, s: m.core_blocks(""), INV, "agent"),
    Bad("browsing zero records", lambda m, s: m.records(limit=0), INV, "limit"),
    Bad("browsing from a negative offset", lambda m, s: m.records(offset=-1), INV, "offset"),
    Bad("browsing since a naive instant", lambda m, s: m.records(since=NAIVE), INV, "since"),
    Bad("browsing an unknown kind", lambda m, s: m.records(kinds=["dream"]), INV, "kind"),
    Bad("browsing history as text", lambda m, s: m.records(include_history="no"), INV,
        "include_history"),
    Bad("reviewing as of a naive instant", lambda m, s: m.review(as_of=NAIVE), INV, "as_of"),
    Bad("reviewing with a config that is not one", lambda m, s: m.review(config="strict"), CF,
        "config"),
    Bad("an unknown proposal status", lambda m, s: m.proposals("maybe"), INV, "status"),
    Bad("approving a missing proposal", lambda m, s: m.approve(MISSING), NF, "proposal"),
    Bad("approving no proposal", lambda m, s: m.approve(""), INV, "proposal_id"),
    Bad("rejecting without a reason", lambda m, s: m.reject(MISSING, ""), INV, "reason"),
    Bad("the access log on as text", lambda m, s: m.set_access_log("on"), INV, "on"),
    Bad("zero accesses", lambda m, s: m.accesses(limit=0), INV, "limit"),
    Bad("accesses beyond any store", lambda m, s: m.accesses(limit=2**64), INV, "limit"),
    Bad("browsing beyond any store", lambda m, s: m.records(offset=2**64), INV, "offset"),
    Bad("embedding records in batches of 0", lambda m, s: m.embed_records(batch=0), INV, "batch"),
    Bad("embedding passages in batches of 0", lambda m, s: m.embed_passages(batch=0), INV,
        "batch"),
    Bad("embedding with progress as text", lambda m, s: m.embed_records(progress="yes"), INV,
        "progress"),
    # archives
    Bad("importing a missing file",
        lambda m, s: m.import_(s.directory / "nope.jsonl"), INV, "path"),
    Bad(
        "an archive version as text",
        _import("v", header={"format": "chronomem", "version": "3"}),
        INV,
        "version",
    ),
    Bad("an archive of another format", _import("f", header={"format": "other"}), INV, "f.jsonl"),
    Bad("NUL in an imported text", _import("nul", _record_line(text="a\x00b")), INV, "text"),
    Bad("a surrogate in an imported text", _import("s", _record_line(text="\ud800")), INV, "text"),
    Bad(
        "a naive imported instant",
        _import("n", _record_line(recorded_at="2024-01-01T00:00")),
        INV,
        "recorded_at",
    ),
    Bad(
        "dangling imported evidence",
        _import("e", _record_line(evidence=[MISSING])), INV, "evidence",
    ),
    Bad("an imported id twice", _import("d", _record_line(), _record_line()), INV, "id"),
    Bad(
        "an imported id that exists",
        lambda m, s: m.import_(_archive(s, "x", [_record_line(id=s.rid)])),
        CO,
        "already exist",
    ),
    Bad("an unknown line type", _import("t", {"type": "memo"}), INV, "type"),
    Bad("an archive dimension as text", _import("h", header={
        "format": "chronomem", "version": 3, "embedding_dim": "384"}), INV, "embedding_dim"),
    Bad("importing from no path", lambda m, s: m.import_(None), INV, "path"),
    Bad("exporting to no path", lambda m, s: m.export(None), INV, "path"),
    Bad("a persona folder that is a number",
        lambda m, s: m.import_generative_agents(7), INV, "persona_dir"),
    Bad("migrating one string of spaces",
        lambda m, s: _nothing_created(s.directory / "copy.db", lambda: migrate(
            s.location, s.directory / "copy.db", spaces="default")), INV,
        "spaces"),
    Bad(
        "exporting into a missing directory",
        lambda m, s: m.export(s.directory / "no" / "x.jsonl"),
        INV,
        "x.jsonl",
    ),
    Bad("exporting onto a directory", lambda m, s: m.export(s.directory), INV, "directory"),
    # opening
    Bad(
        "an empty space",
        lambda m, s: Memory.open(s.location, embedder=None, space=""), INV, "space",
    ),
    Bad(
        "an unknown preset at open",
        lambda m, s: Memory.open(s.location, embedder=None, preset="best"),
        CF,
        "preset",
    ),
    Bad(
        "a MySQL URL", lambda m, s: Memory.open("mysql://db/memory", embedder=None), CF, "scheme"
    ),
    Bad("an embedder that is not one", lambda m, s: Memory.open(s.location, embedder=object()),
        CF, "embedder"),
    Bad("an embedder by another name", lambda m, s: Memory.open(s.location, embedder="none"),
        CF, "embedder"),
    Bad("a write gate that is not one",
        lambda m, s: Memory.open(s.location, embedder=None, write_gate=0.9), CF, "write_gate"),
    Bad("an importance scorer that is not one",
        lambda m, s: Memory.open(s.location, embedder=None, importance="llm"), CF, "importance"),
    Bad("passages as text", lambda m, s: Memory.open(s.location, embedder=None, passages="no"),
        CF, "passages"),
    Bad("a number as the location", lambda m, s: Memory.open(42, embedder=None), CF,
        "location"),
    Bad("no location", lambda m, s: Memory.open(None, embedder=None), CF, "location"),
    Bad(
        "a missing store for a reader",
        lambda m, s: Memory.open(s.directory / "typo.db", embedder=None, create=False),
        StoreError,
        "no chronomem store",
    ),
]
# fmt: on


@pytest.mark.parametrize("case", API, ids=[c.name for c in API])
def test_bad_api_input_is_a_typed_error_naming_the_field_and_changes_nothing(
    seeded: tuple[Memory, Seed], case: Bad
) -> None:
    mem, seed = seeded
    before = row_counts(store_of(mem))
    with pytest.raises(ChronomemError) as err:
        case.call(mem, seed)
    assert isinstance(err.value, case.error), repr(err.value)
    assert case.field in str(err.value), str(err.value)
    if isinstance(err.value, InvalidInputError) and case.error is InvalidInputError:
        assert err.value.field is not None, str(err.value)
    assert row_counts(store_of(mem)) == before


C = Callable[[Seed], list[str]]
# fmt: off
CLI: list[tuple[str, C, int, str]] = [
    ("remember empty", lambda s: ["remember", ""], 1, "text"),
    ("remember NUL", lambda s: ["remember", "a\x00b"], 1, "text"),
    ("remember importance 42", lambda s: ["remember", "x", "--importance", "42"], 1, "importance"),
    (
        "remember importance nan",
        lambda s: ["remember", "x", "--importance", "nan"],
        1,
        "importance",
    ),
    (
        "remember importance word",
        lambda s: ["remember", "x", "--importance", "high"],
        2,
        "--importance",
    ),
    ("remember unknown kind", lambda s: ["remember", "x", "--kind", "dream"], 2, "--kind"),
    (
        "remember naive time",
        lambda s: ["remember", "x", "--occurred-at", "2024-01-01T00:00"],
        2,
        "--occurred-at",
    ),
    (
        "remember missing evidence",
        lambda s: ["remember", "x", "--evidence", MISSING],
        1,
        "evidence",
    ),
    (
        "remember superseding nothing",
        lambda s: ["remember", "x", "--supersedes", MISSING],
        1,
        "supersede",
    ),
    ("remember empty agent", lambda s: ["remember", "x", "--agent", ""], 1, "agent"),
    ("remember empty tag", lambda s: ["remember", "x", "--tag", ""], 1, "tags"),
    ("recall empty", lambda s: ["recall", ""], 1, "query"),
    ("recall k 0", lambda s: ["recall", "lamp", "-k", "0"], 1, "k"),
    (
        "recall future touch",
        lambda s: ["recall", "lamp", "--as-of", "2999-01-01T00:00:00Z"],
        1,
        "as_of",
    ),
    ("recall missing crisis", lambda s: ["recall", "lamp", "--crisis", MISSING], 1, "event"),
    ("recall unknown preset", lambda s: ["recall", "lamp", "--preset", "best"], 2, "--preset"),
    ("supersede missing", lambda s: ["supersede", MISSING, "y"], 1, "record"),
    ("supersede no text", lambda s: ["supersede", s.rid], 2, "text"),
    ("remember metadata list", lambda s: ["remember", "x", "--metadata", "[1]"], 2, "--metadata"),
    ("remember missing event", lambda s: ["remember", "x", "--event", MISSING], 1, "event"),
    ("close empty reason", lambda s: ["close", s.rid, "--reason", ""], 1, "reason"),
    ("feedback word", lambda s: ["feedback", s.rid, "great"], 2, "signal"),
    ("feedback 5", lambda s: ["feedback", s.rid, "5"], 1, "signal"),
    ("forget cited", lambda s: ["forget", s.rid, "--reason", "r"], 1, "depend"),
    ("link self", lambda s: ["link", s.cause, s.cause], 1, "effect"),
    ("link weight 0", lambda s: ["link", s.cause, s.effect, "--weight", "0"], 1, "weight"),
    ("event empty", lambda s: ["event", ""], 1, "text"),
    ("ancestors missing", lambda s: ["ancestors", MISSING], 1, "event"),
    ("ancestors depth 0", lambda s: ["ancestors", s.effect, "--max-depth", "0"], 1, "max_depth"),
    ("context of nothing", lambda s: ["context"], 1, "query"),
    (
        "context budget 0",
        lambda s: ["context", "lamp", "--budget-tokens", "0"],
        1,
        "budget_tokens",
    ),
    ("export into nowhere", lambda s: ["export", str(s.directory / "no" / "x.jsonl")], 1,
     "x.jsonl"),
    ("import missing", lambda s: ["import", str(s.directory / "nope.jsonl")], 1, "path"),
    ("reflect without a model", lambda s: ["reflect", "--agent", "ada"], 1, "--llm-url"),
]
# fmt: on


@pytest.mark.parametrize(("name", "argv", "code", "field"), CLI, ids=[c[0] for c in CLI])
def test_bad_cli_input_exits_with_one_line_naming_the_field_and_changes_nothing(
    seeded: tuple[Memory, Seed],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    argv: C,
    code: int,
    field: str,
) -> None:
    mem, seed = seeded
    for variable in ("CHRONOMEM_LLM_URL", "CHRONOMEM_LLM_MODEL", "CHRONOMEM_DB"):
        monkeypatch.delenv(variable, raising=False)
    before = row_counts(store_of(mem))
    args = [*argv(seed), "--db", str(seed.location), "--no-embedder"]
    if code == 2:
        with pytest.raises(SystemExit) as exit_:
            main(args)
        assert exit_.value.code == 2
        err = capsys.readouterr().err
        assert "usage:" in err
    else:
        assert main(args) == code
        err = capsys.readouterr().err
        assert err.startswith("chronomem: error: ")
        assert err.count("\n") == 1
    assert field in err, err
    assert "Traceback" not in err
    assert row_counts(store_of(mem)) == before


def test_the_catalogue_is_large(figures: dict[str, Any]) -> None:
    assert len(API) + len(CLI) >= 80
    figures["bad inputs in the catalogue (API + CLI), each on both stores"] = (
        f"{len(API)} + {len(CLI)}"
    )
