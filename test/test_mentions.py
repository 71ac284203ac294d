"""Which stored names a question mentions: whole words, case-blind, overlaps found, a name
inside a longer one found left out."""

from __future__ import annotations

import random
import re
from collections.abc import Collection

from citerag.text.mentions import MAX_MENTION_CHARS, MIN_ENTITY_CHARS, EntityMatcher, mentions_in

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


class _DictNames:
    """Stored values looked up by folded text, counting the lookups (a docstore's value table)."""

    def __init__(self, known: list[str]) -> None:
        self.folded = {value.casefold() for value in known}
        self.lookups = 0

    def present(self, folded: Collection[str]) -> set[str]:
        self.lookups += 1
        return {f for f in folded if f in self.folded}


def _folded(values: list[str]) -> list[str]:
    return sorted(value.casefold() for value in values)


def test_names_looked_up_in_a_store_are_the_ones_the_matcher_finds() -> None:
    rng = random.Random(11)
    words = ["acme", "corp", "net", "flix", "and", "the", "inc", "a", "b2b", "co-op", "x", "&"]
    known = [*KNOWN, *(" ".join(rng.choices(words, k=rng.randint(1, 3))) for _ in range(300))]
    matcher, store = EntityMatcher(known), _DictNames(known)
    for _ in range(300):
        question = " ".join(rng.choices([*words, ",", "?", "(", "ROBERT", "morris"], k=14))
        found = mentions_in(question, store)
        assert _folded(found) == _folded(matcher.mentions(question)), question
        assert all(value in question for value in found)  # as the question writes it
    store.lookups = 0
    assert mentions_in("What did ROBERT MORRIS build at viaweb?", store) == [
        "ROBERT MORRIS",
        "viaweb",
    ]
    assert store.lookups == 1  # one lookup a question, whatever the store holds
    assert mentions_in("Ämter der STRASSE", _DictNames(["straße"])) == ["STRASSE"]
    assert mentions_in("Die Straße", _DictNames(["STRASSE"])) == ["strasse"]  # ß folds to ss


def test_a_stored_name_longer_than_the_mention_limit_is_not_looked_for() -> None:
    long_name = "Word " * (MAX_MENTION_CHARS // 5) + "Holdings"
    store = _DictNames([long_name, "Holdings"])
    assert mentions_in(f"Is {long_name} a firm?", store) == ["Holdings"]
    store.lookups = 0
    assert mentions_in("", store) == []
    assert store.lookups == 0  # an empty question asks nothing
