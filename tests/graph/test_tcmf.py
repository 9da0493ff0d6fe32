"""Crisis reads: the causal boost, its fusion, scope fallback, auto-linking, degradation."""

from __future__ import annotations

import itertools
import tempfile
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem import (
    PRESETS,
    CausalConfig,
    CausalCycleError,
    CausalLinkError,
    CauseAfterEffectError,
    InvalidInputError,
    Link,
    Memory,
    NotFoundError,
    Provenance,
    SimClock,
)
from chronomem.retrieval.query import Crisis

from ..conftest import T0, FixedEmbedder, store_of


def v(i: int, *extra: tuple[int, float]) -> np.ndarray:
    """A unit vector along axis ``i`` of 16, with optional small components."""
    out = np.zeros(16)
    out[i] = 1.0
    for j, x in extra:
        out[j] = x
    return out / np.linalg.norm(out)


QUESTION = v(0)  # "why did the market riot break out?"


def _chain(mem: Memory, clock: SimClock, weights: tuple[float, ...] = (1.0, 1.0, 1.0, 1.0)):  # type: ignore[no-untyped-def]
    """drought -> rationing -> black market -> unrest -> riot (the crisis)."""
    names = ["drought", "rationing", "black market", "unrest", "riot"]
    events = []
    for i, name in enumerate(names):
        kind = "crisis" if name == "riot" else "happening"
        events.append(mem.add_event(name, kind=kind, scope="market", embedding=v(8 + i)))
        clock.advance(days=7)
    for (cause, effect), weight in zip(itertools.pairwise(events), weights, strict=True):
        mem.link(cause.id, effect.id, weight)
    return {e.text: e for e in events}


def _symptoms(mem: Memory) -> list[str]:
    texts = ["crowds smashed the stalls", "the market square burned", "guards fought rioters"]
    return [
        mem.remember(t, agent=f"citizen{i}", embedding=v(0, (1, 0.1 + 0.05 * i))).id
        for i, t in enumerate(texts)
    ]


def test_a_root_cause_witness_outranks_symptom_paraphrases(mem: Memory, clock: SimClock) -> None:
    events = _chain(mem, clock)
    symptoms = _symptoms(mem)
    # Dissimilar to the question (orthogonal), but it witnessed a 2-hop ancestor of the riot.
    root = mem.remember(
        "bread sold for ten times its price behind the tannery",
        agent="baker",
        event_id=events["black market"].id,
        embedding=v(5),
    ).id
    riot = events["riot"].id
    hits = mem.peek("why did the riot break out?", query_embedding=QUESTION, crisis=riot,
                    preset="default", explain=True)  # fmt: skip
    assert hits[0].record.id == root
    assert {h.record.id for h in hits[1:4]} == set(symptoms)
    causal = hits[0].breakdown.causal  # type: ignore[union-attr]
    assert causal is not None
    assert (causal.via, causal.depth, causal.event_id) == ("witness", 2, events["black market"].id)
    assert causal.path == (events["black market"].id, events["unrest"].id, riot)
    # chain weighting: the drought (4 links up) is the root; the black market is 2 links nearer
    assert causal.boost == pytest.approx(1.0 - 2 * 0.1)

    # The published multiplicative form cannot lift it: its episodic score is near zero.
    multiplicative = replace(
        PRESETS["default"], name="mult", causal=CausalConfig(fusion="multiplicative")
    )
    worse = mem.peek("why did the riot break out?", query_embedding=QUESTION, crisis=riot,
                     preset=multiplicative)  # fmt: skip
    assert [h.record.id for h in worse].index(root) == 3  # below all three paraphrases


def test_without_a_crisis_the_root_cause_stays_buried(mem: Memory, clock: SimClock) -> None:
    events = _chain(mem, clock)
    _symptoms(mem)
    root = mem.remember("bread sold dear", event_id=events["black market"].id, embedding=v(5)).id
    plain = mem.peek("q", query_embedding=QUESTION, preset="default")
    assert [h.record.id for h in plain].index(root) == 3


def _boost_with(weight: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock(T0)
        with Memory.open(Path(tmp) / "m.db", embedder=None, clock=clock) as mem:
            events = _chain(mem, clock, weights=(1.0, weight, 1.0, 1.0))
            mem.remember("saw it", event_id=events["rationing"].id, embedding=v(6))
            hit = mem.peek("q", query_embedding=QUESTION, crisis=events["riot"].id,
                           explain=True)[0]  # fmt: skip
            return hit.breakdown.causal.boost  # type: ignore[union-attr]


def test_edge_weights_matter() -> None:
    strong, weak = _boost_with(1.0), _boost_with(0.1)
    # rationing is 3 links up, one nearer the crisis than the root (the drought): chain 0.9
    assert strong == pytest.approx(0.9)
    assert weak == pytest.approx(0.09)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([0.05, 0.2, 0.5, 0.9, 1.0]), min_size=4, max_size=4))
def test_a_scope_fallback_event_is_weaker_than_every_true_ancestor(weights: list[float]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock(T0)
        with Memory.open(Path(tmp) / "m.db", embedder=None, clock=clock) as mem:
            events = _chain(mem, clock, weights=tuple(weights))
            crisis = events["riot"]
            festival = mem.add_event(
                "festival planned", scope="market", embedding=v(14),
                occurred_at=crisis.occurred_at - timedelta(days=2),
            )  # fmt: skip
            fallback = mem.remember("festival", agent="f", event_id=festival.id, embedding=v(7)).id
            witnesses = {
                mem.remember(name, agent=name, event_id=e.id, embedding=v(7)).id: name
                for name, e in events.items()
                if name != "riot"
            }
            hits = mem.peek("q", query_embedding=QUESTION, crisis=crisis.id, k=20, explain=True)
            boost = {h.record.id: h.breakdown.causal.boost for h in hits}  # type: ignore[union-attr]
            parts = {h.record.id: h.breakdown.causal for h in hits}  # type: ignore[union-attr]
            assert parts[fallback].fallback  # type: ignore[union-attr]
            assert all(boost[fallback] < boost[w] for w in witnesses)


def test_cosine_association_needs_the_threshold(mem: Memory, clock: SimClock) -> None:
    events = _chain(mem, clock)
    unrest = events["unrest"]  # axis 11
    close = mem.remember("people muttering", agent="a", embedding=v(11, (2, 0.5))).id  # cos .894
    some = mem.remember("people talking", agent="c", embedding=v(11, (2, 1.2))).id  # cos .640
    far = mem.remember("people chatting", agent="b", embedding=v(11, (2, 1.5))).id  # cos .555
    read = mem.peek("q", query_embedding=QUESTION, crisis=events["riot"].id, explain=True)
    hits = {h.record.id: h for h in read}
    near = hits[close].breakdown.causal  # type: ignore[union-attr]
    assert near is not None
    assert (near.via, near.event_id) == ("cosine", unrest.id)
    assert near.association == 1.0  # at or above threshold + margin (0.6 + 0.15): fully
    partly = hits[some].breakdown.causal  # type: ignore[union-attr]
    assert partly.association == pytest.approx(0.640 / 0.75, abs=1e-3)  # type: ignore[union-attr]
    assert hits[far].breakdown.causal.event_id is None  # type: ignore[union-attr]  # < 0.6


def test_two_holders_of_the_same_text_are_one_hit(mem: Memory, clock: SimClock) -> None:
    events = _chain(mem, clock)
    for citizen in ("ada", "bo"):
        mem.remember("The granary is empty", agent=citizen, event_id=events["rationing"].id,
                     embedding=v(3))  # fmt: skip
    hits = mem.peek("q", query_embedding=QUESTION, crisis=events["riot"].id)
    assert len(hits) == 1
    assert set(hits[0].holders) == {"ada", "bo"}


def test_links_made_after_as_of_do_not_count(mem: Memory, clock: SimClock) -> None:
    a = mem.add_event("cause", embedding=v(9))
    b = mem.add_event("crisis", kind="crisis", embedding=v(10))
    rid = mem.remember("witness", event_id=a.id, embedding=v(4)).id
    before = clock.now()
    clock.advance(days=1)
    mem.link(a.id, b.id)
    assert mem.ancestors(b.id, as_of=before) == []
    then = mem.peek("q", query_embedding=QUESTION, crisis=b.id, as_of=before, explain=True)
    now = mem.peek("q", query_embedding=QUESTION, crisis=b.id, explain=True)
    assert [h.breakdown.causal.boost for h in then if h.record.id == rid] == [0.0]  # type: ignore[union-attr]
    assert [h.breakdown.causal.boost for h in now if h.record.id == rid] == [1.0]  # type: ignore[union-attr]


def test_a_change_at_the_same_instant_reaches_the_next_crisis_read(
    mem: Memory, clock: SimClock
) -> None:
    """Crisis reads at one instant reuse the graph's inputs (a simulation's agents asking at
    one tick) until the space changes: a link, an event, another scope event or an unlink made
    at that instant is in the very next read."""
    a = mem.add_event("cause", embedding=v(9))
    b = mem.add_event("crisis", kind="crisis", embedding=v(10), scope="town")
    rid = mem.remember("witness", event_id=a.id, embedding=v(4)).id

    def boost() -> float:
        hits = mem.peek("q", query_embedding=QUESTION, crisis=b.id, explain=True)
        return next(h.breakdown.causal.boost for h in hits if h.record.id == rid)  # type: ignore[union-attr]

    assert boost() == boost() == 0.0
    mem.link(a.id, b.id)
    assert boost() == 1.0
    mem.unlink(a.id, b.id)
    assert boost() == 0.0
    scoped = mem.add_event("a scope event", embedding=v(11), scope="town",
                           occurred_at=clock.now() - timedelta(hours=1))  # fmt: skip
    mem.remember("saw it", event_id=scoped.id, embedding=v(4))
    hits = mem.peek("q", query_embedding=QUESTION, crisis=b.id, explain=True)
    assert any(h.breakdown.causal.fallback for h in hits)  # type: ignore[union-attr]


def test_another_handles_link_reaches_a_crisis_read_at_the_same_instant(
    db_path: Path, clock: SimClock
) -> None:
    """The reused crisis inputs follow another handle's (another process's) changes: its link
    moves the space's ``change_seq``, which the next read compares."""
    with (
        Memory.open(db_path, embedder=None, clock=clock) as mem,
        Memory.open(db_path, embedder=None, clock=clock) as other,
    ):
        a = mem.add_event("cause", embedding=v(9))
        b = mem.add_event("crisis", kind="crisis", embedding=v(10))
        rid = mem.remember("witness", event_id=a.id, embedding=v(4)).id

        def boost() -> float:
            hits = mem.peek("q", query_embedding=QUESTION, crisis=b.id, explain=True)
            return next(h.breakdown.causal.boost for h in hits if h.record.id == rid)  # type: ignore[union-attr]

        assert boost() == boost() == 0.0
        other.link(a.id, b.id)
        assert boost() == 1.0


def test_crisis_reads_at_one_instant_reuse_the_ancestors_cosines(
    db_path: Path, clock: SimClock
) -> None:
    """The agents of a simulation asking about one crisis at one tick: the true ancestors'
    cosines with every row are computed by the first read and kept on the crisis; every read
    ranks and explains as a handle computing them afresh, and a record written at that instant
    (the space changed) is associated by the very next read."""
    rng = np.random.default_rng(3)

    def near(i: int) -> np.ndarray:
        return v(8 + i) + 0.4 * rng.normal(size=16) / 4

    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        events = _chain(mem, clock)
        for citizen in ("ada", "bo", "cy"):
            for i in range(12):
                mem.remember(f"{citizen} saw {i}", agent=citizen, embedding=near(i % 4))
    queries = [rng.normal(size=16) for _ in range(4)]
    riot = events["riot"].id

    def read(m: Memory, q: np.ndarray, k: int = 8) -> list[tuple[str, float, float]]:
        hits = m.peek("q", query_embedding=q, crisis=riot, explain=True, k=k)
        return [(h.record.id, h.score, h.breakdown.causal.association) for h in hits]  # type: ignore[union-attr]

    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        kept = [read(mem, q) for q in queries]
        ((_, _, crisis),) = mem._h.crises
        assert crisis.ancestry  # the first read computed them; the others took them
        for q, got in zip(queries, kept, strict=True):
            with Memory.open(db_path, embedder=None, clock=clock) as fresh:
                assert read(fresh, q) == got
        late = mem.remember("dee saw the black market", agent="ada", embedding=v(10)).id
        lifted = [rid for rid, _, association in read(mem, queries[0], k=50) if association > 0]
        assert late in lifted


def _town(mem: Memory, clock: SimClock) -> str:
    """The market chain and three citizens' memories near its events; the crisis's id."""
    rng = np.random.default_rng(5)
    events = _chain(mem, clock)
    for citizen in ("ada", "bo", "cy"):
        for i in range(12):
            vector = v(8 + i % 4) + 0.4 * rng.normal(size=16) / 4
            mem.remember(f"{citizen} saw {i}", agent=citizen, embedding=vector)
    return events["riot"].id


def _crisis_read(
    m: Memory, crisis: str, q: np.ndarray, **kwargs: object
) -> list[tuple[str, float, float]]:
    hits = m.peek("q", query_embedding=q, crisis=crisis, explain=True, k=40, **kwargs)  # type: ignore[arg-type]
    return [(h.record.id, h.score, h.breakdown.causal.association) for h in hits]  # type: ignore[union-attr]


def _lifts_as_fresh(
    mem: Memory, db_path: Path, clock: SimClock, crisis: str, q: np.ndarray, lifted: str,
    embedder: FixedEmbedder | None = None,
) -> None:  # fmt: skip
    """``mem``'s crisis read associates ``lifted`` and reads as a fresh handle does."""
    got = _crisis_read(mem, crisis, q)
    assert lifted in [rid for rid, _, association in got if association > 0]
    with Memory.open(db_path, embedder=embedder, clock=clock) as fresh:
        assert _crisis_read(fresh, crisis, q) == got


def test_crisis_inputs_outlive_the_instant_and_the_records_changes(
    db_path: Path, clock: SimClock
) -> None:
    """A simulation's crisis reads tick after tick, with touching reads and new memories in
    between, build the crisis's inputs once while the graph holds, and read as a fresh handle
    does; a link another handle adds is seen by the next read."""
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        riot = _town(mem, clock)
    q = v(0, (9, 0.5))
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        for tick in range(4):
            clock.advance(hours=1)
            got = _crisis_read(mem, riot, q)
            with Memory.open(db_path, embedder=None, clock=clock) as fresh:
                assert _crisis_read(fresh, riot, q) == got
            mem.recall("q", query_embedding=q, crisis=riot)  # touches: change_seq moves
            citizen = ("bo", "cy", "ada", "bo")[tick]  # its rows grow: only they are computed
            mem.remember(f"{citizen} saw the market at {tick}", agent=citizen, embedding=v(10))
        ((_, _, crisis),) = mem._h.crises  # one build for four instants and eight writes
        assert crisis.ancestry
        with Memory.open(db_path, embedder=None, clock=clock) as other:
            hoarding = other.add_event("hoarding", scope="market", embedding=v(14), occurred_at=T0)
            other.link(hoarding.id, riot, 1.0)
            hoarder = other.remember("bo hoarded grain", agent="bo", embedding=v(14)).id
        _lifts_as_fresh(mem, db_path, clock, riot, q, hoarder)


def test_crisis_inputs_are_reused_only_at_instants_that_know_the_same_links(
    db_path: Path, clock: SimClock
) -> None:
    """An as-of read before a link was made does not take the inputs of a read after it,
    nor the other way round; each reads as a fresh handle does at its instant (the memory the
    link associates is there at both, lifted only after)."""
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        riot = _town(mem, clock)
        hoarder = mem.remember("bo hoarded grain", agent="bo", embedding=v(14)).id
        clock.advance(days=1)
        before = clock.now()
        clock.advance(days=1)
        hoarding = mem.add_event("hoarding", scope="market", embedding=v(14), occurred_at=T0)
        mem.link(hoarding.id, riot, 1.0)
        clock.advance(days=1)
    q = v(0, (9, 0.5))
    for first, then in ((None, before), (before, None)):
        with Memory.open(db_path, embedder=None, clock=clock) as mem:
            reads = [_crisis_read(mem, riot, q, as_of=at) for at in (first, then)]
        for at, got in zip((first, then), reads, strict=True):
            with Memory.open(db_path, embedder=None, clock=clock) as fresh:
                assert _crisis_read(fresh, riot, q, as_of=at) == got
            lifted = hoarder in [rid for rid, _, association in got if association > 0]
            assert lifted is (at is None)


def _kept(mem: Memory, crisis: str, q: np.ndarray) -> Crisis:
    """Two crisis reads of every agent: the second keeps every row's strongest ancestor."""
    _crisis_read(mem, crisis, q)
    _crisis_read(mem, crisis, q)
    ((_, _, kept),) = mem._h.crises
    assert kept.ancestry
    return kept


def test_a_crisis_read_of_some_agents_takes_the_cosines_kept_for_all(
    db_path: Path, clock: SimClock
) -> None:
    """Reads of every agent keep each agent's ancestors' cosines; a read of one of them, or of
    two in another order, takes theirs and reads as a fresh handle does."""
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        riot = _town(mem, clock)
    q = v(0, (9, 0.5))
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        assert len(_kept(mem, riot, q).parts) == 3
        for agents in (["bo"], ["cy", "ada"], ["ada", "bo", "cy"]):
            got = _crisis_read(mem, riot, q, agents=agents)
            assert got
            with Memory.open(db_path, embedder=None, clock=clock) as fresh:
                assert _crisis_read(fresh, riot, q, agents=agents) == got


def test_a_crisis_keeps_its_ancestors_cosines_only_while_the_rows_vectors_hold(
    db_path: Path, clock: SimClock
) -> None:
    """A purged memory and a new one leave an agent with as many rows as before, other
    vectors in them: the kept cosines are not reused for them."""
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        riot = _town(mem, clock)
    q = v(0, (9, 0.5))
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        _kept(mem, riot, q)
        for turn in range(3):  # each purge renews ada's vectors version
            first = mem.records(agent="ada")[0]
            mem.forget(first.id, "noise", purge=True)
            late = mem.remember(f"ada saw the drought {turn}", agent="ada", embedding=v(8)).id
            assert len(mem.records(agent="ada")) == 12
            _lifts_as_fresh(mem, db_path, clock, riot, q, late)
            ((_, _, crisis),) = mem._h.crises
            assert sorted(crisis.parts) == ["ada", "bo", "cy"]  # the old version's replaced


def test_a_crisis_keeps_no_ancestors_cosines_for_a_vector_a_backfill_gave(
    db_path: Path, clock: SimClock
) -> None:
    """A memory written without a vector and embedded later keeps its row: the cosines kept
    for its vectorless row are not reused."""
    embedder = FixedEmbedder({"ada saw the drought": list(v(8))}, dim=16)
    with Memory.open(db_path, embedder=embedder, clock=clock) as mem:
        riot = _town(mem, clock)
    with Memory.open(db_path, embedder=None, clock=clock, allow_missing_vectors=True) as mem:
        late = mem.remember("ada saw the drought", agent="ada").id
    q = v(0, (9, 0.5))
    with Memory.open(db_path, embedder=embedder, clock=clock) as mem:
        for _ in range(2):
            assert late not in [rid for rid, _, a in _crisis_read(mem, riot, q) if a > 0]
        assert mem._h.crises[0][2].ancestry
        assert mem.embed_records() == 1
        _lifts_as_fresh(mem, db_path, clock, riot, q, late, embedder)


def test_auto_link_applies_the_threshold_and_the_window(mem: Memory, clock: SimClock) -> None:
    old_close = mem.add_event("long ago, similar", embedding=v(1, (2, 0.3)))
    clock.advance(days=40)
    close = mem.add_event("no rain for months", embedding=v(1, (2, 0.2)))
    clock.advance(days=1)
    unrelated = mem.add_event("guild elected a treasurer", embedding=v(3))
    clock.advance(days=1)
    explicit = mem.add_event("wells ran dry", embedding=v(1, (2, 0.25)))
    clock.advance(days=1)
    drought = mem.add_event("drought destroyed the harvest", embedding=v(1))
    mem.link(explicit.id, drought.id, 0.9)  # explicit: auto_link must not touch it
    made = mem.auto_link(drought.id, window=timedelta(days=30), threshold=0.9)
    assert [(x.cause, x.effect) for x in made] == [(close.id, drought.id)]
    link = made[0]
    assert link.provenance is Provenance.INFERRED
    assert link.similarity == pytest.approx(0.98, abs=0.01)
    assert link.weight == pytest.approx(0.5 * link.similarity)  # weaker than an explicit link
    kept = {(x.cause, x.provenance) for x in mem.links()}
    assert (explicit.id, Provenance.EXPLICIT) in kept
    assert all(x.cause not in (unrelated.id, old_close.id, drought.id) for x in mem.links())
    assert mem.auto_link(drought.id, window=timedelta(days=30), threshold=0.999) == []
    # An explicit link replaces an inferred one; an inferred one never replaces an explicit one.
    assert mem.link(close.id, drought.id, 0.7).provenance is Provenance.EXPLICIT
    assert mem.auto_link(drought.id, window=timedelta(days=30), threshold=0.9) == []


def test_bad_graph_input_is_refused(mem: Memory) -> None:
    a = mem.add_event("a", embedding=v(1))
    b = mem.add_event("b", embedding=v(2))
    with pytest.raises(NotFoundError):
        mem.link(a.id, "01ABCDEFGHJKMNPQRSTVWXYZ00")
    with pytest.raises(InvalidInputError, match="itself"):
        mem.link(a.id, a.id)
    for weight in (0.0, -0.5, 1.5, float("nan")):
        with pytest.raises(InvalidInputError):
            mem.link(a.id, b.id, weight)
    with pytest.raises(InvalidInputError):
        mem.add_event("x", kind="party")
    with pytest.raises(NotFoundError):
        mem.remember("saw nothing", event_id="01ABCDEFGHJKMNPQRSTVWXYZ00")
    with pytest.raises(NotFoundError):
        mem.recall("q", crisis="01ABCDEFGHJKMNPQRSTVWXYZ00")
    assert mem.links() == []
    assert mem.stats()["records"] == 0


def test_no_graph_means_plain_ranking_and_no_agents_means_no_memories(
    mem: Memory, clock: SimClock
) -> None:
    crisis = mem.add_event("lonely crisis", kind="crisis", embedding=v(9))
    for i in range(5):
        mem.remember(f"r{i}", agent=f"a{i}", embedding=v(0, (1, i / 5)))
    plain = [h.record.id for h in mem.peek("q", query_embedding=QUESTION, preset="default")]
    causal = mem.peek("q", query_embedding=QUESTION, crisis=crisis.id, preset="default")
    assert [h.record.id for h in causal] == plain
    block = mem.context("what happened?", agents=[], crisis=crisis.id)
    assert block.evidence == ()
    assert "(no memories)" in block.text
    assert "(no known causes)" in block.text


def test_without_vectors_witness_links_and_lexical_relevance_still_work(
    location: str | Path, clock: SimClock
) -> None:
    with Memory.open(location, embedder=None, clock=clock) as mem:
        cause = mem.add_event("the dam cracked")
        crisis = mem.add_event("the valley flooded", kind="crisis")
        mem.link(cause.id, crisis.id)
        witness = mem.remember("I heard a loud crack upstream", event_id=cause.id).id
        mem.remember("water is in the streets of the valley")
        hits = mem.peek("why is the valley flooded?", crisis=crisis.id, explain=True)
        assert hits[0].record.id == witness
        assert hits[0].breakdown.relevance_mode == "lexical"  # type: ignore[union-attr]
        assert hits[0].breakdown.causal.via == "witness"  # type: ignore[union-attr]
        with pytest.raises(Exception, match="vectors"):
            mem.auto_link(crisis.id)


def test_a_cause_after_its_effect_is_refused_naming_both(mem: Memory, clock: SimClock) -> None:
    riot = mem.add_event("riot", kind="crisis", embedding=v(1))
    clock.advance(days=3)
    later = mem.add_event("bread prices fell", embedding=v(2))
    with pytest.raises(CauseAfterEffectError) as refused:
        mem.link(later.id, riot.id)
    assert (refused.value.cause, refused.value.effect) == (later.id, riot.id)
    assert later.id in str(refused.value)
    assert riot.id in str(refused.value)
    assert mem.links() == []
    same_time = mem.add_event("guards arrived", occurred_at=riot.occurred_at, embedding=v(3))
    assert mem.link(same_time.id, riot.id).cause == same_time.id  # simultaneous is allowed


def test_a_link_that_closes_a_cycle_is_refused(mem: Memory) -> None:
    a, b, c = (mem.add_event(name, embedding=v(i)) for i, name in enumerate("abc", start=1))
    mem.link(a.id, b.id)
    mem.link(b.id, c.id)
    with pytest.raises(CausalCycleError) as refused:
        mem.link(c.id, a.id)  # all three at one instant: only the cycle check can refuse it
    assert isinstance(refused.value, CausalLinkError)
    assert (refused.value.cause, refused.value.effect) == (c.id, a.id)
    assert refused.value.path == (a.id, b.id, c.id)
    assert len(mem.links()) == 2
    mem.link(a.id, c.id)  # a shortcut is no cycle
    mem.link(a.id, b.id, 0.5)  # re-weighting an existing link is no cycle either


def test_auto_link_never_proposes_a_cycle(mem: Memory, clock: SimClock) -> None:
    drought = mem.add_event("no rain for months", embedding=v(1, (2, 0.2)))
    clock.advance(days=2)
    famine = mem.add_event("drought destroyed the harvest", embedding=v(1))
    # A link from an older store, written before links were checked: famine -> drought.
    store_of(mem).put_link(
        mem.space,
        Link(cause=famine.id, effect=drought.id, weight=1.0, provenance=Provenance.EXPLICIT,
             created_at=clock.now()),
    )  # fmt: skip
    assert mem.auto_link(famine.id, threshold=0.9) == []
    assert [(x.cause, x.effect) for x in mem.links()] == [(famine.id, drought.id)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    depth=st.integers(2, 6),
    importance=st.lists(st.integers(1, 10), min_size=6, max_size=6),
    witnessed=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_a_crisis_read_lists_the_chain_root_first_above_every_symptom(
    depth: int, importance: list[int], witnessed: list[bool]
) -> None:
    """One memory per chain event (named as witnessed, or only close in meaning), written in
    time order (the proximate cause's the newest), next to symptom paraphrases of the question:
    under ``default`` the chain comes first, root to proximate, whatever the memories'
    importance and age (a chain step is worth 0.2 of episodic score; docs/causal.md)."""
    with tempfile.TemporaryDirectory() as tmp:
        clock = SimClock(T0)
        with Memory.open(Path(tmp) / "m.db", embedder=None, clock=clock) as mem:
            events = [mem.add_event(f"e{i}", embedding=v(8 + i)) for i in range(depth)]
            crisis = mem.add_event("riot", kind="crisis", embedding=v(0, (1, 0.3)))
            for cause, effect in itertools.pairwise([*events, crisis]):
                mem.link(cause.id, effect.id)
            chain = []
            for i, event in enumerate(events):
                clock.advance(days=1)
                named = event.id if witnessed[i] else None
                near = v(8 + i, (2 + i, 0.5))  # cosine .894 to its event, 0 to the question
                chain.append(mem.remember(f"saw {i}", agent=f"w{i}", importance=importance[i],
                                          event_id=named, embedding=near).id)  # fmt: skip
            symptoms = {
                mem.remember(f"symptom {j}", agent=f"s{j}", importance=10,
                             embedding=v(0, (1, 0.1 * j))).id
                for j in range(3)
            }  # fmt: skip
            hits = mem.peek("why?", query_embedding=QUESTION, crisis=crisis.id, k=depth + 3,
                            preset="default", explain=True)  # fmt: skip
            assert [h.record.id for h in hits[:depth]] == chain  # root first, then down
            assert {h.record.id for h in hits[depth:]} == symptoms
            assert all(not h.breakdown.factors for h in hits)  # type: ignore[union-attr]
