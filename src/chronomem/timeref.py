"""Time references in questions ("yesterday", "a couple of days ago", "last week", "two months
ago", "in March", "on May 3rd", "before 7/22") read against the instant of the read, as a window
of world time that a read prefers (DESIGN §2; issue: retrieval quality, round two).

A small grammar rather than a general date parser: measured on our questions, ``dateparser``
took 150–260 ms per question (6 s for the first), read "do" and "did" as dates and missed "a
couple of days ago"; ``parsedatetime`` gives instants without a span and puts "in March" and "the
past three months" in the future. Questions about memories look back, so every window here ends
at the read's instant at the latest; words that point ahead ("tonight", "this weekend",
"tomorrow", "next week") and words without a span ("recently", "how many days ago") give none.

Calendar words ("last week", "in March", "yesterday") use the calendar of the read instant's
own time zone. Korean, Japanese and Chinese questions are read too (어제, 지난주, 3일 전, 3월에;
昨日, 先週, 三日前; 昨天, 上周, 两个月前, 3月5号): their patterns have no word boundaries and match
only their own scripts, so neither grammar misfires on the other's text. Pure: text and an instant
in, a window out.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, time, timedelta

__all__ = ["TimeWindow", "time_window"]


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """World time a question points at: ``[start, end)``, either end open (``None``), and the
    words it was read from."""

    phrase: str
    start: datetime | None
    end: datetime | None

    def describe(self) -> str:
        start = "…" if self.start is None else self.start.isoformat(timespec="minutes")
        end = "…" if self.end is None else self.end.isoformat(timespec="minutes")
        return f'"{self.phrase}" → {start} – {end}'


_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
# Vague quantities: (low, high) counts of the unit.
_VAGUE = {"a couple of": (2, 3), "couple of": (2, 3), "a few": (2, 4), "few": (2, 4),
          "several": (3, 7)}  # fmt: skip
# English, whatever the process's locale (``calendar.month_name`` follows it). Full names only:
# "Jan", "Mar" and "Sep" are names and words too often.
_MONTHS = {
    name: i + 1
    for i, name in enumerate(
        ("january", "february", "march", "april", "may", "june", "july", "august",
         "september", "october", "november", "december")
    )
}  # fmt: skip
_WEEKDAYS = {
    name: i
    for i, name in enumerate(
        ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
    )
}
_UNITS = {"hour": timedelta(hours=1), "day": timedelta(days=1), "week": timedelta(weeks=1),
          "month": timedelta(days=30), "year": timedelta(days=365)}  # fmt: skip

_COUNT = r"(?P<count>\d{1,3}|a couple of|couple of|a few|few|several|an?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)"  # noqa: E501
_UNIT = r"(?P<unit>hour|day|week|month|year)s?"
_MONTH = r"(?P<month>" + "|".join(_MONTHS) + r")"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d)"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAYS) + r")"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("ago", rf"\b{_COUNT}\s+{_UNIT}\s+ago\b"),
        (
            "past",
            rf"\b(?:in|over|during|for|within)?\s*the\s+(?:past|last)\s+(?:{_COUNT}\s+)?{_UNIT}\b",
        ),
        ("date_md", rf"\b{_MONTH}\s+{_DAY}\b(?:,?\s*{_YEAR})?"),
        ("date_dm", rf"\b(?:the\s+)?{_DAY}\s+(?:of\s+)?{_MONTH}(?:,?\s*{_YEAR})?"),
        (  # "on 7/22", not "the 7/22 trip" (a date naming an event) nor "1/2 cup"
            "date_num",
            r"\b(?:on|before|after|since|until|by)\s+(?P<month>1[0-2]|0?[1-9])/(?P<day>[0-3]?\d)(?:/(?P<year>(?:19|20)?\d\d))?\b",
        ),
        (
            "month",
            rf"\b(?:in|during|of|since|before|after|until|by)\s+(?:the\s+month\s+of\s+)?{_MONTH}(?:,?\s*{_YEAR})?\b",
        ),
        ("month_year", rf"\b{_MONTH}\s+{_YEAR}\b"),
        ("year", rf"\b(?:in|during|since|before|after|until|by)\s+{_YEAR}\b"),
        ("yesterday", r"\b(?:the\s+day\s+before\s+)?yesterday\b"),
        ("today", r"\b(?:earlier\s+)?today\b|\bthis\s+morning\b"),
        ("last_period", r"\blast\s+(?P<period>week|weekend|month|year)\b"),
        ("this_period", r"\bthis\s+(?P<period>week|month|year)\b"),
        ("last_weekday", rf"\blast\s+{_WEEKDAY}\b"),
    )
)
# Korean, Japanese and Chinese: counts in digits or in their own numerals, and units.
_CJK_NUMBERS = {
    "한": 1, "두": 2, "세": 3, "네": 4, "다섯": 5, "여섯": 6, "일곱": 7, "여덟": 8, "아홉": 9,
    "열": 10, "하루": 1, "이틀": 2, "사흘": 3, "나흘": 4,
    "一": 1, "二": 2, "两": 2, "兩": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8,
    "九": 9, "十": 10, "半": 1,
}  # fmt: skip
_CJK_UNITS = {
    "시간": "hour", "時間": "hour", "小时": "hour", "小時": "hour", "个小时": "hour",
    "일": "day", "日": "day", "天": "day",
    "주": "week", "주일": "week", "週間": "week", "周": "week", "週": "week", "个星期": "week",
    "星期": "week", "个礼拜": "week", "礼拜": "week",
    "달": "month", "개월": "month", "ヶ月": "month", "か月": "month", "カ月": "month",
    "个月": "month", "個月": "month", "月": "month",
    "년": "year", "年": "year",
}  # fmt: skip
_CJK_COUNT = (
    r"(?P<count>\d{1,3}|하루|이틀|사흘|나흘|다섯|여섯|일곱|여덟|아홉|[한두세네열]"
    r"|[一二两兩三四五六七八九十半])"
)
_CJK_YEAR = r"(?:(?P<year>(?:19|20)\d\d)\s*(?:년|年)\s*)"
_CJK_UNIT = "(?P<unit>" + "|".join(sorted(_CJK_UNITS, key=len, reverse=True)) + ")"
_CJK_PERIODS = {
    # (period, last): words naming a calendar period before, or the one of, the read instant
    "지난주": ("week", True), "지난 주": ("week", True), "저번 주": ("week", True),
    "지난 주말": ("weekend", True), "지난주말": ("weekend", True), "지난달": ("month", True),
    "지난 달": ("month", True), "작년": ("year", True), "지난해": ("year", True),
    "이번 주": ("week", False), "이번주": ("week", False), "이번 달": ("month", False),
    "이번달": ("month", False), "올해": ("year", False),
    "先週末": ("weekend", True), "先週": ("week", True), "先月": ("month", True),
    "去年": ("year", True), "昨年": ("year", True), "今週": ("week", False),
    "今月": ("month", False), "今年": ("year", False),
    "上周末": ("weekend", True), "上个周末": ("weekend", True), "上周": ("week", True),
    "上星期": ("week", True), "上个星期": ("week", True), "上个月": ("month", True),
    "上個月": ("month", True), "这周": ("week", False), "本周": ("week", False),
    "这个星期": ("week", False), "这个月": ("month", False), "本月": ("month", False),
}  # fmt: skip
_CJK_DAYS = {
    "그저께": 2, "그제": 2, "어제": 1, "오늘": 0, "一昨日": 2, "おととい": 2, "昨日": 1,
    "今日": 0, "前天": 2, "昨天": 1, "今天": 0,
}  # fmt: skip
_CJK_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("cjk_ago", rf"{_CJK_COUNT}\s*{_CJK_UNIT}\s*(?:전|前|以前|之前)"),
        (
            "cjk_date",
            rf"{_CJK_YEAR}?(?P<month>1[0-2]|0?[1-9])\s*(?:월|月)\s*(?P<day>[0-3]?\d)\s*"
            r"(?:일|日|号|號)",
        ),
        ("cjk_month", rf"{_CJK_YEAR}?(?<!\d)(?P<month>1[0-2]|0?[1-9])\s*(?:월|月)(?!\s*\d)"),
        ("cjk_year", _CJK_YEAR),
        ("cjk_period", "(?P<period>" + "|".join(sorted(_CJK_PERIODS, key=len, reverse=True)) + ")"),
        ("cjk_day", "(?P<day_word>" + "|".join(sorted(_CJK_DAYS, key=len, reverse=True)) + ")"),
    )
)
_BOUND = re.compile(r"\b(before|after|since|until|by)\s+(?:the\s+)?$")
_LEADING = re.compile(r"(before|after|since|until|by)\b")


def time_window(question: str, now: datetime) -> TimeWindow | None:
    """The window of world time ``question`` refers to, read at ``now`` (timezone-aware), or
    ``None``. The earliest reference in the question wins; "before X" / "after X" / "since X"
    open the window on one side of X."""
    text = question.casefold()
    found = sorted(
        (
            (name, match)
            for name, pattern in (*_PATTERNS, *_CJK_PATTERNS)
            for match in pattern.finditer(text)
        ),
        key=lambda f: (f[1].start(), -f[1].end()),
    )
    while found:
        # Of the references overlapping the earliest, the longest ("after March 5, 2023", not
        # "after March").
        first = found[0][1]
        name, match = max(
            (f for f in found if f[1].start() < first.end()), key=lambda f: f[1].end()
        )
        found = [f for f in found if f[1] is not match]
        if name == "date_md" and not _dated(match, text):
            continue
        window = _window(name, match, now)
        if window is None:
            continue
        start, end = window
        start, end = start, min(end, now)
        if start >= end:  # after the read, and so is every reference inside it ("2023年")
            found = [f for f in found if not _inside(f[1], match)]
            continue
        phrase = question[match.start() : match.end()].strip()
        bound = _LEADING.match(match.group(0)) or _BOUND.search(text[: match.start()])
        if bound is not None:
            word = bound.group(1)
            if bound.re is _BOUND:
                phrase = question[bound.start() : match.end()].strip()
            if word in ("before", "until", "by"):
                return TimeWindow(phrase, None, end if word != "before" else start)
            return TimeWindow(phrase, end if word == "after" else start, now)
        return TimeWindow(phrase, start, end)
    return None


def _inside(inner: re.Match[str], outer: re.Match[str]) -> bool:
    return outer.start() <= inner.start() and inner.end() <= outer.end()


def _dated(match: re.Match[str], text: str) -> bool:
    """Whether "May 2" reads as a date: an ordinal, a year, or a preposition before it."""
    return bool(
        match.group("year")
        or re.search(r"\d(?:st|nd|rd|th)", match.group(0))
        or re.search(r"\b(?:on|before|after|since|until|by|of|from)\s+$", text[: match.start()])
    )


def _window(name: str, m: re.Match[str], now: datetime) -> tuple[datetime, datetime] | None:
    day = datetime.combine(now.date(), time(), tzinfo=now.tzinfo)  # today, 00:00
    g = m.groupdict()
    if name.startswith("cjk_"):
        return _cjk_window(name, g, now, day)
    if name == "ago":
        unit = _UNITS[g["unit"]]
        low, high = _count(g["count"])
        if unit == _UNITS["hour"]:
            return now - unit * (high + 1), now - unit * max(0, low - 1)
        pad = unit / 2
        return now - unit * high - pad, now - unit * low + pad
    if name == "past":
        low, high = _count(g["count"] or "one")
        return now - _UNITS[g["unit"]] * high, now
    if name == "yesterday":
        back = 2 if m.group(0).startswith("the") else 1
        return day - timedelta(days=back), day - timedelta(days=back - 1)
    if name == "today":
        return day, now
    if name in ("last_period", "this_period"):
        return _period(g["period"], day, last=name == "last_period")
    if name == "last_weekday":
        back = (day.weekday() - _WEEKDAYS[g["weekday"]] - 1) % 7 + 1
        return day - timedelta(days=back), day - timedelta(days=back - 1)
    if name == "year":
        whole = int(g["year"])
        return _at(now, whole, 1, 1), _at(now, whole + 1, 1, 1)
    month = _month_number(g["month"])
    if month is None:
        return None
    year = _year(g.get("year"), now)
    if name in ("month", "month_year"):
        if year is None:
            year = now.year if month <= now.month else now.year - 1
        end_year, end_month = (year + 1, 1) if month == 12 else (year, month + 1)
        return _at(now, year, month, 1), _at(now, end_year, end_month, 1)
    number = int(g["day"])
    if year is None:
        year = now.year if (month, number) <= (now.month, now.day) else now.year - 1
    try:
        start = _at(now, year, month, number)
    except ValueError:  # "February 30"
        return None
    return start, start + timedelta(days=1)


def _cjk_window(
    name: str, g: dict[str, str | None], now: datetime, day: datetime
) -> tuple[datetime, datetime] | None:
    """The window of a Korean, Japanese or Chinese reference (see :data:`_CJK_PATTERNS`)."""
    if name == "cjk_ago":
        count = str(g["count"])
        n = int(count) if count.isdigit() else _CJK_NUMBERS[count]
        unit = _UNITS[_CJK_UNITS[str(g["unit"])]]
        if unit == _UNITS["hour"]:
            return now - unit * (n + 1), now - unit * max(0, n - 1)
        return now - unit * n - unit / 2, now - unit * n + unit / 2
    if name == "cjk_period":
        period, last = _CJK_PERIODS[str(g["period"])]
        return _period(period, day, last=last)
    if name == "cjk_day":
        back = _CJK_DAYS[str(g["day_word"])]
        return (
            (day, now)
            if back == 0
            else (day - timedelta(days=back), day - timedelta(days=back - 1))
        )
    if name == "cjk_year":
        whole = int(str(g["year"]))
        return _at(now, whole, 1, 1), _at(now, whole + 1, 1, 1)
    month = int(str(g["month"]))
    number = 1 if g.get("day") is None else int(str(g["day"]))
    if g["year"] is not None:
        year = int(g["year"])
    else:  # the latest such month or day at the read instant or before it
        year = now.year if (month, number) <= (now.month, now.day) else now.year - 1
    if name == "cjk_month":
        end_year, end_month = (year + 1, 1) if month == 12 else (year, month + 1)
        return _at(now, year, month, 1), _at(now, end_year, end_month, 1)
    try:
        start = _at(now, year, month, number)
    except ValueError:
        return None
    return start, start + timedelta(days=1)


def _count(word: str) -> tuple[int, int]:
    if word in _VAGUE:
        return _VAGUE[word]
    n = int(word) if word.isdigit() else _NUMBERS[word]
    return n, n


def _period(period: str, day: datetime, *, last: bool) -> tuple[datetime, datetime]:
    if period == "week":
        start = day - timedelta(days=day.weekday())
        return (start - timedelta(weeks=1), start) if last else (start, start + timedelta(weeks=1))
    if period == "weekend":  # the latest Saturday and Sunday before today
        saturday = day - timedelta(days=(day.weekday() - 5) % 7 or 7)
        return saturday, saturday + timedelta(days=2)
    if period == "month":
        start = day.replace(day=1)
        if not last:
            return start, day + timedelta(days=1)
        previous = (start - timedelta(days=1)).replace(day=1)
        return previous, start
    start = day.replace(month=1, day=1)
    return (start.replace(year=start.year - 1), start) if last else (start, day + timedelta(days=1))


def _month_number(word: str | None) -> int | None:
    if word is None:
        return None
    return int(word) if word.isdigit() else _MONTHS.get(word)


def _year(word: str | None, now: datetime) -> int | None:
    if word is None:
        return None
    year = int(word)
    return year + (now.year // 100) * 100 if year < 100 else year


def _at(now: datetime, year: int, month: int, day: int) -> datetime:
    return datetime(year, month, day, tzinfo=now.tzinfo)
