"""The full-text analyser: the terms every store indexes and queries, by script (DESIGN §9;
issue 27): Latin words stemmed as before, Korean, Japanese and Chinese as character bigrams plus
the words of their segmenters, marks kept where they are letters, and a store built with a
segmenter refused by a process that lacks it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from chronomem import ConfigError, Memory
from chronomem.analysis.analyser import Analyser, default_analyser, missing_segmenters
from chronomem.analysis.scripts import language_of, reads, runs
from chronomem.analysis.segmenters import available

from ..conftest import store_of

ANALYSER = default_analyser()
terms, query = ANALYSER.terms, ANALYSER.query_terms
BIGRAMS = Analyser({})  # what a process without the languages extra analyses


def test_words_are_casefolded_stemmed_and_stopwords_dropped() -> None:
    assert terms("The Keepers were RUNNING to the lighthouses") == [
        "keeper", "run", "lighthous",
    ]  # fmt: skip


def test_repeats_are_kept_for_term_frequency() -> None:
    assert terms("lamp, lamp; LAMP!") == ["lamp", "lamp", "lamp"]


def test_accents_are_removed_and_underscores_split_words() -> None:
    assert terms("Café naïve") == terms("cafe naive")
    assert terms("snake_case") == ["snake", "case"]


def test_digits_are_terms_and_long_tokens_are_capped() -> None:
    assert terms("room 101 on floor 3") == ["room", "101", "floor", "3"]
    assert len(terms("x" * 500)[0]) == 64


def test_query_terms_are_distinct_in_first_appearance_order() -> None:
    assert query("lamps and the lamp: broken lamp") == ["lamp", "broken"]


def test_a_query_of_stopwords_only_has_no_terms() -> None:
    assert query("what is it?") == []
    assert query("") == []


def test_query_terms_are_capped_at_64() -> None:
    assert len(query(" ".join(f"word{i}" for i in range(100)))) == 64


def test_chinese_and_japanese_runs_are_split_into_terms() -> None:
    """A run of kana or hanzi is no longer one term: ``东京的天气很好，我们去公园散步`` was two."""
    found = BIGRAMS.terms("东京的天气很好，我们去公园散步")
    assert {"东京", "天气", "公园", "散步"} <= set(found)
    assert set(BIGRAMS.terms("天气")) <= set(found)  # a query word meets the text


def test_kana_keep_their_voicing_marks_and_hangul_its_syllables() -> None:
    """NFKD "unaccenting" turned パッケージ into ハッケーシ; it applies to Latin and Greek only."""
    assert "パッ" in BIGRAMS.terms("パッケージ")
    assert all("ハ" not in t for t in BIGRAMS.terms("パッケージ"))
    assert BIGRAMS.terms("설치") == ["설치"]
    assert terms("Café") == terms("cafe")
    assert terms("ΚΑΦΈΣ") == terms("καφες")
    assert terms("й") != terms("и")  # a Cyrillic letter is not an accented one


def test_inflected_korean_meets_its_stem() -> None:
    """``설치는`` and ``설치한다`` meet at ``설치`` (bigrams); with the Korean segmenter,
    ``읽어`` and ``읽는다`` meet at ``읽``."""
    assert "설치" in set(BIGRAMS.terms("설치는")) & set(BIGRAMS.terms("pnpm으로 설치한다"))
    if "ko" not in available():
        pytest.skip("no Korean segmenter (pip install 'chronomem[languages]')")
    assert "읽" in set(terms("민수는 아침에 뭘 읽어?")) & set(terms("민수는 신문을 읽는다."))
    assert "의" not in terms("최근성의 중요성")  # particles are not words


def test_mixed_scripts_are_analysed_each_by_its_own_rules() -> None:
    found = terms("pnpm으로 packages를 설치한다")
    assert {"pnpm", "packag", "설치"} <= set(found)
    assert [(str(r), r.script) for r in runs("pnpm으로")] == [("pnpm", "latin"), ("으로", "hangul")]


def test_thai_words_keep_their_vowel_signs() -> None:
    assert [str(r) for r in runs("สวัสดีครับ")] == ["สวัสดีครับ"]
    assert "สว" in BIGRAMS.terms("สวัสดีครับ")
    if "thai" not in available():
        pytest.skip("no Thai segmenter (pip install 'chronomem[languages]')")
    found = terms("ฉันไปตลาดเมื่อวานและซื้อผลไม้")
    assert {"ตลาด", "ผลไม้"} <= set(found)
    assert "และ" not in found  # a stopword


def test_japanese_and_chinese_words_meet_across_forms() -> None:
    if not {"ja", "zh"} <= set(available()):
        pytest.skip("no Japanese or Chinese segmenter (pip install 'chronomem[languages]')")
    assert "サーバー" in set(terms("サーバを再起動した")) & set(terms("サーバーの再起動"))
    assert "公務員" in terms("国家公務員の試験")
    assert "上海" in set(terms("你什么时候搬到上海的?")) & set(terms("我去年搬到了上海"))
    assert "的" not in terms("我的猫很可爱")


@pytest.mark.skipif(not os.environ.get("CI"), reason="CI installs the languages extra")
def test_ci_tests_every_segmenter() -> None:
    """``make test`` installs ``chronomem[languages]``: a CI run tests the segmenters, not only
    their fallback."""
    assert {"ko", "ja", "zh", "thai"} <= set(available())


def test_full_width_and_half_width_forms_fold() -> None:
    assert terms("ｐｎｐｍ") == terms("pnpm")
    assert terms("ﾊﾟｯｹｰｼﾞ") == terms("パッケージ")


def test_the_language_of_a_text_is_read_from_its_letters() -> None:
    assert language_of("회의는 매주 화요일에 열린다") == "ko"
    assert language_of("会議は毎週火曜日に開かれる") == "ja"
    assert language_of("例会定在每周二") == "zh"
    assert language_of("pnpm으로 설치한다") == "ko"  # most letters are Hangul
    assert language_of("Install it with pnpm") == "latin"
    assert language_of("2024-03-01 10:30") == ""
    assert reads({"en"}, "latin")
    assert not reads({"en"}, "ko")
    assert reads(None, "ko")
    assert reads({"ko", "en"}, "ko")
    assert reads({"en"}, "")  # no letters: nothing to misread


def test_the_analysers_name_lists_its_segmenters() -> None:
    assert " + words (" not in BIGRAMS.name
    for language, segmenter in available().items():
        assert f"{language}={segmenter.name}" in ANALYSER.name
    assert missing_segmenters(BIGRAMS.name) == []
    assert missing_segmenters(BIGRAMS.name + " + words (xx=nothing 1.0)") == ["xx=nothing 1.0"]


def test_a_store_indexed_with_a_segmenter_this_process_lacks_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "ko.db"
    with Memory.open(db, embedder=None) as mem:
        mem.remember("회의는 매주 화요일에 열린다")
        with store_of(mem).write():
            store_of(mem)._execute(
                "UPDATE store_meta SET value = ? WHERE key = 'analyser'",
                (BIGRAMS.name + " + words (xx=nothing 1.0)",),
            )
    with pytest.raises(ConfigError, match=r"xx=nothing 1\.0.*chronomem\[languages\]"):
        Memory.open(db, embedder=None)


def test_other_languages_are_stemmed_in_their_own_language() -> None:
    """Function words tell French, German, Spanish, Russian ... apart; their words are stemmed
    by their own Snowball stemmer and also keep the term they have without a language, so a
    query whose language cannot be told still meets them."""
    assert {"enfant", "jardin"} <= set(terms("Les enfants jouaient dans le jardin"))
    assert "jug" in set(terms("¿A qué jugaban los niños?")) & set(
        terms("Los niños jugaban en el jardín")
    )
    assert set(terms("ninos")) <= set(terms("Los niños jugaban en el jardín"))  # unaccented
    assert "сад" in set(terms("Дети играли в саду")) & set(terms("Что было в саду у детей?"))
    assert set(terms("дети")) <= set(terms("Дети играли в саду"))
    assert "чайник" in terms("Мой чайник")  # Cyrillic keeps its marks: "й" is not "и"
    assert "kind" in terms("Die Kinder spielten im Garten und lachten")


def test_english_words_of_other_languages_do_not_make_english_text_foreign() -> None:
    """ "men", "at", "die", "war", "come" are English words too: English text stays English."""
    assert terms("Men at work") == ["men", "work"]
    assert terms("I will come to the war if I die") == ["come", "war", "die"]
    assert terms("Caroline: I went to the LGBTQ support group") == [
        "carolin", "went", "lgbtq", "support", "group",
    ]  # fmt: skip
