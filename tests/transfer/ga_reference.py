"""A reference model of the Generative Agents code's retrieval (``new_retrieve`` in reverie's
``retrieve.py``) and of its associative-memory folder, written from the semantics the
compatibility preset must reproduce (issue 13), not from the authors' code:

- a node is an ``event``, a ``thought`` or a ``chat``; each kind has its own list, to which a new
  node is added *at the front* (newest first); node ids count every node, ``node_1`` first;
- vectors live in one dictionary keyed by the node's ``embedding_key`` (one vector per key);
- a retrieval, for each focal point in turn: the candidates are the event list followed by the
  thought list, minus nodes whose ``embedding_key`` contains ``"idle"``; a stable sort by
  ``last_accessed`` ascending; recency ``decay ** i`` for i = 1..n in that order; importance the
  poignancy; relevance the cosine of the node's vector and the focal vector; each component
  min-max normalised over the candidates (a zero range gives 0.5); score ``0.5·recency·w_rec +
  3·relevance·w_rel + 2·importance·w_imp``; a stable sort by score, descending; the first
  ``n`` (30 by default) are returned and stamped ``last_accessed = curr_time``, before the next
  focal point is scored; ``expiration`` plays no part; an empty candidate set is an error;
- saving writes ``nodes.json`` (``node_N`` first; times to the second, no ``last_accessed``),
  ``embeddings.json``, ``kw_strength.json`` and the persona's ``scratch.json``; loading adds the
  nodes back in id order, so every ``last_accessed`` is its node's creation time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


@dataclass
class Node:
    node_id: str
    kind: str  # event | thought | chat
    created: datetime
    expiration: datetime | None
    description: str
    embedding_key: str
    poignancy: int
    filling: list[str] = field(default_factory=list)
    last_accessed: datetime = field(init=False)

    def __post_init__(self) -> None:
        self.last_accessed = self.created


@dataclass
class Scored:
    node: Node
    score: float


@dataclass
class ReferenceMemory:
    """One persona's associative memory and its retrieval, as the compatibility preset must
    reproduce them."""

    nodes: dict[str, Node] = field(default_factory=dict)
    lists: dict[str, list[Node]] = field(
        default_factory=lambda: {"event": [], "thought": [], "chat": []}
    )
    vectors: dict[str, list[float]] = field(default_factory=dict)
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0)  # scratch recency/relevance/importance
    decay: float = 0.99

    def add(
        self,
        kind: str,
        created: datetime,
        description: str,
        embedding_key: str,
        poignancy: int,
        vector: Sequence[float],
        *,
        expiration: datetime | None = None,
        filling: Sequence[str] = (),
    ) -> Node:
        node = Node(
            node_id=f"node_{len(self.nodes) + 1}",
            kind=kind,
            created=created,
            expiration=expiration,
            description=description,
            embedding_key=embedding_key,
            poignancy=poignancy,
            filling=list(filling),
        )
        self.nodes[node.node_id] = node
        self.lists[kind].insert(0, node)
        self.vectors[embedding_key] = list(vector)
        return node

    def retrieve(
        self, focal_vectors: Sequence[Sequence[float]], curr_time: datetime, n: int = 30
    ) -> list[list[Scored]]:
        """One ranked list per focal point; raises ``ValueError`` on an empty candidate set."""
        out = []
        for focal in focal_vectors:
            candidates = [
                node
                for node in self.lists["event"] + self.lists["thought"]
                if "idle" not in node.embedding_key
            ]
            if not candidates:
                raise ValueError("no candidates: the code fails on an empty memory")
            candidates = sorted(candidates, key=lambda node: node.last_accessed)  # stable
            recency = _normalised([self.decay**i for i in range(1, len(candidates) + 1)])
            importance = _normalised([float(node.poignancy) for node in candidates])
            relevance = _normalised(
                [_cosine(self.vectors[node.embedding_key], focal) for node in candidates]
            )
            w_rec, w_rel, w_imp = self.weights
            scores = [
                w_rec * rec * 0.5 + w_rel * rel * 3 + w_imp * imp * 2
                for rec, rel, imp in zip(recency, relevance, importance, strict=True)
            ]
            ranked = sorted(
                zip(candidates, scores, strict=True), key=lambda pair: pair[1], reverse=True
            )[:n]
            for node, _ in ranked:
                node.last_accessed = curr_time
            out.append([Scored(node, score) for node, score in ranked])
        return out

    # -- the folder format --------------------------------------------------------------
    def save(self, persona: Path, name: str) -> Path:
        """Write the persona folder (``persona/bootstrap_memory/...``); return the persona."""
        folder = persona / "bootstrap_memory" / "associative_memory"
        folder.mkdir(parents=True)
        nodes = {}
        type_count = {"event": 0, "thought": 0, "chat": 0}
        counts = {}
        for node in self.nodes.values():
            type_count[node.kind] += 1
            counts[node.node_id] = type_count[node.kind]
        for node in reversed(list(self.nodes.values())):
            nodes[node.node_id] = {
                "node_count": int(node.node_id.split("_")[1]),
                "type_count": counts[node.node_id],
                "type": node.kind,
                "depth": 1 if node.kind == "thought" else 0,
                "created": node.created.strftime(TIME_FORMAT),
                "expiration": None
                if node.expiration is None
                else node.expiration.strftime(TIME_FORMAT),
                "subject": name,
                "predicate": "is",
                "object": node.description,
                "description": node.description,
                "embedding_key": node.embedding_key,
                "poignancy": node.poignancy,
                "keywords": [name.lower()],
                "filling": node.filling,
            }
        (folder / "nodes.json").write_text(json.dumps(nodes))
        (folder / "embeddings.json").write_text(json.dumps(self.vectors))
        (folder / "kw_strength.json").write_text(
            json.dumps({"kw_strength_event": {}, "kw_strength_thought": {}})
        )
        w_rec, w_rel, w_imp = self.weights
        scratch = {
            "name": name,
            "recency_w": w_rec,
            "relevance_w": w_rel,
            "importance_w": w_imp,
            "recency_decay": self.decay,
            "importance_trigger_max": 150,
            "importance_trigger_curr": 150,
        }
        (folder.parent / "scratch.json").write_text(json.dumps(scratch))
        return persona

    @classmethod
    def load(cls, persona: Path) -> ReferenceMemory:
        """Read a persona folder back: nodes added in id order, access times lost."""
        folder = persona / "bootstrap_memory" / "associative_memory"
        nodes = json.loads((folder / "nodes.json").read_text())
        vectors = json.loads((folder / "embeddings.json").read_text())
        scratch = json.loads((folder.parent / "scratch.json").read_text())
        memory = cls(
            weights=(scratch["recency_w"], scratch["relevance_w"], scratch["importance_w"]),
            decay=scratch["recency_decay"],
        )
        for number in range(1, len(nodes) + 1):
            saved = nodes[f"node_{number}"]
            expiration = saved["expiration"]
            memory.add(
                saved["type"],
                _time(saved["created"]),
                saved["description"],
                saved["embedding_key"],
                saved["poignancy"],
                vectors[saved["embedding_key"]],
                expiration=None if expiration is None else _time(expiration),
                filling=saved["filling"] or (),
            )
        return memory


def thought_expiration(created: datetime) -> datetime:
    """What the code gives a thought: created + 30 days."""
    return created + timedelta(days=30)


def _time(text: str) -> datetime:
    return datetime.strptime(text, TIME_FORMAT).replace(tzinfo=UTC)


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def _normalised(values: list[float]) -> list[float]:
    low, high = min(values), max(values)
    if high - low == 0:
        return [0.5] * len(values)
    return [(v - low) / (high - low) for v in values]
