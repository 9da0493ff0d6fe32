"""The archive as a file: written atomically without following planted symlinks, read with typed
errors for every malformed byte (issue 14)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from chronomem import InvalidInputError, Memory, SimClock


@pytest.fixture
def small(tmp_path: Path, clock: SimClock) -> Iterator[Memory]:
    with Memory.open(tmp_path / "store.db", embedder=None, clock=clock) as mem:
        mem.remember("the lighthouse lamp is lit", embedding=[1.0, 0.0])
        yield mem


def test_a_symlink_planted_at_any_temporary_name_is_never_written_through(
    small: Memory, tmp_path: Path
) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "out.jsonl"
    for name in (".out.jsonl.tmp", ".out.jsonl.0.tmp", "out.jsonl.tmp"):
        (tmp_path / name).symlink_to(victim)
    assert small.export(out) == 1
    assert victim.read_text() == "precious"
    assert json.loads(out.read_text().splitlines()[0])["format"] == "chronomem"
    leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".out"))
    assert leftovers == [".out.jsonl.0.tmp", ".out.jsonl.tmp"]  # only the planted links


def test_a_symlink_at_the_target_is_replaced_not_followed(small: Memory, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious")
    out = tmp_path / "out.jsonl"
    out.symlink_to(victim)
    small.export(out)
    assert victim.read_text() == "precious"
    assert not out.is_symlink()


def test_a_new_archive_is_private_and_a_replaced_one_keeps_its_mode(
    small: Memory, tmp_path: Path
) -> None:
    out = tmp_path / "out.jsonl"
    small.export(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    os.chmod(out, 0o640)
    small.export(out)
    assert stat.S_IMODE(out.stat().st_mode) == 0o640


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("missing/out.jsonl", "directory .* does not exist"),
        (".", "not a file name"),
        ("adir", "it is a directory"),
    ],
)
def test_exporting_to_an_impossible_path_is_a_typed_error(
    small: Memory, tmp_path: Path, target: str, message: str
) -> None:
    (tmp_path / "adir").mkdir()
    with pytest.raises(InvalidInputError, match=message) as err:
        small.export(tmp_path / target if target != "." else Path("."))
    assert err.value.field == "path"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"format": "chronomem", "version": "3"}\n', r"integers 1, 2, 3 .* got '3'"),
        (b'{"format": "chronomem", "version": true}\n', "got True"),
        (b'{"format": "chronomem", "version": 3.0}\n', "got 3.0"),
        (b'{"format": "chronomem", "version": 9}\n', "got the integer 9"),
        (b'{"format": "chronomem", "version": 3}\n\xff\xfe\n', r":2: not UTF-8 text"),
        (b"\xff\xfe\n", "line 1 is not a JSON header"),
        (b'{"format": "chronomem", "version": 3}\n' + b"[" * 100_000 + b"\n", ":2: not JSON"),
        (b'{"format": "chronomem", "version": 3}\n[1]\n', ":2: not a JSON object"),
    ],
)
def test_a_malformed_archive_is_a_typed_error_that_says_where(
    small: Memory, tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(content)
    with pytest.raises(InvalidInputError, match=message):
        small.import_(path)
    assert small.stats()["records"] == 1
