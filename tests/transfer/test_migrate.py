"""``chronomem migrate`` and the archive it travels in: spaces copied between SQLite and
PostgreSQL with ids and every field — records, audit, events, links, trigger sums — preserved."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem import (
    ConflictError,
    InvalidInputError,
    Memory,
    NotFoundError,
    SimClock,
    StoreError,
    migrate,
)
from chronomem.cli.main import main

from ..conftest import T0, FixedEmbedder, unit
from ..scenario import dump, populate, populate_graph


def _cli(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def test_sqlite_to_postgresql_to_sqlite_exports_identical_bytes(
    tmp_path: Path, postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    clock = SimClock(T0)
    embedder = FixedEmbedder(dim=3, model_id="test/fixed-3")
    first, second = tmp_path / "first.db", tmp_path / "second.db"
    with Memory.open(first, embedder=embedder, clock=clock) as mem:
        populate(mem, clock)
        crisis = populate_graph(mem, clock)
        mem.export(tmp_path / "first.jsonl")
        before = dump(mem, crisis)
    with Memory.open(first, embedder=None, clock=clock, space="second space") as other:
        other.remember("another space travels too", embedding=unit(1, 1, 0))

    out = _cli(capsys, "migrate", "--from", str(first), "--to", postgres_url)
    assert "default: 15 records" in out
    assert "3 events, 3 links" in out
    assert "migrated 2 space(s)" in out
    _cli(capsys, "migrate", "--from", postgres_url, "--to", f"sqlite:///{second}")

    for location in (postgres_url, second):
        with Memory.open(location, embedder=embedder, clock=clock) as mem:
            mem.export(tmp_path / "again.jsonl")
            assert (tmp_path / "again.jsonl").read_bytes() == (
                tmp_path / "first.jsonl"
            ).read_bytes()
            assert dump(mem, crisis) == before
            assert mem.stats()["embedding_model"] == "test/fixed-3"
        with Memory.open(location, embedder=None, clock=clock, space="second space") as other:
            hits = other.peek("another space", preset="default")
            assert [h.record.text for h in hits] == ["another space travels too"]


def test_a_target_space_that_holds_anything_is_refused(tmp_path: Path, clock: SimClock) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    with Memory.open(source, embedder=None, clock=clock) as mem:
        mem.remember("from the source", embedding=unit(1, 0))
    with Memory.open(target, embedder=None, clock=clock) as mem:
        mem.add_event("already here")
    with pytest.raises(ConflictError, match="not empty"):
        migrate(source, target)
    with pytest.raises(NotFoundError, match="no space 'elsewhere'"):
        migrate(source, target, spaces=["elsewhere"])
    with pytest.raises(StoreError, match="no chronomem store at"):
        migrate(tmp_path / "typo.db", target)
    assert not (tmp_path / "typo.db").exists()
    with Memory.open(target, embedder=None, clock=clock) as mem:
        assert mem.stats()["records"] == 0


def test_only_the_named_spaces_are_copied(tmp_path: Path, clock: SimClock) -> None:
    source, target = tmp_path / "source.db", tmp_path / "target.db"
    for space in ("a", "b"):
        with Memory.open(source, embedder=None, clock=clock, space=space) as mem:
            mem.remember(f"in {space}", embedding=unit(1, 0))
    reports = migrate(source, target, spaces=["b"])
    assert [(r.space, r.records) for r in reports] == [("b", 1)]
    with Memory.open(target, embedder=None, clock=clock, space="a") as mem:
        assert mem.stats()["records"] == 0


def test_an_archive_with_a_dangling_link_is_refused_whole(tmp_path: Path, clock: SimClock) -> None:
    with Memory.open(tmp_path / "a.db", embedder=None, clock=clock) as mem:
        cause, effect = mem.add_event("the dam cracked"), mem.add_event("the valley flooded")
        mem.link(cause.id, effect.id, 0.9)
        mem.remember("water everywhere", event_id=effect.id)
        mem.export(tmp_path / "a.jsonl")
    lines = (tmp_path / "a.jsonl").read_text().splitlines()
    kept = [line for line in lines if json.loads(line).get("id") != cause.id]
    (tmp_path / "broken.jsonl").write_text("\n".join(kept) + "\n")
    with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as mem:
        with pytest.raises(InvalidInputError, match=f"event '{cause.id}' does not exist"):
            mem.import_(tmp_path / "broken.jsonl")
        assert (mem.stats()["records"], mem.links()) == (0, [])
        report = mem.import_(tmp_path / "a.jsonl")
        assert (report.records, report.events, report.links) == (1, 2, 1)
        assert [a.event.id for a in mem.ancestors(effect.id)] == [cause.id]


def test_version_1_archives_are_still_read(tmp_path: Path, clock: SimClock) -> None:
    with Memory.open(tmp_path / "a.db", embedder=None, clock=clock) as mem:
        rid = mem.remember("an old archive", embedding=unit(1, 0)).id
        mem.export(tmp_path / "a.jsonl")
    header, *lines = (tmp_path / "a.jsonl").read_text().splitlines()
    old = [json.dumps({**json.loads(header), "version": 1})]
    old += [line for line in lines if json.loads(line)["type"] in {"record", "audit"}]
    (tmp_path / "v1.jsonl").write_text("\n".join(old) + "\n")
    with Memory.open(tmp_path / "b.db", embedder=None, clock=clock) as mem:
        assert mem.import_(tmp_path / "v1.jsonl").records == 1
        assert mem.get(rid).text == "an old archive"
