"""Which stored names a question mentions: whole words, case-blind, overlaps found, a name
inside a longer one found left out."""

from __future__ import annotations

import random
import re

from citerag.text.mentions import MIN_ENTITY_CHARS, EntityMatcher

KNOWN = [
    "Robert Morris",
    "Robert",
    "Morris Chang",
    "Viaweb",
    "AT&T",
    "S&P 500",
    "3M",  # too short to match
    "3M Company",
    "Lisp",
    "Y Combinator",
    "Ämter",
    "straße",
]


def by_one_pattern(known: list[str], question: str) -> list[str]:
    """The reference: every value in one alternation, longest first, tried at every position."""
    value_of: dict[str, str] = {}
    for value in sorted(known, key=len, reverse=True):
        if len(value) >= MIN_ENTITY_CHARS:
            value_of.setdefault(value.casefold(), value)
    alternatives = "|".join(re.escape(v) for v in value_of)
    pattern = re.compile(rf"(?=(?<!\w)({alternatives})(?!\w))")
    named = {value_of[m] for m in pattern.findall(question.casefold())}
    kept: list[str] = []
    for value in sorted(named, key=lambda v: (-len(v), v)):
        if not any(value.casefold() in longer.casefold() for longer in kept):
            kept.append(value)
    return kept


def test_names_are_found_whole_word_and_case_blind() -> None:
    matcher = EntityMatcher(KNOWN)
    assert matcher.mentions("What did ROBERT MORRIS build at viaweb?") == [
        "Robert Morris",
        "Viaweb",
    ]
    assert matcher.mentions("Did Robert Morris Chang meet?") == ["Robert Morris", "Morris Chang"]
    assert matcher.mentions("What is lisping? And AT&T's S&P 500 weight?") == ["S&P 500", "AT&T"]
    assert matcher.mentions("3M Company and 3M") == ["3M Company"]
    assert matcher.mentions("Ämter der STRASSE") == ["straße", "Ämter"]  # ß folds to ss
    assert EntityMatcher([]).mentions("anything") == []


def test_the_same_mentions_as_one_pattern_of_every_name_on_random_text() -> None:
    rng = random.Random(7)
    words = ["acme", "corp", "net", "flix", "and", "the", "inc", "a", "b2b", "co-op", "x"]
    known = [" ".join(rng.choices(words, k=rng.randint(1, 3))).title() for _ in range(300)]
    matcher = EntityMatcher(known)
    for _ in range(300):
        question = " ".join(rng.choices([*words, ",", "?", "(", ")"], k=rng.randint(1, 14)))
        assert matcher.mentions(question) == by_one_pattern(known, question), question


def test_a_library_of_many_names_builds_one_lookup() -> None:
    """Two hundred thousand names (a large shelf's vocabulary) are indexed in one pass."""
    known = [f"Name{i} Holdings" for i in range(200_000)]
    matcher = EntityMatcher(known)
    assert matcher.mentions("Did name123456 holdings and Name7 Holdings merge?") == [
        "Name123456 Holdings",
        "Name7 Holdings",
    ]
