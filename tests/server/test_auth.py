"""Who may do what (DESIGN §7): every route × {no key, read, write, admin, a key of another
space} gives the expected status — 401 without a valid key, 404 for another space's key (nothing
of this space leaks), 403 below the route's scope — and keys are stored hashed, revocable, and
recorded as the actor."""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from chronomem import AccessDeniedError
from chronomem.client import Client
from chronomem.model.keys import Scope
from chronomem.server.keys import create_key, revoke_key
from chronomem.stores import open_store

from .service import running

NOW = datetime(2025, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Case:
    method: str
    path: str  # under /v1/spaces/{space}; {record}, {event}, {other} are made per call
    needed: Scope
    body: Any = None
    allowed: int = 200  # the status when the scope allows it (400: this server lacks an LLM or
    # an embedder, a ConfigError the caller only sees once authorised)


CASES = [
    Case("POST", "/records", Scope.WRITE, {"text": "a new note", "embedding": [1, 0]}),
    Case("POST", "/records/batch", Scope.WRITE, {"items": [{"text": "x", "embedding": [0, 1]}]}),
    Case("POST", "/messages", Scope.WRITE, {"messages": [{"role": "system", "content": "x"}]}),
    Case("GET", "/records", Scope.READ),
    Case("GET", "/records/{record}", Scope.READ),
    Case("GET", "/records/{record}/history", Scope.READ),
    Case("GET", "/records/{record}/audit", Scope.READ),
    Case("GET", "/records/{record}/dependants", Scope.READ),
    Case("POST", "/records/get-many", Scope.READ, {"record_ids": ["{record}"]}),
    Case("POST", "/records/{record}/supersede", Scope.WRITE, {"text": "v2", "embedding": [1, 1]}),
    Case("POST", "/records/{record}/close", Scope.WRITE, {"reason": "done"}),
    Case("POST", "/records/{record}/verify", Scope.WRITE, {}),
    Case("POST", "/records/{record}/feedback", Scope.WRITE, {"signal": "harmful"}),
    Case("POST", "/records/{record}/forget", Scope.WRITE, {"reason": "noise"}),
    Case("POST", "/records/{record}/forget", Scope.ADMIN, {"reason": "pii", "purge": True}),
    Case("POST", "/records/close-where", Scope.WRITE, {"filter": {"kind": "plan"}, "reason": "x"}),
    Case("POST", "/records/verify-where", Scope.WRITE, {"filter": {"agent": "default"}}),
    Case("POST", "/expire", Scope.WRITE, {}),
    Case(
        "POST",
        "/records/forget-where",
        Scope.WRITE,
        {"filter": {"kind": "plan"}, "reason": "noise", "dry_run": True},
    ),
    Case(
        "POST",
        "/records/forget-where",
        Scope.ADMIN,
        {"filter": {"kind": "plan"}, "reason": "pii", "purge": True},
    ),
    Case("GET", "/audit", Scope.READ),
    Case("POST", "/recall", Scope.WRITE, {"query": "note", "query_embedding": [1, 0]}),
    Case("POST", "/recall", Scope.READ, {"query": "note", "touch": False}),
    Case("POST", "/peek", Scope.READ, {"query": "note"}),
    Case("POST", "/recall-many", Scope.WRITE, {"queries": ["note"]}),
    Case("POST", "/recall-many", Scope.READ, {"queries": ["note"], "touch": False}),
    Case("POST", "/context", Scope.WRITE, {"query": "note"}),
    Case("POST", "/context", Scope.READ, {"query": "note", "touch": False}),
    Case("GET", "/agents", Scope.READ),
    Case("GET", "/agents/default/importance", Scope.READ),
    Case("GET", "/agents/default/core", Scope.READ),
    Case("POST", "/agents/default/core/persona/append", Scope.WRITE, {"text": "I am careful."}),
    Case("POST", "/agents/default/core/task/replace", Scope.WRITE, {"old": "ship", "new": "test"}),
    Case("GET", "/stats", Scope.READ),
    Case("POST", "/events", Scope.WRITE, {"text": "a storm", "embedding": [0, 1]}),
    Case("GET", "/events", Scope.READ),
    Case("GET", "/events/{event}", Scope.READ),
    Case("GET", "/events/{event}/ancestors", Scope.READ),
    Case("POST", "/events/{event}/auto-link", Scope.WRITE, {}),
    Case("GET", "/links", Scope.READ),
    Case("POST", "/links", Scope.WRITE, {"cause": "{other}", "effect": "{event}"}),
    Case("DELETE", "/links/{other}/{event}", Scope.WRITE),
    Case("POST", "/reflections", Scope.WRITE, {"agent": "default"}, allowed=400),
    Case("POST", "/reflections/if-due", Scope.WRITE, {"agent": "default"}),
    Case("POST", "/extractions", Scope.WRITE, {"agent": "default"}, allowed=400),
    Case("POST", "/embed-passages", Scope.ADMIN, allowed=400),
    Case("POST", "/embed-records", Scope.ADMIN, allowed=400),
    Case("POST", "/calibrate", Scope.ADMIN, allowed=400),
    Case("POST", "/scrub", Scope.ADMIN),
    Case("GET", "/review", Scope.WRITE),
    Case("GET", "/review/proposals", Scope.READ),
    Case("POST", "/review/{proposal}/approve", Scope.WRITE),
    Case("POST", "/review/{proposal}/reject", Scope.WRITE, {"reason": "still true"}),
    Case("PUT", "/access-log", Scope.ADMIN, {"on": True}),
    Case("GET", "/accesses", Scope.READ),
    Case("GET", "/export", Scope.ADMIN),
    Case("POST", "/import", Scope.ADMIN),
    Case("GET", "/clock", Scope.READ),
    Case("PUT", "/clock", Scope.ADMIN, {"now": "2025-06-01T00:00:00+00:00"}),
    Case("POST", "/clock/advance", Scope.ADMIN, {"by": 60}),
    Case("GET", "/changes", Scope.READ),
    Case("GET", "/changes/stream", Scope.READ),
    Case("POST", "/webhooks", Scope.ADMIN, {"url": "http://127.0.0.1:9/hook"}, allowed=201),
    Case("GET", "/webhooks", Scope.ADMIN),
    Case("GET", "/webhooks/{webhook}", Scope.ADMIN),
    Case("GET", "/webhooks/{webhook}/failures", Scope.ADMIN),
    Case("DELETE", "/webhooks/{webhook}", Scope.ADMIN, allowed=204),
]
ROLES = ("none", "read", "write", "admin", "other")


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """A server on a store with keys for space "a" (one per scope) and a write key of "b"."""
    db = tmp_path / "keys.db"
    store = open_store(db)
    tokens = {
        scope.value: create_key(store, space="a", scope=scope, label=None, now=NOW)[1]
        for scope in Scope
    }
    tokens["other"] = create_key(store, space="b", scope="admin", label=None, now=NOW)[1]
    store.close()
    with running(db, embedder=None) as (url, _):
        admin = Client(url, key=tokens["admin"], space="a")
        admin.set_clock(NOW)
        admin.close()
        yield url, tokens


def _expected(case: Case, role: str) -> int:
    if role == "none":
        return 401
    if role == "other":
        return 404
    return case.allowed if Scope(role).allows(case.needed) else 403


def _prepare(url: str, token: str) -> dict[str, str]:
    """A fresh record and two fresh events of space "a", made with an admin key."""
    with Client(url, key=token, space="a") as admin:
        record = admin.remember("a note", embedding=[1, 0]).id
        assert record is not None
        admin.core_append("default", "task", "ship the release")
        admin.feedback(record, "harmful", "misled")  # a pushed-down record: a proposal to close
        proposal = next(p.id for p in admin.review() if p.record_ids == (record,))
        other = admin.add_event("drought", embedding=[1, 0]).id
        event = admin.add_event("harvest failed", embedding=[1, 0.1]).id
        webhook = admin.add_webhook("http://127.0.0.1:9/hook").id
    return {
        "record": record, "event": event, "other": other, "proposal": proposal,
        "webhook": webhook,
    }  # fmt: skip


def _fill(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, str):
        return value.format(**names)
    if isinstance(value, dict):
        return {k: _fill(v, names) for k, v in value.items()}
    return value


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c.method} {c.path} {c.needed.value}")
def test_every_route_answers_each_role_as_its_scope_says(
    service: tuple[str, dict[str, str]], case: Case
) -> None:
    url, tokens = service
    for role in ROLES:
        names = _prepare(url, tokens["admin"])
        headers = {} if role == "none" else {"Authorization": f"Bearer {tokens[role]}"}
        request: dict[str, Any] = {"headers": headers}
        if case.path == "/import":
            request["content"] = _archive(url, tokens["admin"])
        elif case.body is not None:
            request["json"] = _fill(case.body, names)
        elif case.method in {"POST", "PUT"}:
            request["json"] = {}
        path = f"{url}/v1/spaces/a{_fill(case.path, names)}"
        with httpx.stream(case.method, path, timeout=30, **request) as response:
            if response.status_code >= 400 or not case.path.endswith("/stream"):
                response.read()  # an allowed stream never ends: its status is enough
        expected = _expected(case, role)
        assert response.status_code == expected, (role, response.text)
        if expected >= 400:
            assert response.headers["content-type"] == "application/problem+json"
            problem = response.json()
            assert set(problem) >= {"type", "title", "status", "detail", "error", "field"}
            if role == "other":  # nothing of space "a" in the answer
                assert all(v not in response.text for v in names.values())
                assert "a note" not in response.text


def _archive(url: str, token: str) -> bytes:
    """An archive of another space, to import into "a"."""
    response = httpx.get(
        f"{url}/v1/spaces/b/export", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )
    assert response.status_code == 404  # the admin key of "a" does not see "b" either
    header = b'{"format":"chronomem","version":3,"space":"x","embedding_model":null,'
    return header + b'"embedding_dim":null}\n'


def test_the_matrix_covers_every_route(service: tuple[str, dict[str, str]]) -> None:
    url, _ = service
    paths = httpx.get(f"{url}/openapi.json", timeout=30).json()["paths"]
    served = {
        (method.upper(), path.removeprefix("/v1/spaces/{space}"))
        for path, methods in paths.items()
        if path.startswith("/v1/spaces/")
        for method in methods
    }
    covered = {(c.method, _template(c.path)) for c in CASES}
    assert served == covered


def _template(path: str) -> str:
    return (
        path.replace("{record}", "{record_id}")
        .replace("/events/{event}/ancestors", "/events/{event_id}/{direction}")
        .replace("/events/{event}", "/events/{event_id}")
        .replace("/links/{other}/{event}", "/links/{cause}/{effect}")
        .replace("/agents/default/", "/agents/{agent}/")
        .replace("/core/persona/", "/core/{label}/")
        .replace("/core/task/", "/core/{label}/")
        .replace("/review/{proposal}/", "/review/{proposal_id}/")
        .replace("/webhooks/{webhook}", "/webhooks/{webhook_id}")
    )


def test_keys_are_stored_hashed_revocable_and_named_in_the_audit(tmp_path: Path) -> None:
    db = tmp_path / "keys.db"
    store = open_store(db)
    key, token = create_key(store, space="a", scope="write", label="agent ada", now=NOW)
    store.close()
    secret = token.split("_", 2)[2]
    raw = sqlite3.connect(db).execute("SELECT digest FROM api_keys").fetchall()
    assert raw == [(hashlib.sha256(secret.encode()).digest(),)]
    assert secret.encode() not in db.read_bytes()
    with running(db, embedder=None) as (url, handles), Client(url, key=token, space="a") as mem:
        first = mem.remember("the cafe opens at 8", kind="fact", embedding=[1, 0]).id
        assert first is not None
        mem.close_record(first, "closed for winter", actor="someone-else")
        assert [e.actor for e in mem.audit()] == [f"key:{key.id}"]
        wrong = token[:-4] + ("AAAA" if not token.endswith("AAAA") else "BBBB")
        with Client(url, key=wrong, space="a") as forged, pytest.raises(AccessDeniedError):
            forged.agents()
        revoke_key(handles.admin, key.id, now=NOW)
        with pytest.raises(AccessDeniedError) as refused:
            mem.agents()
        assert refused.value.status == 401


def test_a_server_without_keys_is_open_only_on_loopback(tmp_path: Path) -> None:
    db = tmp_path / "open.db"
    with running(db, embedder=None) as (url, handles), Client(url, space="s") as mem:
        assert mem.remember("hello", embedding=[1.0]).stored
        assert [e.actor for e in mem.audit()] == []
        create_key(handles.admin, space="s", scope="read", label=None, now=NOW)
        mem_after: Callable[[], list[str]] = mem.agents
        refused = None
        for _ in range(50):  # the gate re-checks "no keys yet" at most once a second
            try:
                mem_after()
            except AccessDeniedError as exc:
                refused = exc
                break
            import time

            time.sleep(0.05)
        assert refused is not None
        assert refused.status == 401
    with (
        running(db, embedder=None, loopback=False) as (url, _),
        Client(url, space="s") as mem,
        pytest.raises(AccessDeniedError),
    ):
        mem.agents()
