"""Text shared by reads and writes: dedup keys, passages, transcript speakers and what a
question's words ask for. The full-text analyser is ``chronomem.analysis``."""

from __future__ import annotations

import hashlib
import re

__all__ = [
    "NameFinder",
    "dedup_key",
    "event_key",
    "normalise_text",
    "number_key",
    "passage_spans",
    "passages",
    "asks_when_something_happened",
    "clip",
    "display_width",
    "wide_chars",
    "refers_to_self",
    "speaker",
    "spoken",
]


def normalise_text(text: str) -> str:
    """Case-folded, whitespace-collapsed text: two records with the same normalised text are the
    same memory for multi-agent dedup (DESIGN §2 step 8)."""
    return " ".join(text.casefold().split())


def dedup_key(text: str) -> int:
    """A stable signed 64-bit hash of :func:`normalise_text` (stable across processes)."""
    digest = hashlib.blake2b(normalise_text(text).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True)


_NUMBER = re.compile(r"\d+")


def number_key(text: str) -> int:
    """A stable 64-bit hash of the numbers a text states, in order (0: it states none). Two
    texts stating different numbers — "Pin libfoo to 2.1" and "… to 2.2", "at 10am" and "at
    11am" — say different things however close their vectors: the write gate never merges
    them."""
    found = _NUMBER.findall(text)
    if not found:
        return 0
    joined = " ".join(n.lstrip("0") or "0" for n in found)
    digest = hashlib.blake2b(joined.encode("ascii"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


def event_key(event_id: str) -> int:
    """A stable non-zero 64-bit key of an event id (0 means "no event" in arrays)."""
    digest = hashlib.blake2b(event_id.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little", signed=True) or 1


# "Name: words" — a line of a transcript. The name starts with a letter, is at most 40 characters of
# letters, digits, spaces, dots, apostrophes and hyphens, and the colon is followed by whitespace
# (so "http://..." and "10:30" are not speakers).
_SPEAKER = re.compile(r"\s*([^\W\d_][\w .'-]{0,39}?)\s*:\s+(?=\S)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_FIRST_PERSON = re.compile(r"(?<![\w.])(?:i|me|my|mine|myself)(?!\w|\.\w)")
_MIN_PASSAGE_CHARS = 4


# 'Name said, "words"' — a line of prose quoting a speaker (said, says, asked, replied, told
# someone, wrote, added, answered, explained, mentioned); the name is not an article or a pronoun.
_PROSE = re.compile(
    r"\s*(?!(?:the|a|an|this|that|it|he|she|they|we|i|you|someone|everyone)\b)"
    r"([^\W\d_][\w .'-]{0,39}?)\s+(?:said|says|asked|asks|replied|replies|answered|wrote|"
    r"writes|added|adds|explained|mentioned|told (?:\w+ ?){1,3})\b[^\"“”]{0,20}?[,:]?\s*[\"“]",
    re.IGNORECASE,
)
_CLOSING = re.compile(r"[\"”]([.!?]?)(?=\s*(?:\[|$))")


def speaker(text: str) -> str | None:
    """Who says a line (case-folded): the name of a transcript line ``"Name: words"``, or of a
    line of prose quoting someone (``'Name said, "words"'``); ``None`` otherwise. A record's
    own ``speaker`` comes first (:func:`spoken`)."""
    match = _SPEAKER.match(text) or _PROSE.match(text)
    return None if match is None else match.group(1).casefold()


class NameFinder:
    """Which of many names (speakers' names, case-folded) occur in a text as substrings, without
    testing every name: a name occurs only where its first two characters do, so only the names
    starting with a pair of characters the text holds are tested. For a space's thousands of
    speakers, asked about on every read."""

    __slots__ = ("_starting", "names", "source")

    def __init__(self, names: dict[str, int]) -> None:
        #: what the names were read from (a dict that only ever grows: a finder of as many
        #: names as it holds is still current)
        self.source = names
        #: the names, sorted
        self.names: tuple[str, ...] = tuple(sorted(names))
        self._starting: dict[str, list[str]] = {}
        for name in self.names:
            self._starting.setdefault(name[:2], []).append(name)

    def current(self, names: dict[str, int]) -> bool:
        """Whether this finder still answers for ``names``."""
        return names is self.source and len(names) == len(self.names)

    def within(self, text: str) -> list[str]:
        """The names that occur in ``text`` (which is case-folded like them), sorted."""
        pairs = {""} | {text[i : i + 2] for i in range(len(text))} | set(text)
        starting = self._starting
        return sorted(n for p in pairs if p in starting for n in starting[p] if n in text)


def spoken(text: str, who: str | None) -> str:
    """A record's text as a model and the full-text index read it, in one shape whatever shape
    it was written in (DESIGN §9): a transcript line as it is; a line of prose quoting its
    speaker (``'Caroline said, "I went."'``) as the transcript line it is
    (``"Caroline: I went."``); a text with a ``speaker`` (a record's field) with that name in
    front. So one conversation stored as transcript, prose or role-tagged turns is read alike."""
    named = _SPEAKER.match(text)
    if named is not None and (who is None or named.group(1).casefold() == who.casefold()):
        return text
    prose = _PROSE.match(text)
    if prose is not None and (who is None or prose.group(1).casefold() == who.casefold()):
        said = text[prose.end() :]
        closing = _CLOSING.search(said)
        if closing is not None:
            said = said[: closing.start()] + closing.group(1) + said[closing.end() :]
        return f"{prose.group(1)}: {said}"
    # The speaker field is who said it: words that merely look like "Name: " ("I got ideas
    # from everywhere: people, places") are the words.
    return text if who is None else f"{who}: {text}"


def passages(text: str, *, limit: int = 32) -> list[str]:
    """The sentences of a record that has more than one, each embedded on its own so that a fact
    said in passing in a long record is as close to a question about it as a short record saying
    only that fact. A transcript line's speaker prefixes every passage (``"Name: sentence"``),
    also one whose words look like a name and a colon ("I got ideas from everywhere: …"); a new
    line that starts with its own ``"Name: "`` keeps it instead. Empty for a record of one
    sentence: its own vector already is that sentence's. Past ``limit`` sentences, the rest form
    the last passage. A fragment under four characters ("Mr.", "1.") joins the next sentence."""
    match = _SPEAKER.match(text)
    prefix = "" if match is None else text[: match.end()].strip() + " "
    out = []
    for part in _passage_parts(text, limit):
        passage = " ".join(text[s:e] for s, e in part)
        # a new line may name its own speaker; words after the record's speaker never do
        own = text[: part[0][0]].rstrip(" \t").endswith("\n") and _SPEAKER.match(passage)
        out.append(passage if own or passage.startswith(prefix) else prefix + passage)
    return out


def passage_spans(text: str, *, limit: int = 32) -> list[tuple[int, int]]:
    """Where each of :func:`passages` lies in ``text``: the ``(start, end)`` character offsets
    of its sentence(s), without the speaker prefix a passage repeats (in the same order; empty
    when there are no passages)."""
    return [(part[0][0], part[-1][1]) for part in _passage_parts(text, limit)]


def _passage_parts(text: str, limit: int) -> list[list[tuple[int, int]]]:
    """The passages of ``text`` as the character spans of the stripped sentence pieces each
    joins (with single spaces): the one splitting behind :func:`passages` and
    :func:`passage_spans`."""
    match = _SPEAKER.match(text)
    offset = 0 if match is None else match.end()
    body = text[offset:]
    pieces: list[tuple[int, int]] = []
    start = 0
    for gap in [*_SENTENCE_END.finditer(body), None]:
        end = len(body) if gap is None else gap.start()
        chunk = body[start:end]
        lead = len(chunk) - len(chunk.lstrip())
        pieces.append((offset + start + lead, offset + start + len(chunk.rstrip())))
        if gap is not None:
            start = gap.end()
    parts: list[list[tuple[int, int]]] = []
    carry: list[tuple[int, int]] = []
    for s, e in pieces:
        piece = [*carry, (s, e)] if e > s else carry
        size = sum(b - a for a, b in piece) + len(piece) - 1
        carry = piece if piece and size < _MIN_PASSAGE_CHARS else []
        if not carry and piece:
            parts.append(piece)
    if carry and parts:
        parts[-1] = parts[-1] + carry
    if len(parts) < 2:
        return []
    if len(parts) > limit:
        parts = [*parts[: limit - 1], [span for part in parts[limit - 1 :] for span in part]]
    return parts


_WHEN_PAST = re.compile(
    r"^\W*(?:when|in what (?:year|month)|what (?:date|day|year|month)|which (?:year|month|day))"
    r"\s+(?:did|was|were|had)\b|\bhow long ago\b"
)
_LATEST = re.compile(r"\b(?:last|latest|most recent(?:ly)?)\b")
# Korean, Japanese and Chinese: "when" with a past tense ("언제 …했어", "いつ…した",
# "什么时候…了"), not with "last" / "lately" ("마지막으로", "最後に", "最后一次", "最近").
_WHEN_PAST_CJK = re.compile(
    r"언제.*(?:았|었|였|했|갔|왔|샀|봤|됐)|(?:몇\s?년|몇\s?월|며칠)에.*(?:았|었|였|했)"
    r"|いつ.*(?:た|ました|だった)|何年.*(?:た|ました)"
    r"|(?:什么时候|何时|哪天|哪一天|哪年|哪一年|几时).*(?:了|过|的)"
)
_LATEST_CJK = re.compile(r"마지막|최근|最後|最近|最后")


def asks_when_something_happened(query: str) -> bool:
    """Whether a query asks for the time of a past event ("When did ...", "What year was ...",
    "How long ago ...", "언제 …했어?", "いつ…した?", "什么时候…的?"): the moment of an event, not
    the current state of anything. Not when it asks for the last or latest time ("When did I
    last ...")."""
    q = query.casefold()
    if _WHEN_PAST.search(q) is not None and _LATEST.search(q) is None:
        return True
    return _WHEN_PAST_CJK.search(q) is not None and _LATEST_CJK.search(q) is None


def refers_to_self(query: str) -> bool:
    """Whether a query speaks in the first person ("I", "me", "my", "mine", "myself")."""
    return _FIRST_PERSON.search(query.casefold()) is not None


# What the other party said, suggested or listed: "you recommended", "did you mention", "your
# list", "remind me", "our previous conversation". Past forms after "you" only: "can you suggest"
# asks for something new. On LongMemEval's oracle questions this reads 55 of the 56 questions
# about the assistant's own words, and none of the 444 others.
_SAID = (
    r"said|told|mentioned|recommended|suggested|listed|provided|gave|given|shared|described|"
    r"explained|wrote|written|offered|proposed|named|showed|shown|created|included|advised|"
    r"came up with|come up with|talked about|discussed|noted|pointed out"
)
_SAY = (
    r"say|tell|mention|recommend|suggest|list|provide|give|share|describe|explain|write|offer|"
    r"propose|name|show|create|include|advise|come up with|talk about|discuss|note|point out"
)
_TO_THE_OTHER = re.compile(
    rf"\byou(?:'ve|'d| have| had| just| also)?\s+(?:\w+\s+)?(?:{_SAID}|made|used)\b"
    rf"|\b(?:did|have|had) you\s+(?:\w+\s+)?(?:{_SAY}|make|use)\b"
    r"|\byour (?:list|suggestions?|recommendations?|answer|advice|response|explanation|previous"
    r"|earlier|last)\b|\bremind me\b"
    r"|\bour (?:previous|earlier|last|past) (?:conversation|chat|discussion|talk|exchange"
    r"|session|game)"
)


# The same, said to the other party in Korean, Japanese and Chinese: "you" with a verb of saying
# or advising ("네가 추천한", "あなたが勧めた", "你推荐的").
_TO_THE_OTHER_CJK = re.compile(
    r"(?:네가|니가|너가|당신이)\s*\S*?(?:말했|말한|추천|알려|제안|권했|권한|얘기)"
    r"|(?:あなたが|あなたは|君が|きみが)\S*?(?:言った|言って|勧め|薦め|教えて|提案)"
    r"|你(?:之前|刚才|上次)?(?:说|推荐|建议|提到|告诉|讲|列)"
)
# The verbs of saying after a name in Korean, Japanese and Chinese.
_SAID_CJK = (
    r"(?:이|가|은|는|께서|씨가|씨는)?\s*\S*?(?:말했|말한|추천|제안|알려|얘기|권했|뭐라고)"
    r"|(?:さん)?(?:は|が)\S*?(?:言った|言って|話した|勧め|提案|教えて)"
    r"|(?:之前|刚才|上次)?(?:说|讲|提到|建议|推荐|告诉)"
)


def asks_what_the_other_said(query: str) -> str | None:
    """The words by which a query asks what the party it speaks to said, suggested or listed
    ("You recommended five bottles ...", "remind me of the 7th job in the list you provided",
    "네가 추천한 …", "あなたが勧めた …", "你推荐的 …"), or ``None``."""
    q = query.casefold()
    match = _TO_THE_OTHER.search(q) or _TO_THE_OTHER_CJK.search(q)
    return None if match is None else match.group(0)


def asks_what_someone_said(query: str, name: str) -> str | None:
    """The words by which a query asks what ``name`` (a speaker) said, suggested or listed
    ("What did Melanie suggest ...", "Caroline recommended ..."), or ``None``."""
    who = re.escape(name.casefold())
    pattern = (  # words only: what a named speaker made or used is a deed, not a line
        rf"\b{who}(?:'s)?\s+(?:\w+\s+)?(?:{_SAID}|suggestions?|recommendations?|advice|list)\b"
        rf"|\b(?:did|has|had) {who}\s+(?:\w+\s+)?(?:{_SAY})\b"
    )
    q = query.casefold()
    match = re.search(pattern, q) or re.search(f"{who}(?:{_SAID_CJK})", q)
    return None if match is None else match.group(0)


# Questions whose answer takes several pieces of evidence: a count or sum ("how many", "how much
# did", "in total"), an order ("first", "before", "after"), a change or comparison ("switch",
# "compared", "previously", "still"); not a present amount ("how much does flour cost?").
_EVERY_PIECE = re.compile(
    r"\bhow many\b|\bhow much (?:did|have|has|had|was|were|more|less|money|time)\b"
    r"|\btotal\b|\baltogether\b|\bcombined\b|\bfirst\b|\bearliest\b"
    r"|\border\b|\bbefore\b|\bafter\b|\bcompar(?:e|ed|ing)\b|\bswitch|\bchang(?:e|ed|es)\b"
    r"|\bpreviously\b|\bprevious (?!conversation|chat|discussion|talk|session|exchange|game)"
    r"|\binitial(?:ly)?\b|\boriginal(?:ly)?\b|\bused to\b|\bdifference\b|\bbetween\b"
    r"|\b(?:more|less|fewer) than\b|\bincreas|\bdecreas|\bboth\b|\beach\b|\bevery\b"
    r"|\ball (?:the|of)\b|\bsince\b|\bso far\b|\bstill\b|\banymore\b"
)


# Korean, Japanese and Chinese counts, totals and firsts ("몇 번", "何回", "几次", "一共").
_EVERY_PIECE_CJK = re.compile(
    r"몇\s?(?:번|개|명|가지|곳|권|잔|회|번째)|모두\s?몇|전부|합계|총\s?몇|처음으로|맨\s?처음"
    r"|何回|何人|何個|何冊|何杯|いくつ|合計|全部で|最初に|初めて"
    r"|几次|多少次|几个|多少个|一共|总共|合计|第一次|最早"
)


def asks_for_every_piece(query: str) -> str | None:
    """The words by which a query asks for a count, an order, a change or a comparison — an
    answer that takes every piece of evidence, not the best one — or ``None``."""
    q = query.casefold()
    match = _EVERY_PIECE.search(q) or _EVERY_PIECE_CJK.search(q)
    return None if match is None else match.group(0)


# East Asian wide and full-width characters (Hangul, kana, hanzi, full-width forms, emoji): two
# terminal columns each, and about one model token each where a Latin word of four or five
# letters is one.
_WIDE = re.compile(
    "[\u1100-\u115f\u2e80-\u303e\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua000-\ua4cf"
    "\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff\ufe10-\ufe19\ufe30-\ufe6f\uff00-\uff60"
    "\uffe0-\uffe6\U0001f300-\U0001f64f\U0001f900-\U0001f9ff\U00020000-\U0003fffd]"
)


def wide_chars(text: str) -> int:
    """How many of ``text``'s characters are East Asian wide or full-width."""
    return len(_WIDE.findall(text))


def display_width(text: str) -> int:
    """The columns ``text`` takes in a terminal (a wide character takes two)."""
    return len(text) + wide_chars(text)


def clip(text: str, columns: int) -> str:
    """``text`` cut to at most ``columns`` terminal columns, with "…" where it was cut."""
    if display_width(text) <= columns:
        return text
    used = 0
    for i, char in enumerate(text):
        used += 2 if _WIDE.match(char) else 1
        if used > columns - 1:
            return text[:i] + "…"
    return text
