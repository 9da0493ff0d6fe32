"""The chronomem command, in process, on real store files."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from chronomem.cli.main import build_parser, main

from .invoke import run

README = Path(__file__).resolve().parents[2] / "README.md"


def test_remember_recall_show_stats_export_import(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    common = ("--db", db, "--no-embedder")
    code, out, _ = run(
        capsys,
        "remember",
        "the lighthouse lamp is broken",
        "--agent",
        "keeper",
        "--importance",
        "7",
        "--occurred-at",
        "2024-03-01T08:00:00Z",
        *common,
    )
    assert code == 0
    rid = out.strip()
    run(capsys, "remember", "fish prices rose at the market", "--agent", "keeper", *common)

    code, out, _ = run(capsys, "recall", "lamp", "--explain", "--no-touch", *common)
    assert code == 0
    assert rid in out
    assert "relevance" in out
    assert "lexical" in out

    code, out, _ = run(capsys, "recall", "lamp", "--json", "-k", "1", *common)
    hits = json.loads(out)
    assert hits[0]["record"]["id"] == rid
    assert hits[0]["record"]["occurred_at"] == "2024-03-01T08:00:00+00:00"

    code, out, _ = run(capsys, "show", rid, "--json", *common)
    assert json.loads(out)["importance"] == 7

    code, out, _ = run(capsys, "stats", "--json", *common)
    assert json.loads(out)["records"] == 2

    archive = str(tmp_path / "out.jsonl")
    assert run(capsys, "export", archive, *common)[0] == 0
    other = ("--db", str(tmp_path / "other.db"), "--no-embedder")
    code, out, _ = run(capsys, "import", archive, *other)
    assert code == 0
    assert "imported 2 records" in out


def test_errors_are_one_line_and_exit_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--db", str(tmp_path / "e.db"), "--no-embedder")
    code, _out, err = run(capsys, "show", "01ABCDEFGHJKMNPQRSTVWXYZ00", *common)
    assert code == 1
    assert err.startswith("chronomem: error: ")
    assert err.count("\n") == 1
    code, _, err = run(capsys, "remember", "x", "--importance", "42", *common)
    assert code == 1
    assert "importance" in err
    code, _, err = run(capsys, "import", str(tmp_path / "missing.jsonl"), *common)
    assert code == 1
    assert "no such file" in err


def test_naive_times_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["recall", "x", "--as-of", "2024-01-01T00:00:00", "--db", str(tmp_path / "n.db")])
    assert exc.value.code == 2
    assert "no UTC offset" in capsys.readouterr().err


def _commands() -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help_and_is_documented(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: chronomem" in capsys.readouterr().out
    assert re.search(rf"chronomem {command}\b", README.read_text()), f"README lacks {command}"


def test_lifecycle_verbs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--db", str(tmp_path / "life.db"), "--no-embedder")
    _, out, _ = run(
        capsys, "remember", "install packages with npm", "--kind", "instruction", *common
    )
    npm = out.strip()
    code, out, _ = run(capsys, "supersede", npm, "--text", "install packages with pnpm",
                       "--reason", "team moved", "--actor", "ana", *common)  # fmt: skip
    assert code == 0
    pnpm = out.strip()
    _, out, _ = run(capsys, "history", npm, *common)
    assert out.index(npm) < out.index(pnpm)
    assert f"superseded by {pnpm}" in out

    _, out, _ = run(capsys, "recall", "install packages", "--no-touch", *common)
    assert pnpm in out
    assert npm not in out
    _, out, _ = run(
        capsys, "recall", "install packages", "--include-history", "--no-touch", *common
    )
    assert pnpm in out
    assert npm in out

    _, out, _ = run(capsys, "remember", "retry flaky tests until green", "--kind", "instruction",
                    *common)  # fmt: skip
    retry = out.strip()
    assert (
        run(capsys, "feedback", retry, "harmful", "--reason", "hid a regression", *common)[0] == 0
    )
    assert run(capsys, "verify", pnpm, *common)[0] == 0
    assert run(capsys, "close", retry, "--reason", "replaced by a policy", *common)[0] == 0
    code, _, err = run(capsys, "close", retry, "--reason", "twice", *common)
    assert code == 1
    assert "already closed" in err

    code, _, err = run(capsys, "forget", npm, "--reason", "cleanup", *common)
    assert code == 1
    assert pnpm in err  # the dependant is named
    _, out, _ = run(capsys, "remember", "my PIN is 4921", "--sensitivity", "secret", *common)
    assert (
        run(capsys, "forget", out.strip(), "--reason", "secret", *common)[1]
        .strip()
        .endswith("purged")
    )

    _, out, _ = run(capsys, "audit", "--json", *common)
    actions = [e["action"] for e in json.loads(out)]
    assert actions[0] == "supersede"
    assert {"feedback", "verify", "close", "purge"} <= set(actions)
    assert json.loads(out)[0]["actor"] == "ana"


def test_graph_verbs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ("--db", str(tmp_path / "graph.db"), "--no-embedder")
    _, out, _ = run(capsys, "event", "the dam cracked", "--occurred-at", "2024-03-01T00:00:00Z",
                    *common)  # fmt: skip
    dam = out.strip()
    _, out, _ = run(capsys, "event", "the valley flooded", "--kind", "crisis", *common)
    flood = out.strip()
    assert run(capsys, "link", dam, flood, "--weight", "0.8", *common)[0] == 0
    code, _, err = run(capsys, "link", dam, dam, *common)
    assert code == 1
    assert "cannot cause itself" in err
    _, out, _ = run(capsys, "ancestors", flood, "--json", *common)
    ancestors = json.loads(out)
    assert [(a["event"]["id"], a["depth"], a["strength"]) for a in ancestors] == [(dam, 1, 0.8)]
    run(capsys, "remember", "I heard a loud crack upstream", "--agent", "miller", *common)
    _, out, _ = run(capsys, "context", "why is the valley flooded?", "--crisis", flood,
                    "--no-touch", *common)  # fmt: skip
    assert "Causal chain (root → crisis" in out
    assert "the dam cracked (2024-03-01) —0.80→ the valley flooded" in out
    _, out, _ = run(capsys, "context", "--crisis", flood, "--json", "--no-touch", *common)
    assert json.loads(out)["question"] == "the valley flooded"
    _, out, _ = run(capsys, "recall", "crack", "--crisis", flood, "--explain", "--no-touch",
                    *common)  # fmt: skip
    assert "I heard a loud crack upstream" in out
    assert run(capsys, "link", dam, flood, "--remove", *common)[1].strip() == "removed"


def test_recall_asker_favours_the_askers_own_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "a.db"), "--no-embedder")
    run(capsys, "remember", "user: my bike is the blue one", *common)
    run(capsys, "remember", "assistant: a blue bike suits you", *common)
    code, out, _ = run(capsys, "recall", "which bike is mine?", "--asker", "user", "--explain",
                       "--no-touch", *common)  # fmt: skip
    assert code == 0
    first = out.split("\n")[1]
    assert "user: my bike is the blue one" in first
    assert "user's line: the question speaks in the first person" in out


def test_embed_passages_needs_an_embedder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "p.db"), "--no-embedder")
    run(capsys, "remember", "user: one sentence. And another one.", *common)
    code, _, err = run(capsys, "embed-passages", *common)
    assert code == 1
    assert "needs an embedder" in err


@pytest.mark.parametrize(
    "args",
    [
        ["stats"],
        ["recall", "lamp"],
        ["show", "01ABCDEFGHJKMNPQRSTVWXYZ00"],
        ["history", "01ABCDEFGHJKMNPQRSTVWXYZ00"],
        ["audit"],
        ["verify", "01ABCDEFGHJKMNPQRSTVWXYZ00"],
        ["forget", "01ABCDEFGHJKMNPQRSTVWXYZ00", "--reason", "typo"],
        ["ancestors", "01ABCDEFGHJKMNPQRSTVWXYZ00"],
        ["context", "lamp"],
        ["embed-records"],
        ["export", "out.jsonl"],
        ["migrate", "--from", "typo.db", "--to", "copy.db"],
    ],
)
def test_commands_that_do_not_add_to_a_store_create_none(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    args: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    common = [] if args[0] == "migrate" else ["--db", "typo.db", "--no-embedder"]
    code, _, err = run(capsys, *args, *common)
    assert code == 1
    assert err.startswith("chronomem: error: no chronomem store at typo.db")
    assert list(tmp_path.iterdir()) == []


def test_a_write_the_gate_refuses_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    common = ("--db", str(tmp_path / "g.db"), "--no-embedder")
    code, first, _ = run(capsys, "remember", "Use pnpm", "--kind", "instruction", *common)
    assert code == 0
    code, out, _ = run(capsys, "remember", "use  PNPM", "--kind", "instruction", *common)
    assert code == 1
    assert (
        out.strip() == f"not stored: near-duplicate of {first.strip()} (the same normalised text)"
    )
    code, out, _ = run(capsys, "remember", "use pnpm", "--kind", "instruction", "--json", *common)
    assert code == 1
    assert json.loads(out)["stored"] is False


def test_records_without_vectors_need_asking_for_in_a_model_built_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from chronomem import Memory

    from ..conftest import FixedEmbedder

    db = str(tmp_path / "model.db")
    with Memory.open(db, embedder=FixedEmbedder(dim=4, model_id="test/model")) as mem:
        mem.remember("built with a model")
    common = ("--db", db, "--no-embedder")
    code, _, err = run(capsys, "remember", "no vector", *common)
    assert code == 1
    assert "never match by meaning" in err
    code, _, _ = run(capsys, "remember", "no vector", "--allow-missing-vectors", *common)
    assert code == 0
    code, _, err = run(capsys, "embed-records", *common)
    assert code == 1
    assert "needs an embedder" in err
