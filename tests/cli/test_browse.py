"""Browsing from the CLI (``list``, ``events``, ``links``, paged) and ``--json`` on every verb."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem.cli.main import build_parser

from .invoke import run

DAY = "2024-03-0{}T09:00:00Z"


@pytest.fixture
def scene(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Two agents over four simulated days: a superseded fact, a closed instruction, events."""
    common = ("--db", str(tmp_path / "b.db"), "--no-embedder", "--json")

    def say(*argv: str) -> str:
        code, out, err = run(capsys, *argv, *common)
        assert code == 0, err
        return str(json.loads(out)["id"])

    ids = {
        "bread": say("remember", "bread costs 2 pennies", "--agent", "ada", "--kind", "fact",
                     "--now", DAY.format(1)),
        "walk": say("remember", "walked to the mill", "--agent", "bo", "--now",
                    "2024-03-01T10:00:00Z"),
        "sing": say("remember", "sing at dawn", "--agent", "bo", "--kind", "instruction",
                    "--now", DAY.format(2)),
        "drought": say("event", "a drought", "--now", DAY.format(2)),
    }  # fmt: skip
    ids["bread3"] = say("supersede", ids["bread"], "bread costs 3 pennies", "--now", DAY.format(3))
    run(capsys, "close", ids["sing"], "--reason", "the rooster does it", "--now", DAY.format(3),
        *common)  # fmt: skip
    ids["riot"] = say("event", "a riot", "--kind", "crisis", "--now", DAY.format(4))
    run(capsys, "link", ids["drought"], ids["riot"], "--weight", "0.7", "--now", DAY.format(4),
        *common)  # fmt: skip
    ids["db"] = str(tmp_path / "b.db")
    return ids


def _ids(capsys: pytest.CaptureFixture[str], scene: dict[str, str], *argv: str) -> list[str]:
    code, out, err = run(capsys, *argv, "--db", scene["db"], "--no-embedder", "--json")
    assert code == 0, err
    return [item["id"] for item in json.loads(out)]


def test_list_filters_by_agent_kind_state_window_and_as_of(
    scene: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    s = scene
    assert _ids(capsys, s, "list") == [s["bread3"], s["walk"]]  # what a read sees, newest first
    assert _ids(capsys, s, "list", "--include-history") == [s["bread3"], s["sing"], s["walk"],
                                                            s["bread"]]  # fmt: skip
    assert _ids(capsys, s, "list", "--agent", "bo", "--include-history") == [s["sing"], s["walk"]]
    facts = _ids(capsys, s, "list", "--kind", "fact", "--include-history")
    assert facts == [s["bread3"], s["bread"]]
    assert _ids(capsys, s, "list", "--state", "superseded") == [s["bread"]]
    assert _ids(capsys, s, "list", "--state", "closed") == [s["sing"]]
    assert _ids(capsys, s, "list", "--state", "open") == [s["bread3"], s["walk"]]
    # as of day 2 nothing had ended yet, and day 3's record did not exist
    as_of = ("--as-of", "2024-03-02T12:00:00Z")
    assert _ids(capsys, s, "list", "--state", "open", *as_of) == [s["sing"], s["walk"], s["bread"]]
    assert _ids(capsys, s, "list", "--state", "superseded", *as_of) == []
    window = ("--since", DAY.format(2), "--until", DAY.format(3), "--include-history")
    assert _ids(capsys, s, "list", *window) == [s["sing"]]


def test_list_pages(scene: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    every = _ids(capsys, scene, "list", "--include-history")
    pages = [
        _ids(capsys, scene, "list", "--include-history", "--limit", "3", "--offset", str(at))
        for at in (0, 3, 6)
    ]
    assert pages[0] + pages[1] == every
    assert pages[2] == []
    code, out, err = run(capsys, "list", "--include-history", "--limit", "3", "--db",
                         scene["db"], "--no-embedder")  # fmt: skip
    assert code == 0
    assert len(out.strip().split("\n")) == 3
    assert "more: --offset 3" in err
    assert "2024-03-01 10:00  [bo observation]  walked to the mill" in out


def test_events_and_links(scene: dict[str, str], capsys: pytest.CaptureFixture[str]) -> None:
    s = scene
    assert _ids(capsys, s, "events") == [s["drought"], s["riot"]]
    assert _ids(capsys, s, "events", "--kind", "crisis") == [s["riot"]]
    assert _ids(capsys, s, "events", "--as-of", "2024-03-03T00:00:00Z") == [s["drought"]]
    _, out, _ = run(capsys, "links", "--db", s["db"], "--no-embedder", "--json")
    links = json.loads(out)
    assert [(k["cause"], k["effect"], k["weight"]) for k in links] == [
        (s["drought"], s["riot"], 0.7)
    ]
    _, out, _ = run(capsys, "links", "--event", s["riot"], "--db", s["db"], "--no-embedder")
    assert "a drought  ->  a riot" in out
    _, out, _ = run(capsys, "links", "--as-of", DAY.format(3), "--db", s["db"], "--no-embedder",
                    "--json")  # fmt: skip
    assert json.loads(out) == []


def _leaves() -> list[tuple[str, object]]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    found = []
    for name, command in sub.choices.items():  # type: ignore[union-attr]
        subs = [a for a in command._actions if a.dest.endswith("_command")]
        if subs:
            found += [(f"{name} {n}", c) for n, c in subs[0].choices.items()]  # type: ignore[union-attr]
        else:
            found.append((name, command))
    return found


def test_every_verb_takes_json() -> None:
    without = [name for name, p in _leaves() if "json" not in {a.dest for a in p._actions}]  # type: ignore[attr-defined]
    assert sorted(without) == ["completion"]  # it prints a script


def test_json_outputs_are_one_document(
    scene: dict[str, str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    s = scene
    common = ("--db", s["db"], "--no-embedder", "--json", "--now", DAY.format(5))
    for argv in (
        ["verify", s["walk"]],
        ["feedback", s["walk"], "helpful"],
        ["export", str(tmp_path / "out.jsonl")],
        ["audit"],
        ["stats"],
        ["history", s["bread"]],
        ["context", "bread"],
        ["ancestors", s["riot"]],
        ["core", "append", "persona", "I bake.", "--agent", "ada"],
        ["access-log", "on"],
        ["review"],
        ["link", s["drought"], s["riot"], "--remove"],
    ):
        code, out, err = run(capsys, *argv, *common)
        assert code == 0, (argv, err)
        json.loads(out)  # exactly one document
    code, out, err = run(capsys, "import", str(tmp_path / "out.jsonl"), "--json", "--db",
                         str(tmp_path / "copy.db"), "--no-embedder")  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["records"] == 4  # exported before the core block was written
