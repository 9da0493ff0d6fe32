"""Importing other systems' saved memories (DESIGN §6): the Generative Agents format first."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace

import numpy as np

from chronomem.engine.reflecting import _Reflecting
from chronomem.importers.generative_agents import (
    GAImportReport,
    Problem,
    find_folder,
    plan_import,
)
from chronomem.model.record import Record
from chronomem.stores.base import StoredRecord

__all__: list[str] = []


class _Importing(_Reflecting):
    # -- importers ------------------------------------------------------------------------------
    def import_generative_agents(
        self,
        persona_dir: str | os.PathLike[str],
        agent: str | None = None,
        *,
        progress: bool = False,
    ) -> GAImportReport:
        """Import a Generative Agents persona's ``associative_memory/`` folder (the persona
        folder, its ``bootstrap_memory/``, or the folder itself) as ``agent`` (default: the
        scratch file's name), in one transaction.

        Events become observations, chats chats, thoughts with evidence reflections (their
        ``filling`` mapped to the new ids) and others thoughts; ``created`` (read as UTC) is when
        each was recorded and last accessed; poignancy is importance; the original node id stays
        in ``metadata["ga_node_id"]``. Depths are recomputed from the evidence. With an embedder
        the texts are re-embedded; without one, the file's vectors are used when their dimension
        fits the store. The report lists, by node id, every key gap, unknown type, dangling or
        string-typed citation, changed depth, and what the format cannot carry (access times,
        keyword strengths). Importing the same folder twice imports it twice.
        """
        with self._lock:
            self._require_open()
            folder = find_folder(os.fspath(persona_dir))
            plan = plan_import(folder, agent=agent, space=self._space, ids=self._ids)
            problems = list(plan.problems)
            vectors, parts = self._import_vectors(plan.records, plan.vectors, problems, progress)
            items = [
                StoredRecord(
                    record=replace(r, has_embedding=v is not None), embedding=v, passages=p
                )
                for r, v, p in zip(plan.records, vectors, parts, strict=True)
            ]
            accumulated = plan.accumulated_importance or 0.0
            with self._store.write():
                self._store.insert_records(self._space, items)
                self._store.set_accumulated_importance(self._space, plan.agent, accumulated)
            if plan.accumulated_importance is None:
                problems.append(
                    Problem(None, "reflection trigger unknown: accumulated importance set to 0")
                )
            return GAImportReport(
                agent=plan.agent,
                path=str(folder),
                imported=len(items),
                by_kind=dict(Counter(r.kind.value for r in plan.records)),
                node_ids=dict(plan.node_ids),
                problems=tuple(sorted(problems, key=_problem_order)),
                preset=plan.preset,
                accumulated_importance=accumulated,
            )

    def _import_vectors(
        self,
        records: list[Record],
        given: dict[str, list[float]],
        problems: list[Problem],
        progress: bool,
    ) -> tuple[list[np.ndarray | None], list[np.ndarray | None]]:
        """Record vectors and passage vectors (only when the embedder re-embeds the texts)."""
        none: list[np.ndarray | None] = [None] * len(records)
        if not records:
            return [], []
        if self._embedder is not None:
            if given:
                model = self._embedder.model_id
                problems.append(
                    Problem(
                        None, f"{len(given)} embeddings.json vectors unused: re-embedded ({model})"
                    )
                )
            texts = [r.text for r in records]
            wholes, parts = self._embed_with_passages(texts, texts, progress=progress)
            return list(wholes), parts
        dims = {len(v) for v in given.values()}
        node = [str(r.metadata["ga_node_id"]) for r in records]
        if len(dims) == 1 and (self._meta.dim in (None, *dims)):
            dim = dims.pop()
            out = [None if n not in given else np.asarray(given[n], dtype=np.float32) for n in node]
            if any(v is not None for v in out):
                self._fix_dim(dim)
                problems.append(
                    Problem(
                        None, f"embeddings.json vectors ({dim}-d, model unknown) imported as is"
                    )
                )
            return out, none
        if given:
            problems.append(
                Problem(
                    None, "embeddings.json vectors unused: wrong dimension; relevance is lexical"
                )
            )
        return none, none


def _problem_order(problem: Problem) -> tuple[int, int, str]:
    """Folder-wide notes first, then by node number."""
    if problem.node is None:
        return (0, 0, "")
    digits = "".join(ch for ch in problem.node.split("..")[0] if ch.isdigit())
    return (1, int(digits) if digits else 10**9, problem.node)
