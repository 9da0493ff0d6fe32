"""Multilingual models as a first-class choice (issue 27): a local model folder declares the
languages it reads in its card; an OpenAI-compatible endpoint reads what it is told; the fusion
follows what each declares."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from chronomem import Memory, OpenAICompatibleEmbedder, SimClock
from chronomem.embedders.base import card_languages, model_languages

from ..conftest import T0
from ..scripted_http import Answer, scripted_server

KOREAN = ["회의는 매주 화요일 오전 10시에 열린다", "패키지는 pnpm으로 설치한다"]


def _card(folder: Path, front: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "README.md").write_text(f"---\n{front}\n---\n# a model\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(
    ("front", "languages"),
    [
        ("language: en", {"en"}),
        ("language: [ko, ja, 'zh']", {"ko", "ja", "zh"}),
        ("license: mit\nlanguage:\n- ko\n- en\ntags:\n- x", {"ko", "en"}),
        ("language: multilingual", None),
        ("license: mit", None),
    ],
)
def test_a_model_card_declares_the_languages(
    tmp_path: Path, front: str, languages: set[str] | None
) -> None:
    assert card_languages(_card(tmp_path / "model", front)) == languages


def test_a_folder_without_a_card_declares_nothing(tmp_path: Path) -> None:
    assert card_languages(tmp_path) is None


def _multilingual_copy(tmp_path: Path) -> Path:
    """The bundled model's files (linked, not copied) under a card that declares Korean,
    Japanese, Chinese and English: how a local multilingual folder presents itself."""
    from chronomem.embedders.sentence_transformers import bundled_model_path

    source = bundled_model_path()
    folder = tmp_path / "multilingual-minilm"
    for path in source.rglob("*"):
        target = folder / path.relative_to(source)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.name != "README.md":
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(path, target)
    return _card(folder, "language:\n- ko\n- ja\n- zh\n- en")


@pytest.mark.slow
def test_a_local_folder_is_read_in_the_languages_of_its_card(tmp_path: Path) -> None:
    from chronomem.embedders.sentence_transformers import SentenceTransformerEmbedder

    assert model_languages(SentenceTransformerEmbedder(num_threads=1)) == {"en"}
    model = SentenceTransformerEmbedder(_multilingual_copy(tmp_path), num_threads=1)
    assert model.model_id == "multilingual-minilm"
    assert model_languages(model) == {"ko", "ja", "zh", "en"}
    with Memory.open(tmp_path / "m.db", embedder=model, clock=SimClock(T0)) as mem:
        mem.remember_many(KOREAN)
        hits = mem.peek("회의는 언제야?", explain=True)
    assert hits
    for hit in hits:
        assert hit.breakdown is not None
        assert hit.breakdown.unread_language is None  # its cosines count
        assert hit.breakdown.relevance_dense is not None


def _vectors(body: dict[str, Any]) -> Answer:
    rows = [
        {"object": "embedding", "index": i, "embedding": [1.0, float(len(t) % 7), 1.0]}
        for i, t in enumerate(body["input"])
    ]
    return 200, {"Content-Type": "application/json"}, json.dumps({"data": rows})


def test_an_endpoint_reads_every_language_unless_told(tmp_path: Path) -> None:
    with scripted_server(_vectors) as (url, _):
        everything = OpenAICompatibleEmbedder(url, "m3", dim=3)
        english = OpenAICompatibleEmbedder(url, "m3", dim=3, languages=["en"])
        assert model_languages(everything) is None
        assert model_languages(english) == {"en"}
        for name, model, unread in (("all", everything, None), ("en", english, "ko")):
            with Memory.open(tmp_path / f"{name}.db", embedder=model, clock=SimClock(T0)) as mem:
                mem.remember_many(KOREAN)
                hit = mem.peek("패키지는 뭘로 설치해?", k=1, explain=True)[0]
            assert hit.record.text == KOREAN[1]
            assert hit.breakdown is not None
            assert hit.breakdown.unread_language == unread, name
