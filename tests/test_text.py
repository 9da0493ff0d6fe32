"""The text helpers: transcript speakers, passages and question forms (the full-text analyser is
tests/analysis)."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from chronomem.text import (
    NameFinder,
    asks_when_something_happened,
    passage_spans,
    passages,
    refers_to_self,
    speaker,
    spoken,
)


def test_a_transcript_line_names_its_speaker() -> None:
    assert speaker("user: I moved to Shinjuku") == "user"
    assert speaker("Caroline: I went to a support group.") == "caroline"
    assert speaker("Dr. Smith: take two") == "dr. smith"
    for none in ("see http://example.com: now", "10:30 stand-up", "no colon here", ": empty"):
        assert speaker(none) is None


# Short names over a small alphabet, so names share their first characters and occur inside
# one another and inside the texts (one-character names, an empty one, CJK and accented ones).
_letters = st.sampled_from(list("abé李美 "))


@given(
    names=st.lists(st.text(_letters, max_size=4), max_size=30, unique=True),
    text=st.text(_letters, max_size=40),
)
def test_a_name_finder_finds_what_testing_every_name_finds(names: list[str], text: str) -> None:
    finder = NameFinder(dict.fromkeys(names, 0))
    assert finder.names == tuple(sorted(names))
    assert finder.within(text) == sorted(n for n in names if n in text)


def test_a_name_finder_is_current_until_a_name_is_added_or_the_names_are_replaced() -> None:
    names = {"melanie": 0, "caroline": 1}
    finder = NameFinder(names)
    assert finder.within("what did melanie and carol say?") == ["melanie"]
    assert finder.current(names)
    names["carol"] = 2
    assert not finder.current(names)
    assert not finder.current(dict(names))  # an equal dict that is not the one read
    assert NameFinder(names).within("what did melanie and carol say?") == ["carol", "melanie"]


def test_passages_split_sentences_and_keep_the_speaker() -> None:
    text = "user: I like tea. By the way, I have 3 cats!\nAnyway, thanks"
    assert passages(text) == [
        "user: I like tea.",
        "user: By the way, I have 3 cats!",
        "user: Anyway, thanks",
    ]
    assert passages("user: one sentence only.") == []  # its own vector already covers it
    assert passages("Ok. A sentence here.") == []  # fragments under four characters are dropped


def test_passages_past_the_limit_join_the_last_one() -> None:
    text = " ".join(f"Sentence number {i}." for i in range(10))
    out = passages(text, limit=4)
    assert len(out) == 4
    rest = " ".join(f"Sentence number {i}." for i in range(4, 10))
    assert out[-1] == f"Sentence number 3. {rest}"


def test_passage_spans_say_where_each_passage_lies() -> None:
    for text in (
        "user: I like tea. By the way, I have 3 cats!\nAnyway, thanks",
        "Mr. Brown went home.   He slept.\n\n1. And then? Ok.",
        "Alice: We met at noon.\nBob: Hello there. How are you today?",
        " ".join(f"Sentence number {i}." for i in range(10)),
    ):
        for limit in (32, 4):
            spans = passage_spans(text, limit=limit)
            split = passages(text, limit=limit)
            assert len(spans) == len(split) > 1
            assert all(s0 < e0 <= s1 for (s0, e0), (s1, _) in itertools.pairwise(spans))
            for (start, end), passage in zip(spans, split, strict=True):
                assert passage.endswith(" ".join(text[start:end].split()))
    assert passage_spans("user: one sentence only.") == []
    text = "Mr. Brown went home. He slept."
    assert [text[s:e] for s, e in passage_spans(text)] == ["Mr. Brown went home.", "He slept."]


def test_first_person_queries_are_recognised() -> None:
    assert refers_to_self("How many followers do I have?")
    assert refers_to_self("Where is MY bike")
    assert not refers_to_self("What did Caroline research?")
    assert not refers_to_self("Is it iPhone or Pixel?")


def test_questions_about_the_time_of_a_past_event_are_recognised() -> None:
    for when in (
        "When did Caroline go to the support group?",
        "What year was the bridge built?",
        "In what month did we move?",
        "How long ago did I start painting?",
    ):
        assert asks_when_something_happened(when), when
    for state in (
        "When is my next dentist appointment?",
        "How many followers do I have now?",
        "What did Caroline research?",
    ):
        assert not asks_when_something_happened(state), state


def test_passages_keep_a_lines_own_speaker_and_abbreviations() -> None:
    chunk = "Alice: We met at noon.\nBob: Hello there. How are you today?"
    assert passages(chunk) == [
        "Alice: We met at noon.",
        "Bob: Hello there.",
        "Alice: How are you today?",  # a line without its own speaker: the record's
    ]
    assert passages("Mr. Brown went home. He slept.") == ["Mr. Brown went home.", "He slept."]


def test_first_person_is_not_read_into_abbreviations_and_latest_times_keep_the_band() -> None:
    assert not refers_to_self("Is it free, i.e. without a fee?")
    assert refers_to_self("Did I go? i did")
    assert not asks_when_something_happened("When was the last time I saw the dentist?")
    assert not asks_when_something_happened("When did I most recently visit Rome?")


def test_questions_about_what_the_other_party_said() -> None:
    from chronomem.text import asks_what_someone_said, asks_what_the_other_said

    for question, words in (
        ("You recommended five bottles. What was the fifth?", "you recommended"),
        ("Can you remind me of the 7th job in the list you provided?", "remind me"),
        ("Which game did you say was often played?", "did you say"),
        ("I was looking back at our previous chat about tides", "our previous chat"),
    ):
        assert asks_what_the_other_said(question) == words
    for question in ("Can you suggest a hotel?", "Can you recommend a show?", "What did I buy?"):
        assert asks_what_the_other_said(question) is None
    assert asks_what_someone_said("What did Melanie suggest?", "melanie") == "did melanie suggest"
    assert asks_what_someone_said("What did Melanie make?", "melanie") is None  # a deed
    assert asks_what_someone_said("What did Melanie suggest?", "caroline") is None


def test_questions_that_take_every_piece_of_evidence() -> None:
    from chronomem.text import asks_for_every_piece

    for question, words in (
        ("How many model kits have I bought?", "how many"),
        ("Which did I read first, A or B?", "first"),
        ("What did I switch from?", "switch"),
        ("What was the total cost?", "total"),
    ):
        assert asks_for_every_piece(question) == words
    for question in (
        "What is my cat's name?",
        "Can you remind me of our previous chat?",
        "How much does flour cost?",  # a present amount, one piece
    ):
        assert asks_for_every_piece(question) is None
    assert asks_for_every_piece("How much did I save on the heels?") == "how much did"


def test_korean_japanese_and_chinese_question_cues() -> None:
    from chronomem.text import (
        asks_for_every_piece,
        asks_what_someone_said,
        asks_what_the_other_said,
    )

    for when in (
        "민수는 언제 부산에 갔어?",
        "いつ東京に引っ越しましたか?",
        "你什么时候搬到上海的?",
    ):
        assert asks_when_something_happened(when), when
    for latest in (
        "마지막으로 치과에 간 게 언제였어?",
        "最後に会ったのはいつだった?",
        "你最后一次去医院是什么时候的?",
    ):
        assert not asks_when_something_happened(latest), latest
    for state in ("다음 진료는 언제야?", "次の予約はいつ?", "下次见面是什么时候?"):
        assert not asks_when_something_happened(state), state

    for question, words in (
        ("네가 추천한 책이 뭐였지?", "네가 추천"),
        ("あなたが勧めたワインは何でしたか?", "あなたが勧め"),
        ("你推荐的那家餐厅叫什么?", "你推荐"),
    ):
        assert asks_what_the_other_said(question) == words
    assert asks_what_the_other_said("내가 뭘 샀지?") is None
    assert asks_what_someone_said("지수가 뭐라고 했어?", "지수") == "지수가 뭐라고"
    assert asks_what_someone_said("田中さんが勧めた本は?", "田中") == "田中さんが勧め"
    assert asks_what_someone_said("小王说了什么?", "小王") == "小王说"
    assert asks_what_someone_said("小王买了什么?", "小王") is None  # a deed

    for question, words in (
        ("헬스장에 몇 번 갔어?", "몇 번"),
        ("全部でいくつ買った?", "全部で"),
        ("我一共去了几次?", "一共"),
    ):
        assert asks_for_every_piece(question) == words
    for question in ("고양이 이름이 뭐야?", "猫の名前は?", "我的猫叫什么?"):
        assert asks_for_every_piece(question) is None


def test_wide_characters_take_two_columns_and_clip_by_columns() -> None:
    from chronomem.text import clip, display_width

    assert display_width("pnpm") == 4
    assert display_width("설치한다") == 8
    assert display_width("ｐｎｐｍ과 東京") == 8 + 2 + 1 + 4
    assert clip("회의는 매주 화요일에 열린다", 10) == "회의는 매…"
    assert display_width(clip("회의는 매주 화요일에 열린다", 10)) <= 10
    assert clip("short", 10) == "short"
    assert clip("a lighthouse keeper", 8) == "a light…"


def test_words_that_look_like_a_name_and_a_colon_are_words() -> None:
    """A record's speaker field names who said it, even when its words start like a transcript
    line; and every passage of a transcript line carries its speaker."""
    words = "I got ideas from everywhere: people I know. It's cool to see them take shape."
    assert spoken(words, "Joanna") == f"Joanna: {words}"
    assert spoken(f"Joanna: {words}", "Joanna") == f"Joanna: {words}"  # said once, not twice
    assert spoken(words, None) == words  # no field: the old reading stands
    assert passages(f"Joanna: {words}") == [
        "Joanna: I got ideas from everywhere: people I know.",
        "Joanna: It's cool to see them take shape.",
    ]
