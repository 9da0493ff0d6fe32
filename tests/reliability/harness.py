"""What the reliability tests share: starting workers, reading what they acknowledged, checking
that a store kept every promise (acknowledged effects present, internal invariants, SQLite's
own integrity check) and counting every table's rows."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from chronomem import Memory, NotFoundError, Record, SimClock
from chronomem.stores.base import MemoryStore

from ..conftest import T0, store_of

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).resolve().parent / "worker.py"
#: Every table of a chronomem store (ann_vectors only exists with pgvector).
TABLES = (
    "records", "postings", "tombstones", "audit_log", "events", "links", "agents", "spaces",
    "store_meta", "schema_version", "changes", "webhooks", "webhook_failures",
)  # fmt: skip


def start_worker(location: str | Path, *args: str) -> subprocess.Popen[str]:
    """The worker script (``worker.py``) on ``location``, its stdout a pipe of lines."""
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(location), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT / "src")},
    )


@dataclass
class Acknowledged:
    """What a worker's store promised: every ACK line, parsed."""

    remembered: list[str] = field(default_factory=list)
    superseded: list[tuple[str, str]] = field(default_factory=list)
    touched: list[tuple[datetime, list[str]]] = field(default_factory=list)
    rated: Counter[str] = field(default_factory=Counter)
    purged: set[str] = field(default_factory=set)
    purging: set[str] = field(default_factory=set)  # asked for: may be gone unacknowledged
    seen: list[tuple[str, datetime]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    done: bool = False

    @property
    def writes(self) -> int:
        return (
            len(self.remembered) + len(self.superseded) + len(self.touched)
            + sum(self.rated.values()) + len(self.purged)
        )  # fmt: skip

    def read(self, output: str) -> Acknowledged:
        """Add the complete lines of ``output`` (a line cut by a kill is not acknowledged)."""
        lines = output.split("\n")
        for line in lines[:-1] if not output.endswith("\n") else lines:
            kind, _, rest = line.partition(" ")
            words = rest.split()
            if kind == "ACK":
                op, args = words[0], words[1:]
                if op == "remember":
                    self.remembered.append(args[0])
                elif op == "supersede":
                    self.superseded.append((args[0], args[1]))
                elif op == "touch":
                    self.touched.append((datetime.fromisoformat(args[0]), args[1:]))
                elif op == "feedback":
                    self.rated[args[0]] += 1
                elif op == "purge":
                    self.purged.add(args[0])
            elif kind == "TRY" and words[0] == "purge":
                self.purging.add(words[1])
            elif kind == "SEEN":
                self.seen.append((words[0], datetime.fromisoformat(words[1])))
            elif kind == "ERR":
                self.errors.append(rest)
            elif kind == "DONE":
                self.done = True
        return self


def lost_writes(mem: Memory, acked: Acknowledged) -> list[str]:
    """Every acknowledged effect that the store does not show (empty: nothing was lost)."""
    lost: list[str] = []
    purged = acked.purged | acked.purging  # a purge asked for may have committed unacknowledged

    def get(rid: str) -> Record | None:
        try:
            return mem.get(rid)
        except NotFoundError:
            return None

    for rid in acked.remembered:
        if rid not in purged and get(rid) is None:
            lost.append(f"remembered {rid} is missing")
    for rid in acked.purged:
        if get(rid) is not None:
            lost.append(f"purged {rid} is still there")
    for old, new in acked.superseded:
        if new not in purged and get(new) is None:
            lost.append(f"successor {new} of {old} is missing")
        record = get(old) if old not in purged else None
        if record is not None and record.superseded_by != new:
            lost.append(f"{old} is not superseded by {new}")
    for at, ids in acked.touched:
        for rid in ids:
            record = get(rid) if rid not in purged else None
            if record is not None and record.last_accessed_at < at:
                lost.append(f"touch of {rid} at {at} is lost")
    for rid, count in acked.rated.items():
        record = get(rid) if rid not in purged else None
        if record is not None and record.feedback_score < count:
            lost.append(f"{count} rating(s) of {rid}: score {record.feedback_score}")
    return lost


def row_counts(store: MemoryStore) -> dict[str, int]:
    """Rows of every table, and the sum of the spaces' change sequences (a write that was
    rolled back leaves all of them as they were)."""
    query = store._query  # type: ignore[attr-defined]
    counts = {t: int(query(f"SELECT COUNT(*) FROM {t}")[0][0]) for t in TABLES}
    counts["change_seq"] = int(query("SELECT COALESCE(SUM(change_seq), 0) FROM spaces")[0][0])
    counts["feed_seq"] = int(query("SELECT COALESCE(SUM(feed_seq), 0) FROM spaces")[0][0])
    return counts


_INVARIANTS = {
    "the change feed has a row for every seq": "SELECT COUNT(*) FROM spaces s WHERE s.feed_seq"
    " != (SELECT COUNT(*) FROM changes c WHERE c.space = s.space) OR s.feed_seq !="
    " (SELECT COALESCE(MAX(c.seq), 0) FROM changes c WHERE c.space = s.space)",
    "space totals match the records": "SELECT COUNT(*) FROM spaces s WHERE s.docs !="
    " (SELECT COUNT(*) FROM records r WHERE r.space = s.space) OR s.doc_len_sum !="
    " (SELECT COALESCE(SUM(r.doc_len), 0) FROM records r WHERE r.space = s.space)",
    "postings of missing records": "SELECT COUNT(*) FROM postings p"
    " WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.pk = p.pk)",
    "records without postings": "SELECT COUNT(*) FROM records r WHERE r.doc_len > 0"
    " AND NOT EXISTS (SELECT 1 FROM postings p WHERE p.pk = r.pk)",
    "postings that disagree with their record": "SELECT COUNT(*) FROM postings p"
    " JOIN records r ON r.pk = p.pk WHERE p.dl != r.doc_len OR p.agent != r.agent"
    " OR p.space != r.space",
    "term frequencies that do not sum to the length": "SELECT COUNT(*) FROM"
    " (SELECT pk, SUM(tf) AS n FROM postings GROUP BY pk) t JOIN records r ON r.pk = t.pk"
    " WHERE t.n != r.doc_len",
    "changes beyond the space's sequence": "SELECT COUNT(*) FROM records r"
    " JOIN spaces s ON s.space = r.space WHERE r.change_seq > s.change_seq",
    "tombstones beyond the space's sequence": "SELECT COUNT(*) FROM tombstones t"
    " JOIN spaces s ON s.space = t.space WHERE t.change_seq > s.change_seq",
    "deleted records that are back": "SELECT COUNT(*) FROM tombstones t"
    " JOIN records r ON r.id = t.record_id",
    "records of unknown agents": "SELECT COUNT(*) FROM records r WHERE NOT EXISTS"
    " (SELECT 1 FROM agents a WHERE a.space = r.space AND a.agent = r.agent)",
    "superseded records still open": "SELECT COUNT(*) FROM records"
    " WHERE superseded_by IS NOT NULL AND status = 'open'",
}


def violations(mem: Memory) -> list[str]:
    """What is wrong with the store: SQLite's integrity and foreign-key checks, chronomem's
    own invariants, and whether every record still loads and scores."""
    store = store_of(mem)
    query = store._query  # type: ignore[attr-defined]
    found: list[str] = []
    if type(store).__name__ == "SQLiteStore":
        check = [r[0] for r in query("PRAGMA integrity_check")]
        if check != ["ok"]:
            found.append(f"integrity_check: {check[:5]}")
        if query("PRAGMA foreign_key_check"):
            found.append("foreign_key_check failed")
    for name, sql in _INVARIANTS.items():
        count = int(query(sql)[0][0])
        if count:
            found.append(f"{name}: {count}")
    mem.peek("town", k=5, query_embedding=[1.0] * 8 if mem.dim == 8 else None)
    return found


def reopen(location: str | Path) -> Memory:
    """The store as a new process sees it (never created here)."""
    return Memory.open(location, embedder=None, clock=SimClock(T0), create=False)
