"""Time references in questions, read against the instant of the read."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from chronomem.timeref import time_window

NOW = datetime(2023, 4, 12, 10, 0, tzinfo=UTC)  # a Wednesday


def day(month: int, d: int, year: int = 2023) -> datetime:
    return datetime(year, month, d, tzinfo=UTC)


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("What did I buy yesterday?", "yesterday", day(4, 11), day(4, 12)),
        ("and the day before yesterday?", "the day before yesterday", day(4, 10), day(4, 11)),
        ("What did I cook a couple of days ago?", "a couple of days ago",
         NOW - timedelta(days=3.5), NOW - timedelta(days=1.5)),
        ("Which book did I finish a week ago?", "a week ago",
         NOW - timedelta(days=10.5), NOW - timedelta(days=3.5)),
        ("What did I do two months ago?", "two months ago",
         NOW - timedelta(days=75), NOW - timedelta(days=45)),
        ("What did I do 3 days ago?", "3 days ago",
         NOW - timedelta(days=3.5), NOW - timedelta(days=2.5)),
        ("How much did I run last week?", "last week", day(4, 3), day(4, 10)),
        ("What did I get last Saturday?", "last Saturday", day(4, 8), day(4, 9)),
        ("What did I play last weekend?", "last weekend", day(4, 8), day(4, 10)),
        ("What did I finish last month?", "last month", day(3, 1), day(4, 1)),
        ("What did I spend this month?", "this month", day(4, 1), NOW),
        ("How many did I go to in March?", "in March", day(3, 1), day(4, 1)),
        ("What happened in December?", "in December", day(12, 1, 2022), day(1, 1)),
        ("What happened in the month of February?", "in the month of February",
         day(2, 1), day(3, 1)),
        ("What did I see in the past three months?", "in the past three months",
         NOW - timedelta(days=90), NOW),
        ("What did I plant in the last few months?", "in the last few months",
         NOW - timedelta(days=120), NOW),
        ("Where was I on May 3rd?", "May 3rd", day(5, 3, 2022), day(5, 4, 2022)),
        ("Where was I on 7 March 2023?", "7 March 2023", day(3, 7), day(3, 8)),
        ("What happened after March 5, 2023?", "after March 5, 2023", day(3, 6), NOW),
        ("What did I buy since 2022?", "since 2022", day(1, 1, 2022), NOW),
    ],
)  # fmt: skip
def test_windows(question: str, phrase: str, start: datetime, end: datetime) -> None:
    window = time_window(question, NOW)
    assert window is not None
    assert (window.phrase, window.start, window.end) == (phrase, start, end)


def test_open_windows_before_a_date() -> None:
    window = time_window("How many fish did I catch before 7/22?", NOW)
    assert window is not None
    assert (window.start, window.end) == (None, day(7, 22, 2022))
    window = time_window("What did I buy before June 2022?", NOW)
    assert window is not None
    assert (window.start, window.end) == (None, day(6, 1, 2022))


@pytest.mark.parametrize(
    "question",
    [
        "How many days ago did I attend a networking event?",  # the span is the answer
        "How long ago did I move?",
        "Can you recommend a show for tonight?",  # ahead, not back
        "Any plans for this weekend?",
        "What should I do next week?",
        "I need 1/2 cup of flour",  # a fraction, not a date
        "How many fish did I catch before the 7/22 trip?",  # a date naming an event
        "I may 2 times",  # a verb, not a month
        "I bought a gift for Jan",
        "What did I do recently?",  # no span
        "What is planned on 7 May 2023?",  # after the read: memories look back
    ],
)
def test_no_window(question: str) -> None:
    assert time_window(question, NOW) is None


def test_calendar_words_use_the_read_instants_time_zone() -> None:
    tokyo = timezone(timedelta(hours=9))
    now = datetime(2023, 4, 12, 1, 0, tzinfo=tokyo)  # still April 11th in UTC
    window = time_window("What did I buy yesterday?", now)
    assert window is not None
    assert window.start == datetime(2023, 4, 11, tzinfo=tokyo)
    assert "yesterday" in window.describe()


@pytest.mark.parametrize(
    ("question", "phrase", "start", "end"),
    [
        ("어제 뭐 샀어?", "어제", day(4, 11), day(4, 12)),
        ("그저께 누구를 만났지?", "그저께", day(4, 10), day(4, 11)),
        ("3일 전에 뭘 요리했어?", "3일 전", NOW - timedelta(days=3.5), NOW - timedelta(days=2.5)),
        ("두 달 전에 어디 갔어?", "두 달 전", NOW - timedelta(days=75), NOW - timedelta(days=45)),
        ("지난주에 얼마나 달렸어?", "지난주", day(4, 3), day(4, 10)),
        ("지난 주말에 뭐 했어?", "지난 주말", day(4, 8), day(4, 10)),
        ("지난달에 무슨 책을 읽었어?", "지난달", day(3, 1), day(4, 1)),
        ("3월에 몇 번 갔어?", "3월", day(3, 1), day(4, 1)),
        ("3월 5일에 어디 있었어?", "3월 5일", day(3, 5), day(3, 6)),
        ("2022년 12월에 뭐 샀어?", "2022년 12월", day(12, 1, 2022), day(1, 1)),
        ("昨日何を買いましたか?", "昨日", day(4, 11), day(4, 12)),
        ("三日前に何を作った?", "三日前", NOW - timedelta(days=3.5), NOW - timedelta(days=2.5)),
        ("先週どれくらい走った?", "先週", day(4, 3), day(4, 10)),
        ("先月何を読んだ?", "先月", day(3, 1), day(4, 1)),
        ("12月に何があった?", "12月", day(12, 1, 2022), day(1, 1)),
        ("昨天我买了什么?", "昨天", day(4, 11), day(4, 12)),
        ("两个月前我去了哪里?", "两个月前", NOW - timedelta(days=75), NOW - timedelta(days=45)),
        ("上周我跑了多少?", "上周", day(4, 3), day(4, 10)),
        ("上个月我看了什么书?", "上个月", day(3, 1), day(4, 1)),
        ("3月5号我在哪里?", "3月5号", day(3, 5), day(3, 6)),
        ("我2022年去了哪些国家?", "2022年", day(1, 1, 2022), day(1, 1)),
    ],
)  # fmt: skip
def test_korean_japanese_and_chinese_windows(
    question: str, phrase: str, start: datetime, end: datetime
) -> None:
    window = time_window(question, NOW)
    assert window is not None
    assert (window.phrase, window.start, window.end) == (phrase, start, end)


@pytest.mark.parametrize(
    "question",
    [
        "며칠 전에 모임에 갔어?",  # the span is the answer
        "다음 주에 뭐 할까?",  # ahead, not back
        "월요일에 뭐 해?",  # a weekday word, not a month
        "来週の予定は?",
        "最近何を読んだ?",  # no span
        "下个月我们去哪里?",
        "2023年5月7号有什么计划?",  # after the read
    ],
)
def test_no_korean_japanese_or_chinese_window(question: str) -> None:
    assert time_window(question, NOW) is None
