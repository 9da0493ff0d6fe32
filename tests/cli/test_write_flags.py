"""Every field of ``remember`` as a flag; the text positional everywhere; the same ``--reason``
on every lifecycle command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem.cli.main import build_parser, main

from .invoke import run


def test_remember_takes_every_field(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--db", str(tmp_path / "w.db"), "--no-embedder")
    _, out, _ = run(capsys, "event", "the dam cracked", "--json", *common)
    dam = json.loads(out)["id"]
    _, cited, _ = run(capsys, "remember", "a crack ran up the dam wall", *common)
    code, out, err = run(
        capsys, "remember", "the valley road is closed", "--agent", "miller", "--kind", "fact",
        "--importance", "6", "--occurred-at", "2024-03-01T08:00:00Z",
        "--valid-from", "2024-03-01T00:00:00Z", "--valid-until", "2024-04-01T00:00:00Z",
        "--domain", "roads", "--tag", "flood", "--tags", "road, closure",
        "--metadata", '{"source": "radio", "confidence": 0.8}', "--evidence", cited.strip(),
        "--event", dam, "--sensitivity", "personal", "--actor", "ana", "--json", *common,
    )  # fmt: skip
    assert code == 0, err
    rid = json.loads(out)["id"]
    _, out, _ = run(capsys, "show", rid, "--json", *common)
    record = json.loads(out)
    assert record["agent"] == "miller"
    assert record["kind"] == "fact"
    assert record["importance"] == 6
    assert record["occurred_at"] == "2024-03-01T08:00:00+00:00"
    assert record["valid_from"] == "2024-03-01T00:00:00+00:00"
    assert record["valid_until"] == "2024-04-01T00:00:00+00:00"
    assert record["domain"] == "roads"
    assert record["tags"] == ["flood", "road", "closure"]
    assert record["metadata"] == {"source": "radio", "confidence": 0.8}
    assert record["evidence"] == [cited.strip()]
    assert record["event_id"] == dam
    assert record["sensitivity"] == "personal"


def test_every_remember_keyword_has_a_flag() -> None:
    import inspect

    from chronomem import Memory

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    remember = sub.choices["remember"]  # type: ignore[index]
    dests = {a.dest for a in remember._actions}
    vectors = {"embedding", "passage_embeddings"}  # vectors are not typed at a shell
    keywords = set(inspect.signature(Memory.remember).parameters) - {"self", *vectors}
    aliases = {"tags": "tag"}
    missing = {k for k in keywords if k not in dests and aliases.get(k) not in dests}
    assert missing == set()


def test_supersede_takes_the_text_positionally_and_every_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "s.db"), "--no-embedder")
    _, out, _ = run(capsys, "remember", "install packages with npm", "--kind", "instruction",
                    *common)  # fmt: skip
    npm = out.strip()
    code, out, err = run(
        capsys, "supersede", npm, "install packages with pnpm", "--reason", "team moved",
        "--valid-from", "2024-02-01T00:00:00Z", "--tags", "tooling", "--json", *common,
    )  # fmt: skip
    assert code == 0, err
    assert err == ""
    pnpm = json.loads(out)["id"]
    _, out, _ = run(capsys, "show", pnpm, "--json", *common)
    new = json.loads(out)
    assert (new["text"], new["kind"], new["tags"]) == ("install packages with pnpm",
                                                       "instruction", ["tooling"])  # fmt: skip
    assert new["supersedes"] == [npm]
    # the old spelling still works, with a note
    code, out, err = run(capsys, "supersede", pnpm, "--text", "install packages with bun", *common)
    assert code == 0
    assert "deprecated" in err
    # two ids, one text
    _, a, _ = run(capsys, "remember", "the gate is red", "--kind", "fact", *common)
    _, b, _ = run(capsys, "remember", "the gate is painted red", "--kind", "fact",
                  "--domain", "paint", *common)  # fmt: skip
    code, out, err = run(capsys, "supersede", a.strip(), b.strip(), "the gate is green", *common)
    assert code == 0, err
    _, out, _ = run(capsys, "show", a.strip(), "--json", *common)
    assert json.loads(out)["status"] == "superseded"


@pytest.mark.parametrize(
    ("command", "required"),
    [("supersede", False), ("verify", False), ("feedback", False), ("close", True),
     ("forget", True)],
)  # fmt: skip
def test_reason_is_the_same_flag_everywhere(
    command: str, required: bool, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    expected = "required" if required else "optional"
    assert f"--reason REASON why (kept in the audit log; {expected})" in help_text


def test_events_links_and_backfills_take_the_librarys_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The flags the drift test found missing: ``event --metadata``, ``link --provenance
    --similarity``, ``embed-records`` / ``embed-passages --batch``, ``access-log show --limit``
    defaulting to the library's 100."""
    common = ("--db", str(tmp_path / "g.db"), "--no-embedder")
    _, rain, _ = run(
        capsys, "event", "heavy rain", "--occurred-at", "2024-03-01T00:00:00Z",
        "--metadata", '{"mm": 80}', "--json", *common,
    )  # fmt: skip
    _, flood, _ = run(
        capsys, "event", "the river flooded", "--occurred-at", "2024-03-02T00:00:00Z", "--json",
        *common,
    )  # fmt: skip
    rain_id, flood_id = json.loads(rain)["id"], json.loads(flood)["id"]
    assert json.loads(rain)["metadata"] == {"mm": 80}
    code, out, err = run(
        capsys, "link", rain_id, flood_id, "--weight", "0.5", "--provenance", "inferred",
        "--similarity", "0.7", "--json", *common,
    )  # fmt: skip
    assert code == 0, err
    link = json.loads(out)
    assert (link["provenance"], link["similarity"], link["weight"]) == ("inferred", 0.7, 0.5)
    parser = build_parser()
    for command in ("embed-records", "embed-passages"):
        assert parser.parse_args([command, "--batch", "10"]).batch == 10
        assert parser.parse_args([command]).batch == 512  # the library's default
    assert parser.parse_args(["access-log", "show"]).limit == 100


def test_the_commands_the_drift_test_found_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dependants``, ``show --event``, ``auto-link``, ``review list`` and ``reflect
    --importance`` / ``--as-of`` / ``--touch``: what the library, HTTP and the clients had."""
    common = ("--db", str(tmp_path / "d.db"), "--no-embedder")
    _, out, _ = run(capsys, "remember", "the mill wheel is cracked", "--json", *common)
    old = json.loads(out)["id"]
    _, out, _ = run(capsys, "supersede", old, "the mill wheel was mended", "--json", *common)
    new = json.loads(out)["id"]
    code, out, _ = run(capsys, "dependants", old, "--json", *common)
    assert (code, json.loads(out)) == (0, [{"record_id": new, "relation": "supersedes it"}])
    _, out, _ = run(capsys, "dependants", new, *common)
    assert out.strip() == f"{old}  is superseded by it"
    _, rain, _ = run(
        capsys, "event", "heavy rain", "--occurred-at", "2024-03-01T00:00:00Z", "--json", *common
    )
    rain_id = json.loads(rain)["id"]
    code, out, _ = run(capsys, "show", rain_id, "--event", "--json", *common)
    assert (code, json.loads(out)["text"]) == (0, "heavy rain")
    code, _, err = run(capsys, "auto-link", rain_id, "--window", "7d", *common)
    assert code == 1  # the verb's own refusal: similarity needs the events' vectors
    assert "auto_link needs event vectors" in err
    args = build_parser().parse_args(["auto-link", rain_id, "--window", "7d"])
    assert (args.window.days, args.threshold, args.weight_scale) == (7, None, 0.5)
    code, out, _ = run(capsys, "review", "list", "--json", *common)
    assert (code, json.loads(out)) == (0, [])
    code, out, _ = run(capsys, "reflect", "--agent", "default", "--importance", "--json", *common)
    state = json.loads(out)
    assert (code, state["agent"], state["threshold"]) == (0, "default", 150.0)
    assert state["accumulated"] > 0
    args = build_parser().parse_args(
        ["reflect", "--agent", "a", "--as-of", "2024-03-01T00:00:00Z", "--touch"]
    )
    assert (args.as_of.year, args.touch) == (2024, True)
    assert build_parser().parse_args(["reflect", "--agent", "a"]).touch is None
