"""Which of a collection's stored values (entity names, topic values) a text names, matched
whole-word and case-blind.

The values sit in a dict keyed by their case-folded text and are looked up at each word start
of the text, only at the lengths that values sharing its first characters have. Building it is
one pass over the values: one compiled alternation of every value took seconds per snapshot
once a library held tens of thousands of names (`re` compiles it into one automaton), and a
snapshot is made at every change.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from functools import lru_cache

MIN_ENTITY_CHARS = 3
_WORD = re.compile(r"\w")


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
        folded = question.casefold()
        named = {self._value_of[found] for found in self._found(folded)}
        kept: list[str] = []
        for value in sorted(named, key=lambda v: (-len(v), v)):
            if not any(value.casefold() in longer.casefold() for longer in kept):
                kept.append(value)
        return kept

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


@lru_cache(maxsize=16)
def entity_matcher(known: tuple[str, ...]) -> EntityMatcher:
    """One matcher per distinct set of known values (a collection snapshot's), built once."""
    return EntityMatcher(known)
