"""Candidate pre-selection with pgvector, on a real server that has the extension (issue 7).

The same database is read through a store that pre-selects (``vector_index="auto"``) and one
that scores every record exactly (``"off"``); where pre-selection finds the true nearest, both
must return the same hits with the same scores.
"""

from __future__ import annotations

import uuid
from dataclasses import replace
from urllib.parse import urlsplit, urlunsplit

import numpy as np
import pytest

from chronomem import (
    PRESETS,
    Breakdown,
    ConfigError,
    Memory,
    PostgresStore,
    SimClock,
    StoreError,
    Weights,
)

from ..conftest import store_of

DIM = 32
N = 3000


def _vectors(rng: np.random.Generator, n: int, centres: np.ndarray) -> np.ndarray:
    x = centres[rng.integers(0, centres.shape[0], n)] + 0.35 * rng.standard_normal((n, DIM))
    x = x.astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture
def town(pgvector_url: str, clock: SimClock) -> tuple[str, np.ndarray]:
    """N records of two agents in clusters, written through a pre-selecting store; returns the
    URL and query vectors near the clusters. Importance is the same everywhere, so the best
    hits are the nearest records and pre-selecting 100 of them loses nothing."""
    rng = np.random.default_rng(7)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    vectors = _vectors(rng, N, centres)
    items = [
        {"text": f"note {i} on the ledger", "embedding": v, "importance": 5}
        for i, v in enumerate(vectors)
    ]
    store = PostgresStore(pgvector_url, vector_index="require")
    with Memory.open(store, embedder=None, clock=clock, preset="default") as mem:
        mem.remember_many(items[: N // 2], agent="ada")
        clock.advance(hours=3)
        mem.remember_many(items[N // 2 :], agent="bo")
    clock.advance(hours=1)
    return pgvector_url, _vectors(rng, 12, centres)


def _open(url: str, clock: SimClock, mode: str) -> Memory:
    # 100 candidates: few enough, for 3,000 records, that gathering them is cheaper than the
    # whole product (the engine checks).
    store = PostgresStore(
        url, vector_index=mode, preselect_min_records=1000, preselect_candidates=100
    )
    return Memory.open(store, embedder=None, clock=clock, preset="default")


def _hits(
    mem: Memory, query: np.ndarray, *, text: str = "weather", **kwargs: object
) -> list[tuple[str, float]]:
    hits = mem.peek(text, query_embedding=query, k=10, **kwargs)  # type: ignore[arg-type]
    return [(h.record.id, h.score) for h in hits]


def _same(a: list[tuple[str, float]], b: list[tuple[str, float]]) -> None:
    """Same records in the same order; scores equal up to float32 rounding (a product over a
    few gathered rows may sum in another order than the product over all of them)."""
    assert [i for i, _ in a] == [i for i, _ in b]
    assert [s for _, s in a] == pytest.approx([s for _, s in b], rel=1e-6)


def test_preselected_reads_equal_exact_reads(town: tuple[str, np.ndarray], clock: SimClock) -> None:
    url, queries = town
    with _open(url, clock, "auto") as fast, _open(url, clock, "off") as exact:
        assert fast.stats()["candidates"].startswith("pgvector pre-selects the 100 nearest")
        assert exact.stats()["candidates"].startswith("exact")
        for q in queries:
            for agents in (["ada", "bo"], ["bo"]):
                _same(_hits(fast, q, agents=agents), _hits(exact, q, agents=agents))
            # Over both agents, every one of these reads really was pre-selected.
            hits = fast.peek("weather", query_embedding=q, k=10, explain=True)
            assert all(h.breakdown and h.breakdown.preselected for h in hits)
        explained = fast.peek("weather", query_embedding=queries[0], k=10, explain=True)
        assert {h.breakdown.preselected for h in explained if h.breakdown} == {True}
        plain = exact.peek("weather", query_embedding=queries[0], k=10, explain=True)
        assert {h.breakdown.preselected for h in plain if h.breakdown} == {None}


def test_lexical_matches_keep_their_cosines_and_others_are_explained(
    town: tuple[str, np.ndarray], clock: SimClock
) -> None:
    url, _ = town
    q = np.random.default_rng(11).standard_normal(DIM).astype(np.float32)
    q /= np.linalg.norm(q)  # away from every cluster: nothing is very close
    with _open(url, clock, "auto") as fast:
        far = fast.remember(
            "weather warning for the harbour", agent="ada", importance=1, embedding=-q
        ).id
        alert = fast.remember("storm alert", agent="ada", importance=10, embedding=-q).id
    with _open(url, clock, "auto") as fast, _open(url, clock, "off") as exact:
        # A record matching a query term gets its cosine computed however far it is: the
        # hybrid score of every lexical match is exact.
        why = _explain(fast, "weather harbour warning", q, k=10)[far]
        assert why.preselected is True
        assert why.relevance_dense is not None
        assert why.relevance_dense < 0
        exact_why = _explain(exact, "weather harbour warning", q, k=10)[far]
        assert why.relevance_dense == pytest.approx(exact_why.relevance_dense, abs=1e-6)
        # A record matching no term and outside the nearest ranks by its other terms, its cosine
        # counted as 0 — here by importance, under a preset that weighs it heavily.
        heavy = replace(
            PRESETS["default"], weights=Weights(relevance=0.2, recency=0.05, importance=1.0)
        )
        hits = fast.peek("weather", query_embedding=q, k=3, preset=heavy, explain=True)
        assert hits[0].record.id == alert
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.preselected is False
        assert hits[0].breakdown.relevance_dense is None
        # Its true cosine is negative, which fixed normalisation clips to 0: the same score.
        same = exact.peek("weather", query_embedding=q, k=3, preset=heavy)
        assert (same[0].record.id, same[0].score) == (alert, hits[0].score)


def _explain(mem: Memory, text: str, q: np.ndarray, *, k: int) -> dict[str, Breakdown]:
    hits = mem.peek(text, query_embedding=q, k=k, explain=True)
    return {h.record.id: h.breakdown for h in hits if h.breakdown is not None}


def test_reads_whose_filter_hides_most_of_the_nearest_are_scored_exactly(
    pgvector_url: str, clock: SimClock
) -> None:
    """Most records near the query are observations; a read of facts only must not lose the
    facts' cosines because the index's nearest were all observations."""
    rng = np.random.default_rng(5)
    centre = rng.standard_normal(DIM).astype(np.float32)
    vectors = _vectors(rng, 3000, centre[None, :])
    items = [
        {"text": f"{'fact' if i % 30 == 0 else 'observation'} {i}", "embedding": v}
        | ({"kind": "fact", "domain": f"d{i}"} if i % 30 == 0 else {})
        for i, v in enumerate(vectors)
    ]
    with _open(pgvector_url, clock, "auto") as mem:
        mem.remember_many(items)
    q = centre / np.linalg.norm(centre)
    with _open(pgvector_url, clock, "auto") as fast, _open(pgvector_url, clock, "off") as exact:
        for kinds in (["fact"], None):
            a = fast.peek("ledger", query_embedding=q, k=5, kinds=kinds, explain=True)
            b = exact.peek("ledger", query_embedding=q, k=5, kinds=kinds)
            _same([(h.record.id, h.score) for h in a], [(h.record.id, h.score) for h in b])
            expected = None if kinds else True  # facts only: exact; everything: pre-selected
            assert {h.breakdown.preselected for h in a if h.breakdown} == {expected}


def test_small_namespaces_and_crowded_indexes_are_scored_exactly(
    town: tuple[str, np.ndarray], clock: SimClock
) -> None:
    url, queries = town
    with _open(url, clock, "auto") as fast:
        fast.remember_many(
            [{"text": f"aside {i}", "embedding": v} for i, v in enumerate(queries)], agent="cy"
        )
        # 12 records: below the threshold.
        hits = fast.peek("aside", query_embedding=queries[0], agents=["cy"], explain=True)
        assert hits
        assert all(h.breakdown and h.breakdown.preselected is None for h in hits)
        # Above the threshold but a small share of the index: the filtered scan finds too few.
        store = store_of(fast)
        assert isinstance(store, PostgresStore)
        pks = store.nearest("default", ["cy"], queries[0], namespace=5000, k=10)
        assert pks is None
        assert store.nearest("default", ["ada", "bo"], queries[0], namespace=N, k=10) is not None
        # Generative Agents presets min-max normalise over every candidate: always exact.
        ga = fast.peek("note", query_embedding=queries[0], preset="generative-agents", explain=True)
        assert all(h.breakdown and h.breakdown.preselected is None for h in ga)


def test_the_copy_follows_purge_and_is_backfilled_when_switched_on(
    pgvector_url: str, clock: SimClock
) -> None:
    rng = np.random.default_rng(3)
    vectors = _vectors(rng, 50, rng.standard_normal((4, DIM)).astype(np.float32))
    early = Memory.open(PostgresStore(pgvector_url, vector_index="off"), embedder=None, clock=clock)
    with Memory.open(
        PostgresStore(pgvector_url, vector_index="off"), embedder=None, clock=clock
    ) as mem:
        ids = [
            r.id
            for r in mem.remember_many(
                [{"text": f"n{i}", "embedding": v} for i, v in enumerate(vectors[:49])]
            )
        ]
        mem.remember("no vector here", embedding=None)
    store = PostgresStore(pgvector_url)  # auto: the server has pgvector
    with early:  # opened before the copy existed: its writes are copied all the same
        ids.append(early.remember("n49", embedding=vectors[49]).id)
    try:
        assert store.vectors.enabled
        copied = store._query(
            "SELECT r.id, a.dim, a.v::text FROM ann_vectors a JOIN records r USING (pk)"
            " ORDER BY r.pk"
        )
        assert [r[0] for r in copied] == ids
        assert {r[1] for r in copied} == {DIM}
        stored = store.get_embedding("default", ids[7])
        assert stored is not None
        copy = np.array(copied[7][2].strip("[]").split(","), dtype=np.float32)
        assert copy.tobytes() == stored.astype(np.float32).tobytes()  # the same float32s
        indexes = store._query("SELECT indexname FROM pg_indexes WHERE tablename = 'ann_vectors'")
        assert f"ann_vectors_hnsw_{DIM}" in {r[0] for r in indexes}
    finally:
        store.close()
    with Memory.open(PostgresStore(pgvector_url), embedder=None, clock=clock) as mem:
        mem.forget(ids[7], "test", purge=True)
    # A process that does not read through the copy still keeps it complete for those that do.
    with Memory.open(
        PostgresStore(pgvector_url, vector_index="off"), embedder=None, clock=clock
    ) as mem:
        mem.remember("one more", embedding=vectors[0])
        left = store_of(mem)._query("SELECT COUNT(*) FROM ann_vectors")  # type: ignore[attr-defined]
    assert left[0][0] == 50  # 50 copied, 1 purged, 1 added


def test_modes_are_validated_and_require_needs_the_extension(postgres_url: str) -> None:
    with pytest.raises(ConfigError, match="vector_index"):
        PostgresStore(postgres_url, vector_index="sometimes")
    with pytest.raises(ConfigError, match="preselect_candidates"):
        PostgresStore(postgres_url, preselect_candidates=5000)
    with pytest.raises(StoreError, match="no pgvector"):
        PostgresStore(postgres_url, vector_index="require")
    store = PostgresStore(postgres_url)  # auto on a server without pgvector: exact, said so
    try:
        assert not store.vectors.enabled
        assert store.stats("default")["candidates"] == (
            "exact: every record is scored (the server has no pgvector extension)"
        )
    finally:
        store.close()


def test_explanations_of_pre_selected_hits_equal_exact_ones(
    town: tuple[str, np.ndarray], clock: SimClock
) -> None:
    """Cosines come from the stored float32 vectors, as without pgvector, not from its
    distances (pgvector's would differ from ours in the 7th digit or worse): every number of
    the explanation is the same, up to float32 rounding."""
    url, queries = town
    with _open(url, clock, "auto") as fast, _open(url, clock, "off") as exact:
        for q in queries[:4]:
            a = fast.peek("weather", query_embedding=q, explain=True)
            b = exact.peek("weather", query_embedding=q, explain=True)
            assert all(h.breakdown and h.breakdown.preselected for h in a)
            left = [_flat(h.breakdown.to_dict() | {"preselected": None}) for h in a if h.breakdown]
            right = [_flat(h.breakdown.to_dict()) for h in b if h.breakdown]
            assert [sorted(x) for x in left] == [sorted(x) for x in right]
            for x, y in zip(left, right, strict=True):
                numbers = {k for k, v in y.items() if isinstance(v, float)}
                assert {k: v for k, v in x.items() if k not in numbers} == {
                    k: v for k, v in y.items() if k not in numbers
                }
                assert {k: x[k] for k in numbers} == pytest.approx(
                    {k: y[k] for k in numbers}, rel=1e-6, abs=1e-9
                )


def _flat(d: dict[str, object], prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in d.items():
        if isinstance(value, dict):
            out |= _flat(value, f"{prefix}{key}.")
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_a_role_without_the_privileges_opens_the_store_and_scores_exactly(
    pgvector_url: str,
) -> None:
    """Creating the extension needs a superuser (pgvector is not a trusted extension), and the
    copy needs CREATE on the schema: without either, ``auto`` opens the store and says why
    nothing is pre-selected; ``require`` refuses. An application role with only table
    privileges opens a schema its owner migrated."""
    PostgresStore(pgvector_url, vector_index="off").close()  # the owner migrates the schema
    role = f"chronomem_limited_{uuid.uuid4().hex[:8]}"
    parts = urlsplit(pgvector_url)
    limited = urlunsplit(parts._replace(netloc=f"{role}:pw@{parts.hostname}:{parts.port}"))
    owner = PostgresStore(pgvector_url, vector_index="off")
    try:
        with owner.write():
            owner._execute(f"CREATE ROLE {role} LOGIN PASSWORD 'pw'")
            owner._execute(f"GRANT USAGE ON SCHEMA public TO {role}")
            owner._execute(f"GRANT ALL ON ALL TABLES IN SCHEMA public TO {role}")
        assert "may not CREATE EXTENSION vector" in _exact_because(limited)
        with owner.write():
            owner._execute("CREATE EXTENSION vector")
        assert "the vector copy cannot be kept" in _exact_because(limited)
        with pytest.raises(StoreError, match="vector_index='require' but"):
            PostgresStore(limited, vector_index="require")
        # Once the owner has set the copy up, table privileges are enough to use it.
        PostgresStore(pgvector_url).close()
        with owner.write():
            owner._execute(f"GRANT ALL ON ann_vectors TO {role}")
            owner._execute(f"GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO {role}")
        vector = np.ones(DIM, dtype=np.float32) / np.sqrt(DIM)
        store = PostgresStore(limited, vector_index="require")
        with Memory.open(store, embedder=None) as mem:
            assert store.vectors.enabled
            written = mem.remember("written by the application role", embedding=vector).id
            # Its role may not create the index for this new dimension: the copy is written
            # anyway, and reads stay exact until the owner opens the store.
            assert not store.vectors._has_index(DIM)
        copied = owner._query("SELECT r.id FROM ann_vectors a JOIN records r USING (pk)")
        assert [r[0] for r in copied] == [written]
        PostgresStore(pgvector_url).close()
        indexes = owner._query("SELECT indexname FROM pg_indexes WHERE tablename = 'ann_vectors'")
        assert f"ann_vectors_hnsw_{DIM}" in {r[0] for r in indexes}
    finally:
        with owner.write():
            owner._execute(f"DROP OWNED BY {role}")
            owner._execute(f"DROP ROLE {role}")
        owner.close()


def _exact_because(url: str) -> str:
    """Open with ``auto``, check nothing is pre-selected, and return what the store says why."""
    store = PostgresStore(url)
    try:
        assert not store.vectors.enabled
        return str(store.stats("default")["candidates"])
    finally:
        store.close()


def test_reads_over_records_with_passages_are_exact(pgvector_url: str, clock: SimClock) -> None:
    """The index holds record vectors: a fact said in passing in a long record is found through
    its passage vector, which pgvector cannot see — such reads score every record."""
    from ..conftest import FixedEmbedder

    rng = np.random.default_rng(11)
    centres = rng.standard_normal((40, DIM)).astype(np.float32)
    question = _vectors(rng, 1, centres)[0]
    far = -question  # the long record as a whole points away from the question
    long_text = "user: We talked about the weather for a while. By the way, the key is blue."
    embedder = FixedEmbedder(
        {long_text: far, "user: By the way, the key is blue.": question}, dim=DIM
    )
    store = PostgresStore(pgvector_url, vector_index="require")
    with Memory.open(store, embedder=embedder, clock=clock, preset="default") as mem:
        noise = _vectors(rng, 1500, centres)
        mem.remember_many(
            [{"text": f"note {i}", "embedding": v, "importance": 5} for i, v in enumerate(noise)],
            agent="ada",
        )
        passage_record = mem.remember(long_text, agent="ada", importance=5).id
    clock.advance(hours=1)
    with _open(pgvector_url, clock, "auto") as fast, _open(pgvector_url, clock, "off") as exact:
        hits = fast.peek("?", query_embedding=question, k=10, explain=True)
        assert hits[0].record.id == passage_record
        assert hits[0].breakdown is not None
        assert hits[0].breakdown.relevance_dense == pytest.approx(1.0, abs=1e-5)
        assert hits[0].breakdown.preselected is None  # scored exactly
        _same(_hits(fast, question, text="?"), _hits(exact, question, text="?"))
