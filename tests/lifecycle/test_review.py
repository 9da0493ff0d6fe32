"""The review queue proposes and never applies; approving applies through the write path in one
transaction, audited with the approver; a rejection is remembered until the records change. The
access log records who read what, with which query, when it is on (DESIGN §3)."""

from __future__ import annotations

from datetime import timedelta

import pytest

from chronomem import ConflictError, Memory, NotFoundError, ReadOptions, SimClock

from ..conftest import unit


def _seed(mem: Memory, clock: SimClock) -> dict[str, str]:
    old = mem.remember("the office is in Paris", kind="fact", domain="office",
                       embedding=unit(1, 0, 0, 0)).id  # fmt: skip
    ids = {"old": old}
    clock.advance(days=10)
    ids["new"] = mem.remember("the office moved to Lyon", kind="fact", domain="office",
                              embedding=unit(1, 0.3, 0, 0)).id  # fmt: skip
    ids["lunch"] = mem.remember("had lunch", embedding=unit(0, 1, 0, 0)).id
    ids["lunch2"] = mem.remember("had lunch.", embedding=unit(0, 1, 0.01, 0)).id
    ids["bad"] = mem.remember("deploy on fridays", kind="instruction",
                              embedding=unit(0, 0, 1, 0)).id  # fmt: skip
    ids["noise"] = mem.remember("the sky was grey", embedding=unit(0, 0, 0, 1)).id
    mem.feedback(ids["bad"], "harmful", "caused an outage")
    clock.advance(days=400)
    return {k: str(v) for k, v in ids.items()}


def _by(category: str, proposals: list) -> list:  # type: ignore[type-arg]
    return [p for p in proposals if p.category == category]


def test_review_proposes_every_category_and_changes_nothing(mem: Memory, clock: SimClock) -> None:
    ids = _seed(mem, clock)
    before = {i: mem.get(i) for i in ids.values()}
    proposals = mem.review()
    [version] = _by("unlinked-version", proposals)
    assert version.record_ids == (ids["old"], ids["new"])
    assert version.action.value == "supersede"
    assert version.figures["cosine"] > 0.75
    [dup] = _by("near-duplicate", proposals)
    assert dup.record_ids == (ids["lunch"], ids["lunch2"])
    [pushed] = _by("pushed-down", proposals)
    assert pushed.record_ids == (ids["bad"],)
    assert pushed.figures["feedback"] == -1.0
    # stale too (an instruction idle 400 days), but one record is one decision: the most urgent
    assert any(r.startswith("also not recalled or verified") for r in pushed.reasons)
    stale = {p.record_ids[0] for p in _by("stale", proposals)}
    assert stale == {ids["old"], ids["new"]}  # facts and instructions, 400 days idle
    assert len({p.record_ids for p in proposals}) == len(proposals)  # one proposal per record
    unused = {p.record_ids[0] for p in _by("unused", proposals)}
    assert ids["noise"] in unused
    assert all(p.reasons for p in proposals)
    assert {i: mem.get(i) for i in ids.values()} == before  # proposes, never applies
    assert mem.audit() == [a for a in mem.audit() if a.action == "feedback"]
    assert {p.id for p in mem.review()} == {p.id for p in proposals}  # the same ids again


def test_approve_applies_through_the_write_path_audited_with_the_approver(
    mem: Memory, clock: SimClock
) -> None:
    ids = _seed(mem, clock)
    proposals = mem.review()
    [version] = _by("unlinked-version", proposals)
    done = mem.approve(version.id, actor="curator")
    assert done.status.value == "approved"
    assert done.decided_by == "curator"
    chain = mem.history(ids["old"])
    assert [r.status.value for r in chain] == ["superseded", "superseded", "open"]
    assert chain[-1].text == "the office moved to Lyon"
    assert {(e.action, e.actor) for e in mem.audit() if e.action == "supersede"} == {
        ("supersede", "curator")
    }
    with pytest.raises(ConflictError):
        mem.approve(version.id)
    [pushed] = _by("pushed-down", proposals)
    mem.approve(pushed.id, actor="curator")
    assert mem.get(ids["bad"]).status.value == "closed"
    stale_old = next(p for p in proposals if p.record_ids == (ids["old"],))
    mem.review()  # its record was superseded since: the proposal is obsolete
    assert {p.id: p.status.value for p in mem.proposals()}[stale_old.id] == "obsolete"
    with pytest.raises(ConflictError):
        mem.approve(stale_old.id)
    with pytest.raises(NotFoundError):
        mem.approve("no-such-proposal")


def test_a_rejection_is_remembered_until_the_records_change(mem: Memory, clock: SimClock) -> None:
    ids = _seed(mem, clock)
    [pushed] = _by("pushed-down", mem.review())
    mem.reject(pushed.id, "it is still our policy", actor="lead")
    assert pushed.id not in {p.id for p in mem.review()}
    assert mem.proposals("rejected")[0].decision_reason == "it is still our policy"
    mem.feedback(ids["bad"], "harmful", "another outage")  # something changed: it comes back
    again = _by("pushed-down", mem.review())
    assert [p.record_ids for p in again] == [(ids["bad"],)]
    assert again[0].id != pushed.id
    assert again[0].figures["feedback"] == -2.0


def test_an_approval_that_no_longer_applies_writes_nothing(mem: Memory, clock: SimClock) -> None:
    ids = _seed(mem, clock)
    noise = next(p for p in _by("unused", mem.review()) if p.record_ids == (ids["noise"],))
    mem.remember("a reflection on the sky", kind="reflection", evidence=[ids["noise"]],
                 embedding=unit(0, 0.1, 0, 1))  # fmt: skip
    with pytest.raises(ConflictError):  # now cited: forgetting it is refused
        mem.approve(noise.id)
    assert mem.get(ids["noise"]).status.value == "open"
    assert mem.proposals("open")


def test_the_access_log_records_who_read_what_when_it_is_on(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("the cafe opens at 8", embedding=unit(1, 0)).id
    mem.peek("cafe", query_embedding=unit(1, 0))
    assert mem.accesses() == []  # off by default
    mem.set_access_log(True)
    clock.advance(hours=1)
    mem.peek("when does the cafe open?", options=ReadOptions(actor="ada"),
             query_embedding=unit(1, 0))  # fmt: skip
    mem.context("cafe hours", touch=False)
    logged = mem.accesses(rid)
    assert [(a.verb, a.actor, a.query) for a in logged] == [
        ("peek", None, "cafe hours"),
        ("peek", "ada", "when does the cafe open?"),
    ]
    assert logged[1].at == clock.now()
    assert mem.get(str(rid)).last_accessed_at < clock.now()  # the records stay untouched
    mem.set_access_log(False)
    mem.peek("cafe", query_embedding=unit(1, 0))
    assert len(mem.accesses()) == 2
    with pytest.raises(Exception, match="true or false"):
        mem.set_access_log("yes")  # type: ignore[arg-type]


def test_a_record_read_by_the_log_is_not_unused(mem: Memory, clock: SimClock) -> None:
    mem.set_access_log(True)
    seen = mem.remember("a note someone peeks at", embedding=unit(1, 0, 0)).id
    never = mem.remember("a note nobody reads", embedding=unit(0, 1, 0)).id
    clock.advance(timedelta(days=100))
    mem.peek("peeks", k=1, query_embedding=unit(1, 0, 0))
    unused = {p.record_ids[0] for p in _by("unused", mem.review())}
    assert never in unused
    assert seen not in unused


def test_an_approval_after_its_records_changed_is_obsolete(mem: Memory, clock: SimClock) -> None:
    ids = _seed(mem, clock)
    [pushed] = _by("pushed-down", mem.review())
    mem.feedback(ids["bad"], "helpful", "it saved a release")  # rated back up to 0
    with pytest.raises(ConflictError, match="no longer applies"):
        mem.approve(pushed.id, actor="curator")
    assert mem.get(ids["bad"]).status.value == "open"
    assert {p.id: p.status.value for p in mem.proposals()}[pushed.id] == "obsolete"
    assert not [e for e in mem.audit(ids["bad"]) if e.action == "close"]


@pytest.mark.parametrize("purge", [False, True])
def test_forgetting_a_record_drops_its_access_rows(mem: Memory, purge: bool) -> None:
    mem.set_access_log(True)
    gone = mem.remember("my phone number is 555-0100", embedding=unit(1, 0)).id
    kept = mem.remember("the cafe opens at 8", embedding=unit(0.9, 0.1)).id
    mem.peek("phone", k=2, query_embedding=unit(1, 0))
    assert {a.record_id for a in mem.accesses()} == {gone, kept}
    mem.forget(gone, "personal data", purge=purge)
    assert mem.accesses(gone) == []
    assert [a.record_id for a in mem.accesses()] == [kept]


def test_two_versions_of_a_fact_without_a_domain_are_proposed(mem: Memory, clock: SimClock) -> None:
    old = mem.remember("the standup is at 9", kind="fact", embedding=unit(1, 0, 0)).id
    clock.advance(days=3)
    new = mem.remember("the standup is at 9:30", kind="fact", embedding=unit(1, 0.5, 0)).id
    [version] = _by("unlinked-version", mem.review())
    assert version.record_ids == (old, new)
    assert "neither has a domain" in version.reasons[0]


def test_a_verified_record_is_not_proposed_for_forgetting(mem: Memory, clock: SimClock) -> None:
    rid = mem.remember("the backup key is in the red binder", kind="fact", embedding=unit(0, 1)).id
    assert rid is not None
    clock.advance(days=400)
    [first] = [p for p in mem.review() if p.record_ids == (rid,)]
    assert first.action.value == "verify"  # stale and never used: one proposal, verify first
    assert any("never returned by a read" in r for r in first.reasons)
    mem.approve(first.id, actor="ops")
    assert [p for p in mem.review() if rid in p.record_ids] == []  # forget is not offered next
