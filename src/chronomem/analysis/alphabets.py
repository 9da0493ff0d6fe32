"""The language of a text written in the Latin, Cyrillic or Greek alphabet, and its Snowball
stems (PyStemmer), for the full-text analyser.

Greek text is Greek; Cyrillic text Russian unless it has letters Russian lacks (Ukrainian "і",
Serbian "ј", ...: then it has no stemmer). A Latin-script text's language is read from its
function words: each language below has a list of short,
frequent words that are *not* English words ("les", "und", "los", "della", "het", "och"...), and
the language whose list covers most of the text's words wins — if it covers at least two and more
than English's stopwords do. Anything else, short queries without function words included, is
English: its analysis is the analyser of earlier versions, so English results do not move.

A word of a text in another language is indexed as its stem in that language *and* the term it
has without one (its English term for a Latin word; a Cyrillic or Greek word as it is) when the
two differ, unaccented after stemming (so "ninos" meets "niños"; Cyrillic keeps its marks): a
short query whose language cannot be told still meets the record, and a query in the record's
language meets it twice. The language's own function words are dropped like English stopwords.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from functools import lru_cache

import Stemmer

__all__ = ["ENGLISH", "STOPWORDS", "language_of_words", "terms_of"]

ENGLISH = "english"
_MAX_TERM_CHARS = 64

# English function words: a match on "the" alone says nothing about relevance, and indexing them
# would make every posting list as long as the space. They are neither indexed nor queried.
STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its
    itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)

# Function words of each language that are not English words (so English text never counts
# for them: "die", "war", "men", "at", "con", "come" are left out), case-folded, with accents.
_MARKERS: dict[str, frozenset[str]] = {
    language: frozenset(words.split())
    for language, words in {
        "french": "le les des du au aux une est et avec pour pas sur dans qui que je nous vous"
        " ils elles mais très été être cette ces mon mes ton ta tes leur leurs où il elle ce"
        " sont était avait fait chez aussi comme",
        "german": "der das und ist nicht mit dem des ein eine einen einem ich du sie wir ihr es"
        " sich auch auf für von zu im bei nach aus wie noch nur schon sehr oder aber wenn dass"
        " sind haben wird",
        "spanish": "el los las del una unos unas es para por que qué se su sus como más pero muy"
        " está están fue tú él ella nosotros ellos mis también cuando dónde donde",
        "italian": "il gli della dello delle degli nel nella una uno è che si sono tu lei noi"
        " voi loro mio mia suo sua anche più molto quando hanno",
        "portuguese": "das dos uma é por que não se sua seu ao nas nos num numa mais muito está"
        " foi ele ela nós eles meu minha também quando onde você",
        "dutch": "het een en ik je niet dat met voor zijn maar ook naar bij wat nog wel geen"
        " omdat heeft hebben werd wordt mijn zij jij",
        "swedish": "och att det som en är på för inte har jag du hon ni från så när ett mycket"
        " också",
        "danish": "og det som en på ikke har jeg du hun fra så når meget også",
        "norwegian": "og det som en på ikke har jeg du hun fra så når mye også",
        "finnish": "ja ei se että oli ovat mutta kun tai myös kuin hän minä sinä te tämä tuo"
        " niin vain sitten",
        "russian": "и в не на что с по это как он она они я мы вы но из за к у от же так"
        " был была были есть для его её их мой моя",
        "greek": "και το τα η ο οι του της των στο στη στην με για που δεν είναι ένα μια"
        " θα να από σε",
    }.items()
}
# The alphabet each language is written in (a word of another alphabet is not stemmed by it).
_ALPHABET = {language: "latin" for language in _MARKERS} | {"russian": "cyrillic", "greek": "greek"}
_STEMMERS: dict[str, Stemmer.Stemmer] = {}
# Cyrillic letters of Ukrainian, Belarusian, Serbian, Macedonian, Kazakh ... that Russian lacks.
_NOT_RUSSIAN = frozenset("іїєґўђјљњћџѓќѕәғқңөұүһ")


def language_of_words(words: Sequence[str], alphabet: str) -> str | None:
    """The language of a text's case-folded ``words`` of one ``alphabet`` (see the module
    docstring): a Snowball language name, or ``None`` for English (Latin) and for Cyrillic
    text of another language than Russian."""
    if alphabet == "greek":
        return "greek"
    if alphabet == "cyrillic":  # Russian, unless letters of another language show
        return None if any(_NOT_RUSSIAN.intersection(w) for w in words) else "russian"
    english = sum(w in STOPWORDS for w in words) if alphabet == "latin" else 0
    best, hits = None, 1
    for language, markers in _MARKERS.items():
        if _ALPHABET[language] != alphabet:
            continue
        found = sum(w in markers for w in words)
        if found > hits:
            best, hits = language, found
    return best if best is not None and hits > english else None


def _stemmer(language: str) -> Stemmer.Stemmer:
    found = _STEMMERS.get(language)
    if found is None:
        found = _STEMMERS[language] = Stemmer.Stemmer(language)
    return found


def _unaccent(word: str) -> str:
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _plain(word: str, alphabet: str) -> str:
    """A word's term without a language: unaccented Latin and Greek, Cyrillic as it is (its
    marks are letters: "й" is not "и")."""
    return (word if alphabet == "cyrillic" else _unaccent(word))[:_MAX_TERM_CHARS]


@lru_cache(maxsize=1 << 16)
def terms_of(word: str, alphabet: str, language: str | None) -> tuple[str, ...]:
    """The index terms of a case-folded word of ``alphabet`` in a text of ``language``
    (:func:`language_of_words`; ``None``: English for Latin words, none for the others)."""
    if alphabet == "latin":
        if word in STOPWORDS:
            return ()
        base = str(_stemmer(ENGLISH).stemWord(_unaccent(word)))[:_MAX_TERM_CHARS]
    else:
        base = _plain(word, alphabet)
    if language is None:
        return (base,)
    if word in _MARKERS[language]:
        return ()
    own = _plain(str(_stemmer(language).stemWord(word)), alphabet)
    return (own,) if own == base else (own, base)
