"""``chronomem watch``: the change feed on stdout, from a position, as lines or JSON, and
following a store while another process writes to it."""

from __future__ import annotations

import json
import re
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chronomem import Memory

from ..conftest import unit
from .invoke import run

ROOT = Path(__file__).resolve().parents[2]


def _seed(db: Path) -> list[str]:
    with Memory.open(db, space="town", embedder=None) as mem:
        first = mem.remember("Isabella plans a party", agent="isabella", embedding=unit(1, 0))
        second = mem.supersede(first.id, "the party moved to 6pm", embedding=unit(1, 0.1))
        return [str(first.id), str(second.id)]


def test_watch_prints_the_feed_from_a_position(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "town.db"
    first, second = _seed(db)
    code, out, _ = run(capsys, "watch", "--db", str(db), "--space", "town")
    assert code == 0
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["#1", "#2", "#3"]
    when = r"\d{4}-\d\d-\d\d \d\d:\d\d"
    assert re.fullmatch(
        rf"#1  {when}  write +{first}  isabella  'Isabella plans a party'", lines[0]
    )
    assert re.fullmatch(rf"#3  {when}  supersede {first}", lines[2])
    code, out, _ = run(capsys, "watch", "--db", str(db), "--space", "town", "--after", "1",
                       "--json")  # fmt: skip
    events = [json.loads(line) for line in out.splitlines()]
    assert [(e["seq"], e["kind"], e["record_id"]) for e in events] == [
        (2, "write", second),
        (3, "supersede", first),
    ]
    code, _, err = run(capsys, "watch", "--db", str(db), "--space", "town", "--after", "-1")
    assert code == 2
    assert "--after" in err
    code, _, err = run(capsys, "watch", "--db", str(db), "--space", "town", "--interval", "-1")
    assert code == 2
    assert "--interval" in err


def test_watch_follows_what_another_process_writes(tmp_path: Path) -> None:
    db = tmp_path / "town.db"
    _seed(db)
    command = [sys.executable, "-m", "chronomem.cli.main", "watch", "--db", str(db), "--space",
               "town", "--follow", "--json", "--interval", "0.1", "--after", "3"]  # fmt: skip
    env = {"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"}
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    try:
        time.sleep(1.0)  # it is following, with nothing after #3 yet
        with Memory.open(db, space="town", embedder=None) as other:
            written = other.remember("the band arrives at 7", embedding=unit(0, 1)).id
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 20)
        assert ready, "watch --follow printed nothing within 20 s of the write"
        event = json.loads(proc.stdout.readline())
        assert (event["seq"], event["record_id"], event["text"]) == (
            4,
            written,
            "the band arrives at 7",
        )
    finally:
        proc.terminate()
        proc.wait(timeout=20)
