"""The full-text analyser: the terms every store indexes and queries."""

from __future__ import annotations

from chronomem.text import index_terms, query_terms


def test_words_are_casefolded_stemmed_and_stopwords_dropped() -> None:
    assert index_terms("The Keepers were RUNNING to the lighthouses") == [
        "keeper", "run", "lighthous",
    ]  # fmt: skip


def test_repeats_are_kept_for_term_frequency() -> None:
    assert index_terms("lamp, lamp; LAMP!") == ["lamp", "lamp", "lamp"]


def test_accents_are_removed_and_underscores_split_words() -> None:
    assert index_terms("Café naïve") == index_terms("cafe naive")
    assert index_terms("snake_case") == ["snake", "case"]


def test_digits_are_terms_and_long_tokens_are_capped() -> None:
    assert index_terms("room 101 on floor 3") == ["room", "101", "floor", "3"]
    assert len(index_terms("x" * 500)[0]) == 64


def test_query_terms_are_distinct_in_first_appearance_order() -> None:
    assert query_terms("lamps and the lamp: broken lamp") == ["lamp", "broken"]


def test_a_query_of_stopwords_only_has_no_terms() -> None:
    assert query_terms("what is it?") == []
    assert query_terms("") == []


def test_query_terms_are_capped_at_64() -> None:
    assert len(query_terms(" ".join(f"word{i}" for i in range(100)))) == 64
