"""The Generative Agents importer on a small fixture with the format's known defects."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chronomem import EvidenceStatus, InvalidInputError, Kind, Memory, SimClock
from chronomem.cli.main import main


def node(n: int, kind: str, created: str, text: str, poignancy: int = 3, depth: int = 0,
         filling: object = None) -> dict[str, object]:  # fmt: skip
    subject, _, rest = text.partition(" is ")
    return {
        "node_count": n, "type_count": n, "type": kind, "depth": depth, "created": created,
        "expiration": None, "subject": subject, "predicate": "is", "object": rest,
        "description": text, "embedding_key": text, "poignancy": poignancy,
        "keywords": [subject.lower()], "filling": filling if filling is not None else [],
    }  # fmt: skip


@pytest.fixture
def persona(tmp_path: Path) -> Path:
    root = tmp_path / "Isabella Rodriguez" / "bootstrap_memory"
    folder = root / "associative_memory"
    folder.mkdir(parents=True)
    nodes = {
        "node_1": node(1, "event", "2023-02-13 07:00:00", "Isabella is waking up", 1),
        "node_2": node(2, "event", "2023-02-13 08:00:00", "Isabella is opening Hobbs Cafe", 3),
        "node_3": node(3, "chat", "2023-02-13 09:00:00", "conversing about the party", 5,
                       filling=[["Isabella", "Will you come?"], ["Maria", "Yes!"]]),
        # node_4 and node_5 are missing: a gap in the keys
        "node_6": node(6, "thought", "2023-02-13 10:00:00", "Isabella is excited about the party",
                       6, depth=1, filling=["node_2", "node_3"]),
        "node_7": node(7, "dream", "2023-02-13 11:00:00", "Isabella is dreaming of Paris", 4),
        "node_8": node(8, "thought", "2023-02-13 12:00:00", "Isabella is a community builder",
                       8, depth=3, filling=["node_6", "node_5"]),  # node_5 dangles; depth wrong
        "node_9": node(9, "thought", "this is blank", "Isabella is blank", 1),
        "node_10": node(10, "thought", "2023-02-13 13:00:00", "Isabella is planning", 5,
                        depth=1, filling="node_1"),  # a string, not a list
    }  # fmt: skip
    (folder / "nodes.json").write_text(json.dumps(nodes))
    (folder / "embeddings.json").write_text(json.dumps(
        {n["embedding_key"]: [0.1 * i, 1.0, 0.0] for i, n in enumerate(nodes.values())}
    ))  # fmt: skip
    (folder / "kw_strength.json").write_text(json.dumps({"kw_strength_event": {}}))
    (root / "scratch.json").write_text(json.dumps({
        "name": "Isabella Rodriguez", "recency_w": 1, "relevance_w": 1, "importance_w": 1,
        "recency_decay": 0.99, "importance_trigger_max": 150, "importance_trigger_curr": 110,
    }))  # fmt: skip
    return root.parent


def test_imports_what_it_can_and_reports_every_problem_by_node(
    persona: Path, db_path: Path, clock: SimClock
) -> None:
    with Memory.open(db_path, embedder=None, clock=clock) as mem:
        report = mem.import_generative_agents(persona)
        assert report.agent == "Isabella Rodriguez"
        assert report.imported == 7  # 8 nodes, one without a readable time
        assert sorted(report.node_ids) == ["node_1", "node_10", "node_2", "node_3", "node_6",
                                           "node_7", "node_8"]  # fmt: skip
        text = [str(p) for p in report.problems]

        def said(fragment: str) -> bool:
            return any(fragment in t for t in text)

        assert said("node_4..node_5: missing")
        assert said("node_7: unknown type 'dream'")
        assert said("node_8: cites node_5, which does not exist")
        assert said("node_8: saved depth 3 differs from the recomputed 2")
        assert said("node_10: evidence is the string 'node_1'")
        assert said("node_9: created 'this is blank' is not a time; not imported")
        assert said("never stored last_accessed")
        assert said("kw_strength.json")

        ids = report.node_ids
        thought = mem.get(ids["node_6"])
        assert (thought.kind, thought.depth) == (Kind.REFLECTION, 1)
        assert thought.evidence == (ids["node_2"], ids["node_3"])
        community = mem.get(ids["node_8"])
        assert (community.depth, community.evidence) == (2, (ids["node_6"],))
        assert community.evidence_status is EvidenceStatus.MISSING
        assert mem.get(ids["node_10"]).evidence == (ids["node_1"],)
        dream = mem.get(ids["node_7"])
        assert (dream.kind, dream.metadata["ga_type"]) == (Kind.OBSERVATION, "dream")
        chat = mem.get(ids["node_3"])
        assert chat.metadata["ga_conversation"][1] == ["Maria", "Yes!"]
        woke = mem.get(ids["node_1"])
        assert woke.recorded_at == woke.last_accessed_at == woke.occurred_at
        assert woke.recorded_at.isoformat() == "2023-02-13T07:00:00+00:00"
        assert woke.metadata["ga_node_id"] == "node_1"
        assert mem.dim == 3  # the file's vectors, used as caller-supplied (no embedder)
        assert report.accumulated_importance == 40
        assert mem.accumulated_importance("Isabella Rodriguez") == 40
        assert report.preset is not None
        assert report.preset.recency_decay == 0.99
        # The imported persona answers reads under its own settings.
        hits = mem.peek("party", agent="Isabella Rodriguez", preset=report.preset,
                        query_embedding=[0.0, 1.0, 0.0])  # fmt: skip
        assert hits


def test_the_cli_imports_the_format(
    persona: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "cli.db")
    code = main(["import", "--format", "generative-agents", str(persona), "--db", db,
                 "--no-embedder", "--agent", "isabella"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0
    assert "imported 7 records for isabella" in out
    assert "node_7: unknown type 'dream'" in out


def test_a_folder_without_nodes_is_refused(tmp_path: Path, db_path: Path) -> None:
    with (
        Memory.open(db_path, embedder=None) as mem,
        pytest.raises(InvalidInputError, match=r"nodes\.json"),
    ):
        mem.import_generative_agents(tmp_path)
