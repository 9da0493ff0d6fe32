"""Nothing acknowledged is lost when other tools touch the store (docs/reliability.md, "Other
tools on the same file"; issue 26).

1. ``chronomem serve`` on a SQLite file takes writes over HTTP in two spaces (and through MCP)
   from a live client, while other processes work on the same file at random moments: CLI
   commands the docs suggest (``audit``, ``keys create``, ``list``, ``stats``), the ``sqlite3``
   shell (a query and ``.backup``), and Python's online backup API. Then the service stops and
   every write it acknowledged is counted on disk, and each backup is a sound database.
2. In one process: two handles on one file (two spaces), a LangGraph store and a LangChain
   retriever on one path, writing while other processes open, read and close the file.

Before one connection per file per process, either lost writes: closing the descriptor of a
header read dropped the process's SQLite locks, so an outside process deleted the write-ahead log
under the live connection (SQLite, "How To Corrupt An SQLite Database File", §2.2).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from chronomem import Memory
from chronomem.server.keys import create_key
from chronomem.stores import open_store

from ..conftest import T0
from ..server.service import serving_process
from .conftest import Plan

BIN = Path(sys.executable).parent


def _chronomem(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "chronomem"), *args], capture_output=True, text=True, timeout=120
    )


def _outsiders(db: Path, backups: Path, rng: random.Random) -> list[list[str]]:
    """The other processes of one round, in a random order."""
    n = rng.randrange(1_000_000)
    steps = [
        [str(BIN / "chronomem"), "audit", "--db", str(db), "--space", "town", "--no-embedder"],
        [str(BIN / "chronomem"), "keys", "create", "--db", str(db), "--space", "town",
         "--scope", "read", "--label", f"outsider {n}"],
        [str(BIN / "chronomem"), "list", "--db", str(db), "--space", "farm", "--no-embedder",
         "--limit", "5"],
        [str(BIN / "chronomem"), "stats", "--db", str(db), "--no-embedder"],
        [sys.executable, "-c",
         "import sqlite3, sys; s, d = sqlite3.connect(sys.argv[1]), sqlite3.connect(sys.argv[2]); "
         "s.backup(d); d.close(); s.close()", str(db), str(backups / f"api-{n}.db")],
    ]  # fmt: skip
    if shutil.which("sqlite3"):
        steps.append(["sqlite3", str(db), "SELECT count(*) FROM records;"])
        steps.append(["sqlite3", str(db), f".backup {backups / f'shell-{n}.db'}"])
    rng.shuffle(steps)
    return steps


def test_serve_loses_nothing_while_other_tools_use_its_file(
    tmp_path: Path, plan: Plan, figures: dict[str, Any]
) -> None:
    if os.environ.get("CI", "").lower() == "true":
        assert shutil.which("sqlite3"), "CI installs the sqlite3 shell (make system-tools)"
    db, backups = tmp_path / "served.db", tmp_path / "backups"
    backups.mkdir()
    store = open_store(db)
    _, token = create_key(store, space=None, scope="admin", label="writer", now=T0)
    store.close()
    acked: list[tuple[str, str]] = []
    failures: list[str] = []
    stop = threading.Event()
    outside = 0
    with serving_process(db, "--no-embedder") as url:

        def write() -> None:
            headers = {"Authorization": f"Bearer {token}"}
            with httpx.Client(base_url=url, headers=headers, timeout=30) as http:
                i = 0
                while not stop.is_set():
                    space = ("town", "farm")[i % 2]
                    answer = http.post(
                        f"/v1/spaces/{space}/records", json={"text": f"note {i}", "agent": "ada"}
                    )
                    if answer.status_code == 200 and answer.json()["stored"]:
                        acked.append((space, answer.json()["id"]))
                    else:
                        failures.append(f"{answer.status_code}: {answer.text[:200]}")
                    i += 1

        writer = threading.Thread(target=write)
        writer.start()
        try:
            rng = random.Random(26)
            rounds = 0
            end = time.monotonic() + plan.process_seconds
            while time.monotonic() < end or rounds < 2:
                for step in _outsiders(db, backups, rng):
                    time.sleep(rng.uniform(0.0, 0.15))
                    done = subprocess.run(step, capture_output=True, text=True, timeout=120)
                    assert done.returncode == 0, f"{step[:3]}: {done.stderr[-500:]}"
                    outside += 1
                rounds += 1
        finally:
            stop.set()
            writer.join(timeout=60)
    assert failures == [], failures[:5]
    assert len(acked) > 20
    with sqlite3.connect(db) as conn:
        on_disk = {row[0] for row in conn.execute("SELECT id FROM records")}
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    lost = [rid for _, rid in acked if rid not in on_disk]
    assert lost == [], f"{len(lost)} of {len(acked)} acknowledged writes are not on disk"
    copies = sorted(backups.iterdir())
    assert copies
    for copy in copies:
        with sqlite3.connect(copy) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok", copy.name
    figures["serve beside outside tools: acknowledged writes"] = len(acked)
    figures["serve beside outside tools: acknowledged writes lost"] = len(lost)
    figures["serve beside outside tools: outside processes run"] = outside
    figures["serve beside outside tools: backups checked"] = len(copies)


def test_handles_of_one_process_share_the_file_safely(
    tmp_path: Path, plan: Plan, figures: dict[str, Any]
) -> None:
    from chronomem.adapters.langchain import ChronomemRetriever
    from chronomem.adapters.langgraph import ChronomemStore

    db = tmp_path / "shared.db"
    written: list[tuple[str, str]] = []
    outside: list[str] = []
    reader = (
        "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); "
        "c.execute('SELECT count(*) FROM records').fetchall(); c.close()"
    )
    with (
        Memory.open(db, embedder=None, space="one") as one,
        Memory.open(db, embedder=None, space="two") as two,
        Memory.open(db, embedder=None, space="graph") as graph,
    ):
        store = ChronomemStore(graph)
        end = time.monotonic() + plan.process_seconds
        i = 0
        while time.monotonic() < end or i < 30:
            for space, mem in (("one", one), ("two", two)):
                result = mem.remember(f"{space} note {i}", agent="ada")
                assert result.id is not None
                written.append((space, result.id))
            store.put(("users", "ada"), f"k{i}", {"text": f"value {i}"})
            if i % 5 == 0:  # a handle opened and closed beside the others, as per request
                with Memory.open(db, embedder=None, space="one") as brief:
                    assert ChronomemRetriever(memory=brief, k=3).invoke("note")
            if i % 5 == 1:  # another process reads the file and closes it
                subprocess.run([sys.executable, "-c", reader, str(db)], check=True, timeout=60)
            if i % 5 == 3:  # another process writes
                done = _chronomem(
                    "remember", f"outside {i}", "--db", str(db), "--space", "outside",
                    "--no-embedder", "--json",
                )  # fmt: skip
                assert done.returncode == 0, done.stderr
                outside.append(json.loads(done.stdout)["id"])
            i += 1
    found: dict[str, set[str]] = {}
    for space in ("one", "two", "outside"):
        with Memory.open(db, embedder=None, space=space) as mem:
            found[space] = {r.id for r in mem.records(limit=100_000)}
    with Memory.open(db, embedder=None, space="graph") as graph:
        items = len(ChronomemStore(graph).search(("users",), limit=100_000))
    lost = [rid for space, rid in written if rid not in found[space]]
    lost += [rid for rid in outside if rid not in found["outside"]]
    assert lost == [], f"{len(lost)} of {len(written) + len(outside)} writes lost"
    assert items == i
    figures["handles of one process on one file: writes"] = len(written) + len(outside) + i
    figures["handles of one process on one file: writes lost"] = len(lost)
