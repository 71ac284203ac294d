"""Which of a collection's stored values (entity names, topic values) a text names: every value
in one compiled pattern, matched whole-word and case-blind."""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

MIN_ENTITY_CHARS = 3


class EntityMatcher:
    """Every known value in one compiled pattern, so a question costs one scan of its own text
    rather than one regex per stored value (hundreds per collection overflow `re`'s cache)."""

    def __init__(self, known: Sequence[str]) -> None:
        by_folded: dict[str, str] = {}
        for value in sorted(known, key=len, reverse=True):
            if len(value) >= MIN_ENTITY_CHARS:
                by_folded.setdefault(value.casefold(), value)
        self._value_of = by_folded
        alternatives = "|".join(re.escape(folded) for folded in by_folded)  # longest first
        # A lookahead match at every position finds overlapping mentions too.
        self._pattern = re.compile(rf"(?=(?<!\w)({alternatives})(?!\w))") if by_folded else None

    def mentions(self, question: str) -> list[str]:
        if self._pattern is None:
            return []
        named = {self._value_of[m] for m in self._pattern.findall(question.casefold())}
        found: list[str] = []
        for value in sorted(named, key=lambda v: (-len(v), v)):
            if not any(value.casefold() in longer.casefold() for longer in found):
                found.append(value)
        return found


@lru_cache(maxsize=16)
def entity_matcher(known: tuple[str, ...]) -> EntityMatcher:
    """One matcher per distinct set of known values (a collection snapshot's), built once."""
    return EntityMatcher(known)
