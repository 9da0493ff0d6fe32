"""Moving a space in and out (DESIGN §6): the JSONL archive and the Generative Agents importer.
The formats are ``transfer/``; this module applies them to the handle's store and keeps the
handle's embedding metadata in step."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import replace

from chronomem.arrays import F32
from chronomem.embedders.base import as_vector
from chronomem.engine import write
from chronomem.engine.handle import Handle
from chronomem.errors import InvalidInputError
from chronomem.model.record import Record
from chronomem.model.transfer import ImportReport
from chronomem.stores.base import StoredRecord
from chronomem.transfer.archive import export_space, import_space
from chronomem.transfer.generative_agents import (
    GAImportReport,
    Problem,
    find_folder,
    plan_import,
)

__all__ = ["export", "import_archive", "import_generative_agents"]


def export(h: Handle, path: str | os.PathLike[str]) -> int:
    return export_space(h.store, h.space, h.meta, path)


def import_archive(h: Handle, path: str | os.PathLike[str]) -> ImportReport:
    report, meta = import_space(h.store, h.space, h.stored_meta(), h.embedder, path)
    if meta.dim is not None:  # the store records a model and dimension now
        h.meta_pending = False
        h.adopt(meta)
    return report


def import_generative_agents(
    h: Handle, persona_dir: str | os.PathLike[str], agent: str | None, *, progress: bool
) -> GAImportReport:
    """See :meth:`Memory.import_generative_agents`."""
    folder = find_folder(os.fspath(persona_dir))
    plan = plan_import(folder, agent=agent, space=h.space, ids=h.ids)
    problems = list(plan.problems)
    vectors, parts = _vectors(h, plan.records, plan.vectors, problems, progress)
    items = [
        StoredRecord(record=replace(r, has_embedding=v is not None), embedding=v, passages=p)
        for r, v, p in zip(plan.records, vectors, parts, strict=True)
    ]
    accumulated = plan.accumulated_importance or 0.0
    first = next((v for v in vectors if v is not None), None)
    if first is not None:
        h.fix_dim(int(first.shape[0]))
    with h.writing(h.now()):
        h.store.insert_records(h.space, items)
        h.store.set_accumulated_importance(h.space, plan.agent, accumulated)
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


def _vectors(
    h: Handle,
    records: list[Record],
    given: dict[str, list[float]],
    problems: list[Problem],
    progress: bool,
) -> tuple[list[F32 | None], list[F32 | None]]:
    """Record vectors and passage vectors (only when the embedder re-embeds the texts)."""
    none: list[F32 | None] = [None] * len(records)
    if not records:
        return [], []
    if h.embedder is not None:
        if given:
            model = h.embedder.model_id
            problems.append(
                Problem(None, f"{len(given)} embeddings.json vectors unused: re-embedded ({model})")
            )
        texts = [r.text for r in records]
        wholes, parts = write.embed_texts(h, texts, [True] * len(texts), progress=progress)
        return list(wholes), parts
    if h.meta.model is not None:
        # The file's vectors come from an unknown model: never mixed with this store's.
        h.check_missing_vectors(
            f"importing {len(records)} record(s) without an embedder gives them"
        )
        problems.append(
            Problem(None, f"no vectors: this store's come from {h.meta.model!r} (embed_records)")
        )
        return none, none
    dims = {len(v) for v in given.values()}
    node = [str(r.metadata["ga_node_id"]) for r in records]
    if len(dims) == 1 and (h.meta.dim in (None, *dims)):
        dim = dims.pop()
        out: list[F32 | None] = []
        for n in node:
            try:
                out.append(None if n not in given else as_vector(given[n], dim=dim))
            except InvalidInputError as exc:
                problems.append(Problem(n, f"embedding unusable ({exc}); imported without it"))
                out.append(None)
        if any(v is not None for v in out):
            h.fix_dim(dim)
            problems.append(
                Problem(None, f"embeddings.json vectors ({dim}-d, model unknown) imported as is")
            )
        return out, none
    if given:
        problems.append(
            Problem(None, "embeddings.json vectors unused: wrong dimension; relevance is lexical")
        )
    return none, none


def _problem_order(problem: Problem) -> tuple[int, int, str]:
    """Folder-wide notes first, then by node number."""
    if problem.node is None:
        return (0, 0, "")
    digits = "".join(ch for ch in problem.node.split("..")[0] if ch.isdigit())
    return (1, int(digits) if digits else 10**9, problem.node)
