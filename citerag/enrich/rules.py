"""The enrichment that needs no model: years, dates, money, percentages, caption labels, names.

Named entities are runs of capitalized words (joined by "of", "de", "&" or a number, as in
"IBM 1401" or "Bank of America"). A single capitalized word counts only when the document
never writes it in lower case and writes it capitalized inside a sentence at least once:
"Lisp" and "Viaweb" are names, a sentence-initial "The", "Meanwhile" or "Painting" is not.
The rule was chosen by measurement on hand-labelled essay pages (benchmarks/results/enrichment.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from citerag.enrich.fields import DATES, ENTITIES, LABELS, MONEY, PERCENTS, YEARS, Fields
from citerag.text.dates import dates, years
from citerag.text.stopwords import NAME_EDGE_WORDS

_MONEY = re.compile(
    r"(?:[$€£]\s?\d[\d,]*(?:\.\d+)?(?:\s?(?:million|billion|thousand|trillion|[MBK])\b)?"
    r"|\b\d[\d,]*(?:\.\d+)?\s(?:million|billion)\s(?:dollars|USD)\b)",
    re.I,
)
_PERCENT = re.compile(r"\b\d+(?:\.\d+)?\s?(?:%|percent\b)", re.I)
_CAPTION = re.compile(
    r"^\s*(figure|fig\.|table|exhibit)\s+(\d+(?:\.\d+)*[a-z]?)\s*[:.]", re.I | re.M
)
_EQUATION_TAG = re.compile(r"[=∑Σ∫][^\n]*(?:\n[ \t]*)?\((\d+(?:\.\d+)?)\)[ \t]*$", re.M)
_CAPTION_KIND = {"figure": "figure", "fig.": "figure", "table": "table", "exhibit": "table"}
_WORD = r"[A-Z](?:[\w'’.&/-]*\w)?"
_NAME = re.compile(
    rf"(?<![\w.])({_WORD}(?:\s+(?:(?:of|de|del|van|von|the|&)\s+)?(?:{_WORD}|\d{{2,4}}))*)"
)
_LOWER_WORDS = re.compile(r"\b[a-z][a-z'’-]+\b")
MAX_ENTITY_WORDS = 6


def caption_labels(text: str, block_type: str = "", label: str = "") -> list[str]:
    """`kind:number` for each figure/table caption and tagged equation the text holds."""
    found: dict[str, None] = {}
    if label and block_type in ("figure", "table", "equation"):
        found[f"{block_type}:{label.casefold()}"] = None
    for match in _CAPTION.finditer(text):
        found[f"{_CAPTION_KIND[match.group(1).casefold()]}:{match.group(2).casefold()}"] = None
    for match in _EQUATION_TAG.finditer(text):
        found[f"equation:{match.group(1)}"] = None
    return list(found)


_MID_SENTENCE = re.compile(r"(?<=[\w,;:)])[ \t]+([A-Z][\w'’-]+)")


def lower_vocabulary(texts: Iterable[str]) -> frozenset[str]:
    """Every word the document writes in lower case."""
    return frozenset(w for text in texts for w in _LOWER_WORDS.findall(text))


def mid_sentence_capitals(texts: Iterable[str]) -> frozenset[str]:
    """Capitalized words the document writes after another word (not at a sentence start)."""
    return frozenset(m.group(1) for text in texts for m in _MID_SENTENCE.finditer(text))


def named_entities(
    text: str, lower_words: frozenset[str], mid_capitals: frozenset[str] | None = None
) -> list[str]:
    found: dict[str, None] = {}
    for match in _NAME.finditer(text):
        name = _trimmed(match.group(1), lower_words, mid_capitals)
        if name and _is_name(name, lower_words, mid_capitals):
            found.setdefault(name, None)
    return list(found)


def _trimmed(
    name: str, lower_words: frozenset[str] = frozenset(), mid_capitals: frozenset[str] | None = None
) -> str:
    """The run without leading/trailing function words, numbers, and a sentence-initial
    ordinary word ("Learning Lisp" is "Lisp")."""
    words = re.sub(r"['’]s$", "", name.rstrip(".'’")).split()
    while words and (words[0].casefold() in NAME_EDGE_WORDS or words[0].isdigit()):
        words = words[1:]
    while words and (words[-1].casefold() in NAME_EDGE_WORDS or words[-1] == "&"):
        words = words[:-1]
    first = words[0] if words else ""
    if len(words) > 1 and first.casefold() in lower_words and first not in (mid_capitals or ()):
        words = words[1:]
    return " ".join(words[:MAX_ENTITY_WORDS])


def _is_name(name: str, lower_words: frozenset[str], mid_capitals: frozenset[str] | None) -> bool:
    words = name.split()
    if not words or words[0].isdigit():
        return False
    if len(words) > 1:
        return True
    return _is_lone_name(words[0], lower_words, mid_capitals)


def _is_lone_name(
    word: str, lower_words: frozenset[str], mid_capitals: frozenset[str] | None
) -> bool:
    """A lone capitalized word is a name when the document never writes it in lower case and
    (when known) capitalizes it inside a sentence too."""
    word = word[:-2] if word.endswith(("'s", "’s")) else word
    if word.casefold() in NAME_EDGE_WORDS or len(word) < 2:
        return False
    if word.isupper():
        return True
    seen_inside = mid_capitals is None or word in mid_capitals
    return word.casefold() not in lower_words and seen_inside


class RulesExtractor:
    """Fills every list field from the text alone; the document's vocabulary is its context."""

    name = "rules"

    def fields(self, texts: Sequence[str]) -> list[Fields]:
        return self.extract(texts)

    def extract(
        self, texts: Sequence[str], block_types: Sequence[str] = (), labels: Sequence[str] = ()
    ) -> list[Fields]:
        vocabulary = lower_vocabulary(texts)
        capitals = mid_sentence_capitals(texts)
        kinds = list(block_types) or [""] * len(texts)
        tags = list(labels) or [""] * len(texts)
        return [
            self.extract_one(text, vocabulary, kind, tag, capitals)
            for text, kind, tag in zip(texts, kinds, tags, strict=True)
        ]

    def extract_one(
        self,
        text: str,
        vocabulary: frozenset[str],
        block_type: str = "",
        label: str = "",
        capitals: frozenset[str] | None = None,
    ) -> Fields:
        return {
            YEARS: years(text),
            DATES: dates(text),
            MONEY: _unique(" ".join(m.group(0).split()) for m in _MONEY.finditer(text)),
            PERCENTS: _unique(" ".join(m.group(0).split()) for m in _PERCENT.finditer(text)),
            LABELS: caption_labels(text, block_type, label),
            ENTITIES: named_entities(text, vocabulary, capitals),
        }


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))
