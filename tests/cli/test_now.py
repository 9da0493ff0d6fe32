"""Simulated time on the command line: ``--now`` and ``CHRONOMEM_NOW`` fix the command's clock;
writes refuse to move a space's time backwards; outputs show ``occurred_at``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem.cli.main import build_parser

from .invoke import run


def test_now_stamps_the_write_and_the_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "n.db"), "--no-embedder")
    _, out, _ = run(capsys, "remember", "the lamp is broken", "--now", "2024-03-01T09:00:00Z",
                    *common)  # fmt: skip
    rid = out.strip()
    _, out, _ = run(capsys, "show", rid, "--json", *common)
    record = json.loads(out)
    assert record["recorded_at"] == "2024-03-01T09:00:00+00:00"
    assert record["occurred_at"] == "2024-03-01T09:00:00+00:00"
    assert record["last_accessed_at"] == "2024-03-01T09:00:00+00:00"
    # a read at a simulated now: recency measured to it, the touch stamped with it
    _, out, _ = run(capsys, "recall", "lamp", "--json", "--explain",
                    "--now", "2024-03-02T09:00:00Z", *common)  # fmt: skip
    hit = json.loads(out)[0]
    assert hit["breakdown"]["age_seconds"] == 86400
    _, out, _ = run(capsys, "show", rid, "--json", *common)
    assert json.loads(out)["last_accessed_at"] == "2024-03-02T09:00:00+00:00"


def test_the_environment_sets_now_and_the_flag_wins(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    common = ("--db", str(tmp_path / "e.db"), "--no-embedder", "--json")
    monkeypatch.setenv("CHRONOMEM_NOW", "2024-05-01T00:00:00Z")
    _, out, _ = run(capsys, "event", "the dam cracked", *common)
    assert json.loads(out)["recorded_at"] == "2024-05-01T00:00:00+00:00"
    _, out, _ = run(capsys, "event", "the valley flooded", "--now", "2024-05-02T00:00:00Z",
                    *common)  # fmt: skip
    assert json.loads(out)["recorded_at"] == "2024-05-02T00:00:00+00:00"
    monkeypatch.setenv("CHRONOMEM_NOW", "yesterday")
    code, _, err = run(capsys, "stats", *common)
    assert code == 1
    assert err.startswith("chronomem: error: CHRONOMEM_NOW is not an ISO 8601 instant: 'yesterday'")


def test_a_write_may_not_move_the_space_backwards(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "b.db"), "--no-embedder")
    _, out, _ = run(capsys, "remember", "day two", "--now", "2024-03-02T00:00:00Z", *common)
    rid = out.strip()
    for argv in (
        ["remember", "day one"],
        ["verify", rid],
        ["close", rid, "--reason", "r"],
        ["event", "a storm"],
        ["supersede", rid, "day two, corrected"],
    ):
        code, _, err = run(capsys, *argv, "--now", "2024-03-01T00:00:00Z", *common)
        assert code == 1, argv
        assert err.startswith(
            "chronomem: error: --now 2024-03-01T00:00:00+00:00 is before the newest write in "
            "space 'default' (2024-03-02T00:00:00+00:00)"
        ), err
        assert err.count("\n") == 1
    _, out, _ = run(capsys, "stats", "--json", *common)
    assert json.loads(out)["records"] == 1  # nothing was written
    # reads may look back; the same instant and later may write
    assert run(capsys, "recall", "day", "--no-touch", "--now", "2024-03-01T00:00:00Z",
               *common)[0] == 0  # fmt: skip
    assert run(capsys, "verify", rid, "--now", "2024-03-02T00:00:00Z", *common)[0] == 0
    # the audit entry of that verify is now the newest write
    code, _, err = run(capsys, "remember", "x", "--now", "2024-03-01T12:00:00Z", *common)
    assert code == 1


def test_outputs_show_occurred_at(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--db", str(tmp_path / "o.db"), "--no-embedder")
    _, out, _ = run(capsys, "remember", "the lighthouse lamp is broken", "--occurred-at",
                    "2024-03-01T08:00:00Z", *common)  # fmt: skip
    rid = out.strip()
    _, out, _ = run(capsys, "recall", "lamp", "--no-touch", *common)
    assert "2024-03-01 08:00" in out
    _, out, _ = run(capsys, "history", rid, *common)
    assert "2024-03-01 08:00" in out


def test_now_through_the_service_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "stats", "--server", "http://127.0.0.1:9", "--now",
                       "2024-03-01T00:00:00Z")  # fmt: skip
    assert code == 1
    assert "space's clock applies" in err


def test_every_command_takes_now() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    without = []
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        leaves = [command]
        subs = [a for a in command._actions if a.dest.endswith("_command")]
        if subs:
            leaves = list(subs[0].choices.values())  # type: ignore[union-attr]
        for leaf in leaves:
            if "now" not in {a.dest for a in leaf._actions}:
                without.append(f"{name} {leaf.prog}")
    # migrate copies stamps and makes none; completion prints a script
    assert sorted(without) == ["completion chronomem completion", "migrate chronomem migrate"]
