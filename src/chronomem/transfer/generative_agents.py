"""Reading a Generative Agents persona's saved memory (the ``associative_memory/`` folder of
Park et al.'s reverie code) into chronomem records, with a report of everything that could not be
carried over exactly. It never crashes on the format's known defects and never skips silently.

The format: ``nodes.json`` maps ``node_1 .. node_N`` to nodes with ``node_count, type_count, type
(event | chat | thought), depth, created, expiration, subject, predicate, object, description,
embedding_key, poignancy, keywords, filling``; ``embeddings.json`` maps embedding keys to
vectors; ``kw_strength.json`` holds keyword strengths; the persona's ``scratch.json`` holds the
retrieval weights and the reflection trigger.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chronomem.checks import check_text, metadata_dict, require_text
from chronomem.config import PRESETS, ScoringConfig
from chronomem.errors import InvalidInputError
from chronomem.model.ids import IdFactory
from chronomem.model.record import EMBEDDING_KEY, EvidenceStatus, Kind, Record, Weights

__all__ = ["GAImportPlan", "GAImportReport", "Problem", "find_folder", "plan_import"]

_NODE_KEY = re.compile(r"^node_(\d+)$")
_TIME_FORMATS = ("%Y-%m-%d %H:%M:%S", "%B %d, %Y, %H:%M:%S", "%Y-%m-%dT%H:%M:%S")


@dataclass(frozen=True, slots=True)
class Problem:
    """Something the import could not carry over exactly. ``node`` is the node id (``None`` for
    the whole folder)."""

    node: str | None
    message: str

    def __str__(self) -> str:
        return f"{self.node}: {self.message}" if self.node else self.message


@dataclass(slots=True, kw_only=True)
class GAImportPlan:
    """Records to write (in node order), their vectors from ``embeddings.json`` by node id, the
    problems found, and what the scratch file says."""

    agent: str
    records: list[Record] = field(default_factory=list)
    vectors: dict[str, list[float]] = field(default_factory=dict)
    node_ids: dict[str, str] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    preset: ScoringConfig | None = None
    accumulated_importance: float | None = None


def find_folder(path: str | Path) -> Path:
    """The ``associative_memory`` folder given a persona folder, its ``bootstrap_memory``, or the
    folder itself."""
    base = Path(path)
    for candidate in (
        base,
        base / "associative_memory",
        base / "bootstrap_memory" / "associative_memory",
    ):
        if (candidate / "nodes.json").is_file():
            return candidate
    raise InvalidInputError(
        f"no nodes.json under {base} (looked in ., associative_memory/, "
        f"bootstrap_memory/associative_memory/)",
        field="path",
    )


def _load(path: Path, problems: list[Problem]) -> Any:
    if not path.is_file():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        problems.append(Problem(None, f"{path.name} is unreadable ({exc}); not used"))
        return None


def _time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    for fmt in _TIME_FORMATS:
        try:
            return datetime.strptime(value, fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    return None


def _invalid_text(text: str, node: Mapping[str, Any]) -> str | None:
    """Why the node's text or the fields kept in metadata cannot be stored (the API's text
    rule: no NUL, no lone surrogate), or ``None``."""
    try:
        check_text(text, "description")
        metadata_dict({k: node.get(k) for k in ("subject", "predicate", "object", "keywords",
                                                "filling")})  # fmt: skip
    except InvalidInputError as exc:
        return str(exc)
    return None


def _citations(node_id: str, filling: object, problems: list[Problem]) -> list[str]:
    if filling is None or filling == []:
        return []
    if isinstance(filling, str):
        problems.append(
            Problem(node_id, f"evidence is the string {filling!r}, not a list of node ids")
        )
        return [filling] if _NODE_KEY.match(filling) else []
    if not isinstance(filling, list):
        problems.append(Problem(node_id, f"evidence has type {type(filling).__name__}; ignored"))
        return []
    out = []
    for item in filling:
        if isinstance(item, str) and _NODE_KEY.match(item):
            out.append(item)
        else:
            problems.append(Problem(node_id, f"evidence entry {item!r} is not a node id; ignored"))
    return out


def _scratch_preset(scratch: Mapping[str, Any], problems: list[Problem]) -> ScoringConfig | None:
    base = PRESETS["generative-agents-code"]
    try:
        weights = Weights(
            relevance=3.0 * float(scratch.get("relevance_w", 1)),
            recency=0.5 * float(scratch.get("recency_w", 1)),
            importance=2.0 * float(scratch.get("importance_w", 1)),
        )
        decay = float(scratch.get("recency_decay", base.recency_decay))
        return replace(base, name="generative-agents-code (scratch)", weights=weights,
                       recency_decay=decay)  # fmt: skip
    except (TypeError, ValueError) as exc:
        problems.append(Problem(None, f"scratch.json retrieval settings unusable ({exc})"))
        return None


def plan_import(folder: Path, *, agent: str | None, space: str, ids: IdFactory) -> GAImportPlan:
    """Read the folder and build the records, collecting every problem."""
    problems: list[Problem] = []
    nodes = _load(folder / "nodes.json", problems)
    if not isinstance(nodes, dict):
        raise InvalidInputError(
            f"{folder / 'nodes.json'} is not a JSON object of nodes", field="path"
        )
    scratch = _load(folder.parent / "scratch.json", problems)
    scratch = scratch if isinstance(scratch, dict) else {}
    name = agent or scratch.get("name") or folder.parent.parent.name or "agent"
    plan = GAImportPlan(agent=require_text(str(name), "agent"), problems=problems)
    if scratch:
        plan.preset = _scratch_preset(scratch, problems)
        trigger_max, trigger_curr = (
            scratch.get("importance_trigger_max"),
            scratch.get("importance_trigger_curr"),
        )
        if isinstance(trigger_max, int | float) and isinstance(trigger_curr, int | float):
            plan.accumulated_importance = max(0.0, float(trigger_max) - float(trigger_curr))
    else:
        problems.append(
            Problem(
                None,
                "no scratch.json: retrieval weights and reflection trigger not carried over",
            )
        )

    numbered: list[tuple[int, str]] = []
    for key in nodes:
        match = _NODE_KEY.match(str(key))
        if match:
            numbered.append((int(match.group(1)), str(key)))
        else:
            problems.append(
                Problem(
                    str(key), "key is not of the form node_N; imported after the numbered nodes"
                )
            )
            numbered.append((10**9 + len(numbered), str(key)))
    numbered.sort()
    present = {n for n, _ in numbered if n < 10**9}
    if present:
        missing = sorted(set(range(1, max(present) + 1)) - present)
        for start, stop in _runs(missing):
            span = f"node_{start}" if start == stop else f"node_{start}..node_{stop}"
            problems.append(
                Problem(span, "missing: a gap in the node keys (later ids are unaffected)")
            )

    embeddings = _load(folder / "embeddings.json", problems)
    embeddings = embeddings if isinstance(embeddings, dict) else {}
    if (folder / "kw_strength.json").is_file():
        problems.append(Problem(None, "kw_strength.json (keyword strengths) is not carried over"))
    problems.append(
        Problem(
            None,
            "the format never stored last_accessed: access times are the creation times",
        )
    )
    if any(isinstance(n, dict) and n.get("expiration") for n in nodes.values()):
        problems.append(
            Problem(
                None,
                "expirations kept as metadata ga_expiration, not as validity: the authors' "
                "retrieval ignores them, so they hide nothing",
            )
        )

    pending: list[tuple[str, dict[str, Any], list[str]]] = []
    for _, key in numbered:
        node = nodes[key]
        if not isinstance(node, dict):
            problems.append(Problem(key, "not an object; not imported"))
            continue
        created = _time(node.get("created"))
        text = node.get("description") or node.get("embedding_key")
        if created is None:
            problems.append(
                Problem(key, f"created {node.get('created')!r} is not a time; not imported")
            )
            continue
        if not isinstance(text, str) or not text.strip():
            problems.append(Problem(key, "no description; not imported"))
            continue
        invalid = _invalid_text(text, node)
        if invalid:
            problems.append(Problem(key, f"{invalid}; not imported"))
            continue
        plan.node_ids[key] = ids.new_id(created)
        node_type = node.get("type")
        cites = _citations(key, node.get("filling"), problems) if node_type == "thought" else []
        pending.append((key, node, cites))

    depth_of: dict[str, int] = {}
    for key, node, cites in pending:
        kept = [c for c in cites if c in plan.node_ids]
        for dangling in (c for c in cites if c not in plan.node_ids):
            problems.append(
                Problem(key, f"cites {dangling}, which does not exist; citation dropped")
            )
        depth = 1 + max((depth_of.get(c, 0) for c in kept), default=-1) if kept else 0
        depth_of[key] = depth
        saved = node.get("depth")
        if isinstance(saved, int) and not isinstance(saved, bool) and saved != depth:
            problems.append(
                Problem(key, f"saved depth {saved} differs from the recomputed {depth}")
            )
        plan.records.append(_record(key, node, kept, cites, depth, plan, space, problems))
        vector = embeddings.get(node.get("embedding_key"))
        if isinstance(vector, list) and vector:
            plan.vectors[key] = vector
    return plan


def _record(
    key: str,
    node: Mapping[str, Any],
    kept: list[str],
    cited: list[str],
    depth: int,
    plan: GAImportPlan,
    space: str,
    problems: list[Problem],
) -> Record:
    created = _time(node["created"])
    assert created is not None
    node_type = node.get("type")
    if node_type == "event":
        kind = Kind.OBSERVATION
    elif node_type == "chat":
        kind = Kind.CHAT
    elif node_type == "thought":
        kind = Kind.REFLECTION if kept or cited else Kind.THOUGHT
    else:
        problems.append(Problem(key, f"unknown type {node_type!r}; imported as an observation"))
        kind = Kind.OBSERVATION
    poignancy = node.get("poignancy")
    importance = 5.0
    if isinstance(poignancy, int | float) and not isinstance(poignancy, bool):
        importance = min(10.0, max(1.0, float(poignancy)))
        if importance != poignancy:
            problems.append(
                Problem(key, f"poignancy {poignancy} outside 1..10; clamped to {importance:g}")
            )
    else:
        problems.append(Problem(key, f"poignancy {poignancy!r} is not a number; imported as 5"))
    expiration = _time(node.get("expiration"))
    metadata: dict[str, Any] = {
        "ga_node_id": key,
        "ga_type": node_type,
        "ga_subject": node.get("subject"),
        "ga_predicate": node.get("predicate"),
        "ga_object": node.get("object"),
        "ga_keywords": sorted(node.get("keywords") or [])
        if isinstance(node.get("keywords"), list)
        else [],
    }
    if isinstance(node.get("embedding_key"), str):
        metadata[EMBEDDING_KEY] = node["embedding_key"]  # the code's idle filter reads it
    if expiration is not None:
        metadata["ga_expiration"] = expiration.isoformat()  # the code's retrieval ignores it
    if node_type == "chat" and isinstance(node.get("filling"), list):
        metadata["ga_conversation"] = node["filling"]
    text = str(node.get("description") or node.get("embedding_key")).strip()
    return Record(
        id=plan.node_ids[key],
        space=space,
        agent=plan.agent,
        kind=kind,
        text=text,
        importance=importance,
        occurred_at=created,
        recorded_at=created,
        last_accessed_at=created,
        metadata=metadata,
        evidence=tuple(plan.node_ids[c] for c in kept),
        depth=depth,
        evidence_status=EvidenceStatus.MISSING if len(kept) < len(cited) else EvidenceStatus.OK,
    )


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    runs: list[tuple[int, int]] = []
    for n in numbers:
        if runs and runs[-1][1] == n - 1:
            runs[-1] = (runs[-1][0], n)
        else:
            runs.append((n, n))
    return runs


@dataclass(frozen=True, slots=True, kw_only=True)
class GAImportReport:
    """What an import of a Generative Agents persona did. ``node_ids`` maps each original node
    id to its chronomem id (also kept as ``metadata["ga_node_id"]``); ``problems`` lists, by node
    id, everything that was not carried over exactly; ``preset`` is the persona's retrieval
    settings from ``scratch.json`` as a compatibility preset."""

    agent: str
    path: str
    imported: int
    by_kind: Mapping[str, int]
    node_ids: Mapping[str, str]
    problems: tuple[Problem, ...]
    preset: ScoringConfig | None
    accumulated_importance: float

    def summary(self) -> str:
        kinds = ", ".join(f"{k} {n}" for k, n in sorted(self.by_kind.items()))
        lines = [f"imported {self.imported} records for {self.agent} from {self.path} ({kinds})"]
        lines += [f"  - {p}" for p in self.problems]
        return "\n".join(lines)
