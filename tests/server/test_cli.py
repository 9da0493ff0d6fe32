"""The CLI and the service: every verb through ``--server`` (in a real subprocess, as a user runs
it), keys managed on the store, and ``serve`` refusing to expose a store without keys."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from chronomem.cli.main import main

from .service import running


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "chronomem.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_every_verb_runs_through_the_service(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    with running(db, embedder=None) as (url, handles):
        on = ("--server", url, "--space", "town")
        remembered = _cli("remember", "the lighthouse lamp is broken", "--agent", "keeper",
                          "--kind", "fact", "--importance", "7", "--json", *on)  # fmt: skip
        assert remembered.returncode == 0, remembered.stderr
        rid = json.loads(remembered.stdout)["id"]
        assert handles.memory("town").get(rid).text == "the lighthouse lamp is broken"
        found = _cli("recall", "lighthouse lamp", "--explain", *on)
        assert found.returncode == 0, found.stderr
        assert rid in found.stdout
        assert "bm25" in found.stdout
        replaced = _cli("supersede", rid, "--text", "the lamp was repaired", *on)
        assert replaced.returncode == 0, replaced.stderr
        chain = _cli("history", rid, "--json", *on)
        assert [r["status"] for r in json.loads(chain.stdout)] == ["superseded", "open"]
        stats = _cli("stats", "--json", *on)
        assert json.loads(stats.stdout)["records"] == 2
        archive = tmp_path / "town.jsonl"
        exported = _cli("export", str(archive), *on)
        assert exported.returncode == 0, exported.stderr
        assert archive.read_text().count('"type": "record"') == 2
        missing = _cli("show", "01ABCDEFGHJKMNPQRSTVWXYZ00", *on)
        assert missing.returncode == 1
        assert "no record" in missing.stderr
        assert "Traceback" not in missing.stderr
        ga = _cli("import", str(tmp_path), "--format", "generative-agents", *on)
        assert ga.returncode == 1
        assert "--db" in ga.stderr


def test_the_service_url_and_key_come_from_the_environment(tmp_path: Path) -> None:
    db = tmp_path / "keyed.db"
    created = _cli("keys", "create", "--scope", "write", "--space", "town", "--db", str(db))
    assert created.returncode == 0, created.stderr
    token = created.stdout.strip()
    assert token.startswith("cmk_")
    listed = _cli("keys", "list", "--json", "--db", str(db))
    keys = json.loads(listed.stdout)
    assert [(k["scope"], k["space"], k["revoked_at"]) for k in keys] == [("write", "town", None)]
    assert token.split("_", 2)[2] not in listed.stdout  # never the secret
    with running(db, embedder=None) as (url, _):
        env = {"CHRONOMEM_URL": url, "CHRONOMEM_SPACE": "town"}
        refused = _cli("remember", "no key", env=env)
        assert refused.returncode == 1
        assert "API key" in refused.stderr
        ok = _cli("remember", "with a key", env={**env, "CHRONOMEM_KEY": token})
        assert ok.returncode == 0, ok.stderr
        audit = _cli("audit", "--json", env={**env, "CHRONOMEM_KEY": token})
        assert audit.returncode == 0
        revoked = _cli("keys", "revoke", keys[0]["id"], "--db", str(db))
        assert revoked.returncode == 0, revoked.stderr
        after = _cli("remember", "after revoking", env={**env, "CHRONOMEM_KEY": token})
        assert after.returncode == 1
        assert "revoked" in after.stderr


def test_serve_refuses_a_public_address_without_keys(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["serve", "--db", str(tmp_path / "x.db"), "--host", "0.0.0.0", "--no-embedder"])
    assert code == 1
    assert "without API keys" in capsys.readouterr().err


def test_bodies_limits_and_problems(tmp_path: Path) -> None:
    with running(tmp_path / "limits.db", embedder=None, max_body_bytes=1000) as (url, _):
        big = httpx.post(f"{url}/v1/spaces/s/records", json={"text": "x" * 2000}, timeout=30)
        assert big.status_code == 413
        assert big.json()["error"] == "PayloadTooLarge"
        chunks = (b"x" * 600 for _ in range(3))  # no declared length: counted as it streams
        streamed = httpx.post(f"{url}/v1/spaces/s/import", content=chunks, timeout=30)
        assert streamed.status_code == 413
        naive = httpx.post(
            f"{url}/v1/spaces/s/peek", json={"query": "x", "as_of": "2024-01-01T09:00:00"}
        )
        assert naive.status_code == 422
        assert naive.json()["field"] == "as_of"
        assert httpx.get(f"{url}/nowhere").json()["error"] == "NotFound"
        assert httpx.delete(f"{url}/v1/spaces/s/records").status_code == 405
        assert httpx.get(f"{url}/v1/health").json()["status"] == "ok"
        docs = httpx.get(f"{url}/docs")  # the vendored Swagger UI: nothing from a CDN
        assert docs.status_code == 200
        assert "/static/swagger-ui/swagger-ui-bundle.js" in docs.text
        assert "https://" not in docs.text
        bundle = httpx.get(f"{url}/static/swagger-ui/swagger-ui-bundle.js")
        assert bundle.status_code == 200
        assert len(bundle.content) > 1_000_000
        extra = httpx.post(f"{url}/v1/spaces/s/records", json={"text": "x", "colour": "red"})
        assert extra.status_code == 422
        assert extra.json()["field"] == "colour"


def test_a_store_built_for_another_embedder_is_a_clear_conflict(tmp_path: Path) -> None:
    from chronomem import Memory

    from ..conftest import FixedEmbedder

    db = tmp_path / "caller-vectors.db"
    with Memory.open(db, embedder=None, space="s") as mem:
        mem.remember("x", embedding=[1.0, 0.0])
    with running(db, embedder=FixedEmbedder(dim=2)) as (url, _):
        answer = httpx.post(f"{url}/v1/spaces/s/peek", json={"query": "x"}, timeout=30)
    assert answer.status_code == 409
    assert answer.json()["error"] == "EmbedderMismatchError"
    assert "caller-supplied vectors" in answer.json()["detail"]


def test_browsing_runs_through_the_service(tmp_path: Path) -> None:
    with running(tmp_path / "browse.db", embedder=None) as (url, _):
        on = ("--server", url, "--space", "town", "--json")
        first = json.loads(_cli("remember", "bread costs 2", "--kind", "fact", *on).stdout)["id"]
        second = json.loads(_cli("supersede", first, "bread costs 3", *on).stdout)["id"]
        assert json.loads(_cli("event", "a riot", "--kind", "crisis", *on).stdout)["id"]
        listed = _cli("list", "--state", "superseded", *on)
        assert listed.returncode == 0, listed.stderr
        assert [r["id"] for r in json.loads(listed.stdout)] == [first]
        assert [r["id"] for r in json.loads(_cli("list", *on).stdout)] == [second]
        events = _cli("events", "--kind", "crisis", *on)
        assert [e["text"] for e in json.loads(events.stdout)] == ["a riot"]
        refused = _cli("list", "--now", "2024-01-01T00:00:00Z", *on)
        assert refused.returncode == 1
        assert "space's clock applies" in refused.stderr
