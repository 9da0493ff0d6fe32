"""Replicas over one PostgreSQL (issue 31; docs/storage.md, "Replicas over one PostgreSQL"):
three real ``chronomem serve`` processes on one database, as behind a load balancer, checked
through real HTTP.

- a write acknowledged by one replica is returned by another's very next read (recall, peek,
  get, records), including supersede, close and forget, in a loop that rotates the roles;
- touches never move an access time backwards: touching reads of the same records at instants
  that jump back and forth, from every replica at once, leave each record's ``last_accessed_at``
  at the latest touch, as the store and every replica's scoring arrays see it;
- a key revoked by another process (the CLI) is refused by every replica on its next request;
- concurrent writes from every replica to one space: every acknowledged write present once,
  the same counts and stats from every replica;
- a calibration made through one replica is used by the others' next write (their handles
  were opened before it).

The replicas run the repository's own ``src`` (PYTHONPATH computed from this file), so the test
checks the checkout it lives in, not whatever the console script would import.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, ExitStack
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import numpy.typing as npt
import pytest
from pydantic import TypeAdapter

from chronomem.server.keys import create_key
from chronomem.stores import open_store

from ..conftest import T0
from ..scripted_http import Answer, scripted_server
from ..server.service import serving_process
from ..waiting import within

SRC = Path(__file__).resolve().parents[2] / "src"
CHRONOMEM = Path(sys.executable).parent / "chronomem"
REPLICAS = 3
DIM = 32
MODEL = "scripted-trigrams"
_DURATION = TypeAdapter(timedelta)  # an age as the service writes it (ISO 8601)


def _env(**extra: str) -> dict[str, str]:
    """The replicas' environment: this checkout's ``src`` first on the path."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def _replicas(url: str, n: int, *flags: str, env: dict[str, str]) -> ExitStack:
    """``n`` ``serve`` processes on ``url``, started at once (each takes seconds to import);
    the stack's ``urls`` are their roots."""
    stack = ExitStack()
    managers: list[AbstractContextManager[str]] = [
        serving_process(url, *flags, env=env) for _ in range(n)
    ]
    with ThreadPoolExecutor(n) as pool:
        started = list(pool.map(lambda m: _enter(m), managers))
    for manager, ok in zip(managers, started, strict=True):
        if ok is not None:
            stack.push(manager.__exit__)
    failed = [s for s in started if s is None or isinstance(s, BaseException)]
    stack.urls = [s for s in started if isinstance(s, str)]  # type: ignore[attr-defined]
    if failed:
        stack.close()
        raise RuntimeError(f"a replica did not start: {failed}")
    return stack


def _enter(manager: AbstractContextManager[str]) -> str | BaseException:
    try:
        return manager.__enter__()
    except BaseException as exc:  # reported by the caller, with the others stopped
        return exc


def _random(seed: str) -> npt.NDArray[np.float64]:
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(seed.encode()).digest()[:8], "big"))
    return rng.normal(size=DIM)


def _vector(seed: str) -> list[float]:
    """A unit vector of its own for each text: the vectors the tests send (two are far apart)."""
    v = _random(seed)
    return (v / np.linalg.norm(v)).tolist()  # type: ignore[no-any-return]


def _embeddings(body: dict[str, Any]) -> Answer:
    """The replicas' model: an OpenAI-compatible endpoint that sums a random vector per
    character trigram, so texts in like words have like vectors in every script (enough for
    ``calibrate`` to measure thresholds); cheap, unlike loading a real model three times."""
    rows = []
    for i, text in enumerate(body["input"]):
        padded = f" {text.lower()} "
        v = sum(_random(padded[j : j + 3]) for j in range(len(padded) - 2))
        rows.append({"index": i, "embedding": (v / np.linalg.norm(v)).tolist()})
    return 200, {"Content-Type": "application/json"}, json.dumps({"data": rows})


def _word(rng: random.Random) -> str:
    """A word no other record holds, so a read for it names one record."""
    return "".join(rng.choice("bcdfghjklmnpqrstvwz") for _ in range(10))


def _iso(at: datetime) -> str:
    return at.isoformat()


def _instant(text: str) -> datetime:
    return datetime.fromisoformat(text)


@dataclass
class Served:
    """The database and its replicas, with a client per replica (an admin key on every space)."""

    url: str
    roots: list[str]
    token: str
    clients: list[httpx.Client]


@pytest.fixture(scope="module")
def served(postgres_admin: str) -> Iterator[Served]:
    from chronomem.stores.postgres import scratch_database

    with (
        scripted_server(_embeddings) as (model_url, _),
        scratch_database(postgres_admin, prefix="chronomem_replicas") as url,
    ):
        store = open_store(url)  # creates the schema before the replicas race to
        try:
            _, token = create_key(store, space=None, scope="admin", label="replicas", now=T0)
        finally:
            store.close()
        env = _env(CHRONOMEM_EMBED_URL=model_url, CHRONOMEM_EMBED_MODEL=MODEL)
        with _replicas(url, REPLICAS, env=env) as stack:
            roots: list[str] = stack.urls  # type: ignore[attr-defined]
            headers = {"Authorization": f"Bearer {token}"}
            clients = [httpx.Client(base_url=r, headers=headers, timeout=30) for r in roots]
            try:
                yield Served(url, roots, token, clients)
            finally:
                for client in clients:
                    client.close()


def _ok(answer: httpx.Response) -> Any:
    assert answer.status_code == 200, f"{answer.request.url}: {answer.status_code} {answer.text}"
    return answer.json()


def _remember(http: httpx.Client, space: str, text: str, **fields: Any) -> str:
    written = _ok(http.post(f"/v1/spaces/{space}/records", json={"text": text, **fields}))
    assert written["stored"], written
    return str(written["id"])


def _ids(hits: list[dict[str, Any]]) -> list[str]:
    return [h["record"]["id"] for h in hits]


def _read(http: httpx.Client, space: str, verb: str, word: str, **options: Any) -> list[str]:
    """The ids a read for ``word`` returns: ``recall`` (touching), ``peek``, or ``records``
    (the listing, open records only)."""
    if verb == "records":
        listed = _ok(http.get(f"/v1/spaces/{space}/records", params={"limit": 1000}))
        return [r["id"] for r in listed if word in r["text"]]
    body = {"query": word, "agent": "ada", "k": 5, "query_embedding": _vector(word), **options}
    return _ids(_ok(http.post(f"/v1/spaces/{space}/{verb}", json=body)))


def test_a_write_on_one_replica_is_in_the_next_read_of_every_other(served: Served) -> None:
    """Each step writes through one replica (the roles rotate) and reads through the others at
    once, with every read verb in turn: nothing is waited for between the acknowledgement and
    the read."""
    space, rng = "read-your-write", random.Random(31)
    verbs = ("peek", "recall", "records")
    open_ids: dict[str, str] = {}  # word -> its open record
    plain: list[str] = []  # words whose record was never superseded (forget may delete it)
    steps = 0
    for step in range(36):
        writer = served.clients[step % REPLICAS]
        others = [c for i, c in enumerate(served.clients) if i != step % REPLICAS]
        verb = verbs[step % len(verbs)]
        action = "remember" if len(open_ids) < 4 else rng.choice(
            ("remember", "supersede", "close", "forget")
        )  # fmt: skip
        if action == "forget" and not plain:
            action = "remember"
        if action == "remember":
            word = _word(rng)
            rid = _remember(writer, space, f"the {word} ledger", agent="ada",
                            embedding=_vector(word))  # fmt: skip
            for other in others:
                assert rid in _read(other, space, verb, word), (step, verb, "new record unseen")
                assert _ok(other.get(f"/v1/spaces/{space}/records/{rid}"))["status"] == "open"
            open_ids[word] = rid
            plain.append(word)
        elif action == "supersede":
            word = rng.choice(sorted(open_ids))
            old = open_ids[word]
            new = _ok(writer.post(
                f"/v1/spaces/{space}/records/{old}/supersede",
                json={"text": f"the {word} ledger, corrected", "embedding": _vector(word)},
            ))["id"]  # fmt: skip
            for other in others:
                seen = _read(other, space, verb, word)
                assert new in seen, (step, verb, seen, new)
                assert old not in seen, (step, verb, "superseded competes", seen, old)
                history = _read(other, space, "peek", word, include_history=True)
                assert {old, new} <= set(history), (step, "history lost on another replica")
                got = _ok(other.get(f"/v1/spaces/{space}/records/{old}"))
                assert (got["status"], got["superseded_by"]) == ("superseded", new)
            open_ids[word] = new
            if word in plain:
                plain.remove(word)
        elif action == "close":
            word = rng.choice(sorted(open_ids))
            rid = open_ids.pop(word)
            _ok(writer.post(f"/v1/spaces/{space}/records/{rid}/close", json={"reason": "done"}))
            for other in others:
                assert rid not in _read(other, space, verb, word), (step, verb, "closed competes")
                assert _ok(other.get(f"/v1/spaces/{space}/records/{rid}"))["status"] == "closed"
            if word in plain:
                plain.remove(word)
        else:
            word = plain.pop(rng.randrange(len(plain)))
            rid = open_ids.pop(word)
            purge = rng.random() < 0.5
            _ok(writer.post(f"/v1/spaces/{space}/records/{rid}/forget",
                            json={"reason": "asked to", "purge": purge}))  # fmt: skip
            for other in others:
                assert rid not in _read(other, space, verb, word), (step, verb, "forgotten seen")
                assert rid not in _read(other, space, "peek", word, include_history=True)
                assert other.get(f"/v1/spaces/{space}/records/{rid}").status_code == 404
        steps += 1
    assert steps == 36
    # The loop really exercised every lifecycle change.
    audit = _ok(served.clients[0].get(f"/v1/spaces/{space}/audit"))
    actions = {entry["action"] for entry in audit}
    assert {"supersede", "close"} <= actions, actions
    assert actions & {"forget", "purge"}, actions


def test_touches_never_move_an_access_time_back(served: Served) -> None:
    """Touching reads of the same records at instants that jump back and forth, sequentially
    across replicas and then from every replica at once (two threads each): every observation
    of a record's access time, by any reader from any replica, is never earlier than one seen
    before it, and in the end every replica reports — in the record and in its own scoring
    arrays (the breakdown's age) — the latest instant it was touched at."""
    space = "touches"
    a, b, c = served.clients
    _ok(a.put(f"/v1/spaces/{space}/clock", json={"now": _iso(T0)}))
    words = [f"token{chr(97 + i)}" for i in range(6)]
    ids = {w: _remember(a, space, f"the {w} ledger", agent="ada", embedding=_vector(w))
           for w in words}  # fmt: skip
    end = T0 + timedelta(days=10)
    _ok(a.put(f"/v1/spaces/{space}/clock", json={"now": _iso(end)}))

    def touch(http: httpx.Client, word: str, at: datetime) -> None:
        body = {"query": word, "agent": "ada", "k": 1, "as_of": _iso(at),
                "query_embedding": _vector(word)}  # fmt: skip
        assert _ids(_ok(http.post(f"/v1/spaces/{space}/recall", json=body))) == [ids[word]]

    def accessed(http: httpx.Client, word: str) -> datetime:
        record = _ok(http.get(f"/v1/spaces/{space}/records/{ids[word]}"))
        return _instant(record["last_accessed_at"])

    # In turn: a later touch on A, then an earlier one on B, then earlier still on C.
    first = words[0]
    touch(a, first, T0 + timedelta(days=5))
    touch(b, first, T0 + timedelta(days=2))
    touch(c, first, T0 + timedelta(days=1))
    for http in served.clients:
        assert accessed(http, first) == T0 + timedelta(days=5)
    latest = {w: T0 for w in words}
    latest[first] = T0 + timedelta(days=5)

    rng = random.Random(7)
    plans = []
    for _ in range(2 * REPLICAS):
        plan = [(rng.choice(words), T0 + timedelta(minutes=rng.randrange(1, 14_000)))
                for _ in range(15)]  # fmt: skip
        plans.append(plan)
        for word, at in plan:
            latest[word] = max(latest[word], at)
    backwards: list[tuple[str, datetime, datetime]] = []

    def run(n: int) -> None:
        headers = {"Authorization": f"Bearer {served.token}"}
        mine = [httpx.Client(base_url=r, headers=headers, timeout=30) for r in served.roots]
        seen: dict[str, datetime] = {}
        try:
            for i, (word, at) in enumerate(plans[n]):
                touch(mine[n % REPLICAS], word, at)
                observed = accessed(mine[(n + i + 1) % REPLICAS], word)  # another replica
                if observed < seen.get(word, observed) or observed < at:
                    backwards.append((word, observed, max(seen.get(word, at), at)))
                seen[word] = max(observed, seen.get(word, observed))
        finally:
            for http in mine:
                http.close()

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(plans))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert backwards == [], backwards

    for http in served.clients:
        for word in words:
            assert accessed(http, word) == latest[word], (http.base_url, word)
        # Each replica's own arrays: recency is measured from the latest touch.
        body = {"query": " ".join(words), "agent": "ada", "k": 10, "explain": True,
                "as_of": _iso(end)}  # fmt: skip
        hits = _ok(http.post(f"/v1/spaces/{space}/peek", json=body))
        ages = {h["record"]["id"]: h["breakdown"]["age"] for h in hits}
        assert set(ages) == set(ids.values())
        for word, rid in ids.items():
            age = _DURATION.validate_python(ages[rid])
            assert age == end - latest[word], (http.base_url, word, age)


def _keys(db: str, *args: str) -> str:
    """``chronomem keys …`` in a process of its own (this checkout's code)."""
    done = subprocess.run([str(CHRONOMEM), "keys", *args, "--db", db], env=_env(),
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_revoked_key_is_refused_by_every_replica_on_its_next_request(served: Served) -> None:
    """A write key used through every replica (so any cache of it would be warm), revoked by
    ``chronomem keys revoke`` in another process while a client keeps sending it to a replica:
    every request that began after the revocation returned is refused with 401 on every
    replica, and the admin key still works."""
    space = "revocation"
    token = _keys(served.url, "create", "--space", space, "--scope", "write", "--label", "agent")
    key_id = token.split("_")[1]
    auth = {"Authorization": f"Bearer {token}"}
    for root in served.roots:
        with httpx.Client(base_url=root, headers=auth, timeout=30) as http:
            _remember(http, space, f"written through {root}")

    revoked_at: list[float] = []
    answers: list[tuple[float, int]] = []  # (when the request began, its status)
    stop = threading.Event()

    def hammer() -> None:
        with httpx.Client(base_url=served.roots[1], headers=auth, timeout=30) as http:
            while not stop.is_set():
                began = time.monotonic()
                status = http.post(f"/v1/spaces/{space}/peek", json={"query": "written"})
                answers.append((began, status.status_code))

    thread = threading.Thread(target=hammer)
    thread.start()
    try:
        assert within(30, lambda: any(s == 200 for _, s in answers)), answers
        _keys(served.url, "revoke", key_id)
        revoked_at.append(time.monotonic())
        for root in served.roots:  # the very next request, on every replica
            with httpx.Client(base_url=root, headers=auth, timeout=30) as http:
                answer = http.post(f"/v1/spaces/{space}/records", json={"text": "after"})
                assert answer.status_code == 401, (root, answer.status_code, answer.text)
                assert answer.json()["error"] == "Unauthorized"
        within(30, lambda: any(began > revoked_at[0] for began, _ in answers))
    finally:
        stop.set()
        thread.join(timeout=30)
    before = [s for began, s in answers if began < revoked_at[0]]
    after = [s for began, s in answers if began > revoked_at[0]]
    assert 200 in before  # the key worked until the revocation
    assert set(before) <= {200, 401}, sorted(set(before))
    assert after, "no request began after the revocation"
    assert set(after) == {401}, sorted(set(after))
    for http in served.clients:  # the refused writes wrote nothing
        assert "after" not in {r["text"] for r in _ok(http.get(f"/v1/spaces/{space}/records"))}
    listed = json.loads(_keys(served.url, "list", "--json"))
    assert any(k["id"] == key_id and k["revoked_at"] for k in listed), listed


def test_concurrent_writes_through_every_replica_lose_nothing(served: Served) -> None:
    """Two threads per replica write to one space at once (single records and batches, some
    read back at once through another replica): every acknowledged write is present exactly
    once, and every replica gives the same counts, listing, reads and stats."""
    space = "concurrent"
    for http in served.clients:  # every replica's arrays loaded before the race
        _ok(http.post(f"/v1/spaces/{space}/peek", json={"query": "ledger"}))
    acked: list[str] = []
    lock = threading.Lock()
    failures: list[str] = []

    def write(n: int) -> None:
        headers = {"Authorization": f"Bearer {served.token}"}
        root, other = served.roots[n % REPLICAS], served.roots[(n + 1) % REPLICAS]
        with (
            httpx.Client(base_url=root, headers=headers, timeout=30) as http,
            httpx.Client(base_url=other, headers=headers, timeout=30) as reader,
        ):
            rng = random.Random(n)
            for i in range(12):
                words = [_word(rng) for _ in range(3 if i % 4 == 3 else 1)]
                items = [{"text": f"ledger {w}", "embedding": _vector(w)} for w in words]
                if len(items) > 1:
                    answer = http.post(f"/v1/spaces/{space}/records/batch",
                                       json={"items": items, "agent": "ada"})  # fmt: skip
                    got = [r["id"] for r in _ok(answer) if r["stored"]]
                else:
                    got = [_remember(http, space, agent="ada", **items[0])]
                with lock:
                    acked.extend(got)
                for w, rid in zip(words, got, strict=True):  # each the nearest to its vector
                    body = {"query": w, "agent": "ada", "k": 3, "query_embedding": _vector(w)}
                    seen = _ids(reader.post(f"/v1/spaces/{space}/peek", json=body).json())
                    if rid not in seen:
                        failures.append(f"{w}: {rid} not read back through {other}: {seen}")

    threads = [threading.Thread(target=write, args=(n,)) for n in range(2 * REPLICAS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert failures == []
    assert len(acked) == 2 * REPLICAS * (9 + 3 * 3)
    assert len(set(acked)) == len(acked)

    stats, listings, reads = [], [], []
    for http in served.clients:
        listed: list[str] = []
        while True:
            page = _ok(http.get(f"/v1/spaces/{space}/records",
                                params={"limit": 100, "offset": len(listed)}))  # fmt: skip
            listed += [r["id"] for r in page]
            if len(page) < 100:
                break
        listings.append(listed)
        body = {"query": "ledger", "agent": "ada", "k": 1000}
        reads.append(_ids(_ok(http.post(f"/v1/spaces/{space}/peek", json=body))))
        stats.append(_ok(http.get(f"/v1/spaces/{space}/stats")))
    for listed, read in zip(listings, reads, strict=True):
        assert len(listed) == len(set(listed)) == len(acked)
        assert set(listed) == set(acked)
        assert sorted(read) == sorted(acked)
    assert listings[0] == listings[1] == listings[2]  # newest first, the same order
    assert reads[0] == reads[1] == reads[2]  # the same ranking
    assert stats[0]["records"] == len(acked)
    for each in stats:  # the tables' size on disk moves with autovacuum, not with the data
        each.pop("bytes_on_disk")
    assert stats[0] == stats[1] == stats[2]


def _feed(http: httpx.Client, space: str, after: int = 0) -> list[dict[str, Any]]:
    """The space's whole change feed after ``after``, read by pages through one replica."""
    out: list[dict[str, Any]] = []
    while True:
        page = _ok(http.get(f"/v1/spaces/{space}/changes",
                            params={"after": after, "limit": 50}))  # fmt: skip
        out += page
        if len(page) < 50:
            return out
        after = page[-1]["seq"]


def test_the_change_feed_is_the_same_from_every_replica(served: Served) -> None:
    """Two threads per replica write one space at once (records, supersessions, closings)
    while a follower long-polls replica B by position: it meets every seq once, in order, with
    no gap. Afterwards each replica reads the same feed, entry for entry — from the start and
    resumed from a position another replica handed out — and every acknowledged write is in it
    exactly once."""
    space = "feed"
    acked: list[str] = []
    lock = threading.Lock()
    done = threading.Event()
    followed: list[int] = []

    def follow() -> None:
        with httpx.Client(base_url=served.roots[1], timeout=30,
                          headers={"Authorization": f"Bearer {served.token}"}) as http:  # fmt: skip
            position, quiet = 0, 0
            while quiet < 2:
                page = _ok(http.get(f"/v1/spaces/{space}/changes",
                                    params={"after": position, "wait": 1}))  # fmt: skip
                followed.extend(c["seq"] for c in page)
                position = page[-1]["seq"] if page else position
                quiet = quiet + 1 if done.is_set() and not page else 0

    def write(n: int) -> None:
        headers = {"Authorization": f"Bearer {served.token}"}
        with httpx.Client(base_url=served.roots[n % REPLICAS], headers=headers, timeout=30) as http:
            rng = random.Random(f"feed {n}")
            for i in range(8):
                word = _word(rng)
                rid = _remember(http, space, f"entry {word}", agent="ada", embedding=_vector(word))
                got = [rid]
                if i % 4 == 1:
                    body = {"text": f"entry {word} revised", "embedding": _vector(word + "'")}
                    got.append(_ok(http.post(f"/v1/spaces/{space}/records/{rid}/supersede",
                                             json=body))["id"])  # fmt: skip
                elif i % 4 == 2:
                    _ok(http.post(f"/v1/spaces/{space}/records/{rid}/close",
                                  json={"reason": "done"}))  # fmt: skip
                with lock:
                    acked.extend(got)

    follower = threading.Thread(target=follow)
    follower.start()
    writers = [threading.Thread(target=write, args=(n,)) for n in range(2 * REPLICAS)]
    for thread in writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=120)
    done.set()
    follower.join(timeout=60)
    assert not follower.is_alive()
    feeds = [_feed(http, space) for http in served.clients]
    assert feeds[0] == feeds[1] == feeds[2]
    feed = feeds[0]
    assert [c["seq"] for c in feed] == list(range(1, len(feed) + 1))
    assert followed == [c["seq"] for c in feed]  # in order, once each, while the writes ran
    writes = [c["record_id"] for c in feed if c["kind"] == "write"]
    assert sorted(writes) == sorted(acked)
    kinds = {c["kind"] for c in feed}
    assert kinds == {"write", "supersede", "close"}
    cursor = feeds[0][len(feed) // 2]["seq"]  # a position replica A handed out
    tails = [_feed(http, space, cursor) for http in served.clients]
    assert tails[0] == tails[1] == tails[2] == feed[cursor:]


def test_a_calibration_through_one_replica_is_used_by_the_others(served: Served) -> None:
    """Every replica has the space's handle open; ``calibrate`` through A measures the model's
    write-gate threshold (~0.93 here; 0.97 for an uncalibrated model) and importance
    constants. B's next write of a near-duplicate between the two thresholds is refused as one,
    C's stats say calibrated, and a record without an importance gets the same importance
    through every replica. Before the fix the other replicas kept the thresholds they read when
    their handles opened, until they restarted.

    Last in the module: the calibration is store-wide (every space's gate moves)."""
    space = "calibrated"
    a, b, c = served.clients
    for http in served.clients:  # every replica's handle opened before the calibration
        before = _ok(http.get(f"/v1/spaces/{space}/stats"))["thresholds"]
        assert before["calibrated"] is False, before
    base = np.asarray(_vector("the harbour"))
    # The gate weighs facts and instructions (WriteGate.kinds).
    first = _remember(a, space, "the harbour", agent="ada", kind="fact", embedding=base.tolist())
    measured = _ok(a.post(f"/v1/spaces/{space}/calibrate"))
    assert measured["gate"] < before["gate"] - 0.01, (measured, before)

    cosine = (measured["gate"] + before["gate"]) / 2  # a duplicate only once calibrated
    side = np.asarray(_vector("elsewhere"))
    side -= side.dot(base) * base
    near = cosine * base + np.sqrt(1 - cosine**2) * side / np.linalg.norm(side)
    written = _ok(b.post(f"/v1/spaces/{space}/records",
                         json={"text": "the harbor", "agent": "ada", "kind": "fact",
                               "embedding": near.tolist()}))  # fmt: skip
    assert (written["stored"], written["duplicate_of"]) == (False, first), written
    after = _ok(c.get(f"/v1/spaces/{space}/stats"))["thresholds"]
    assert (after["calibrated"], after["gate"]) == (True, measured["gate"]), after

    text = "the lighthouse keeper married the baker today"
    importances = set()
    for n, http in enumerate(served.clients):
        rid = _remember(http, space, text, agent=f"holder{n}")
        importances.add(_ok(http.get(f"/v1/spaces/{space}/records/{rid}"))["importance"])
    assert len(importances) == 1, importances
