"""Which of a collection's stored values (entity names, topic values) a text names, matched
whole-word and case-blind.

Entity names grow with every document, so a serving process does not hold them: `mentions_in`
asks a store (the docstore's value table) about every span of the text a name could be, in one
lookup. Topics, a few per document, are held per snapshot and matched in memory
(`EntityMatcher`, `TopicMatcher`): the values sit in a dict keyed by their case-folded text and
are looked up at each word start of the text, only at the lengths that values sharing its first
characters have (one compiled alternation of every value took seconds to build once a library
held tens of thousands of them). Both find the same values.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Collection, Iterable, Sequence
from typing import Protocol

MIN_ENTITY_CHARS = 3
# The longest stored value a question can be found to name when the values are looked up in a
# store (`mentions_in`): every span of the question up to this length is one candidate.
MAX_MENTION_CHARS = 100
_WORD = re.compile(r"\w")


class StoredNames(Protocol):
    """A store of values looked up by their case-folded text (a docstore's value table)."""

    def present(self, folded: Collection[str]) -> Collection[str]:
        """Those of `folded` that some stored value folds to."""
        ...


class EntityMatcher:
    """Every known value of at least MIN_ENTITY_CHARS characters, found wherever the text holds
    it between non-word characters (overlapping mentions included); a value inside a longer
    one found is left out."""

    def __init__(self, known: Sequence[str]) -> None:
        value_of: dict[str, str] = {}
        for value in sorted(known, key=len, reverse=True):  # the longest written form wins
            if len(value) >= MIN_ENTITY_CHARS:
                value_of.setdefault(value.casefold(), value)
        lengths: dict[str, set[int]] = defaultdict(set)
        for folded in value_of:
            lengths[folded[:MIN_ENTITY_CHARS]].add(len(folded))
        self._value_of = value_of
        # first characters -> the lengths to try there, longest first
        self._lengths = {start: sorted(found, reverse=True) for start, found in lengths.items()}

    def mentions(self, question: str) -> list[str]:
        return _outermost({self._value_of[found] for found in self._found(question.casefold())})

    def _found(self, text: str) -> list[str]:
        """The longest value starting at each position that no word character precedes."""
        if not self._value_of:
            return []
        word = [bool(_WORD.match(char)) for char in text]
        found = []
        for start in range(len(text)):
            if start and word[start - 1]:
                continue
            for length in self._lengths.get(text[start : start + MIN_ENTITY_CHARS], ()):
                end = start + length
                if end > len(text) or (end < len(text) and word[end]):
                    continue
                if text[start:end] in self._value_of:
                    found.append(text[start:end])
                    break
        return found


class TopicMatcher:
    """Topics (`kind=value`, as LangExtract writes them) named by their value: a text naming the
    value names every topic of it."""

    def __init__(self, topics: Sequence[str]) -> None:
        by_value: dict[str, list[str]] = defaultdict(list)
        for topic in topics:
            by_value[topic.partition("=")[2] or topic].append(topic)
        self._by_value = by_value
        self._values = EntityMatcher(list(by_value))

    def mentions(self, text: str) -> list[str]:
        return [topic for value in self._values.mentions(text) for topic in self._by_value[value]]


def mentions_in(question: str, names: StoredNames) -> list[str]:
    """What `EntityMatcher` finds, with the values in a store instead of in memory: every span
    of the question that a value could be (whole words, MIN_ENTITY_CHARS to MAX_MENTION_CHARS
    long) is asked for in one lookup, so a process holds no list of every name. Each is given
    as the question writes it (case-folded where folding changed the question's length)."""
    folded = question.casefold()
    spans = list(_spans(folded))
    present = set(names.present({folded[start:end] for start, end in spans})) if spans else set()
    longest: dict[int, int] = {}  # the longest stored value at each start
    for start, end in spans:
        if folded[start:end] in present and end > longest.get(start, 0):
            longest[start] = end
    spelling = question if len(question) == len(folded) else folded
    return _outermost({spelling[start:end] for start, end in longest.items()})


def _spans(text: str) -> Iterable[tuple[int, int]]:
    """Every (start, end) where a value may stand: no word character just before the start
    nor just after the end, as `EntityMatcher` requires."""
    word = [bool(_WORD.match(char)) for char in text]
    ends = [end for end in range(1, len(text) + 1) if end == len(text) or not word[end]]
    for start in range(len(text)):
        if start and word[start - 1]:
            continue
        for end in ends[bisect_left(ends, start + MIN_ENTITY_CHARS) :]:
            if end - start > MAX_MENTION_CHARS:
                break
            yield start, end


def _outermost(named: Iterable[str]) -> list[str]:
    """The values longest first, less those inside a longer one kept."""
    kept: list[str] = []
    for value in sorted(named, key=lambda v: (-len(v), v)):
        if not any(value.casefold() in longer.casefold() for longer in kept):
            kept.append(value)
    return kept
