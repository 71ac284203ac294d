"""The two stemmers: keyword search folds plurals only; highlights fold -ing/-ed too.

One stemmer for both would move measured figures: the light stem in BM25 conflates words its
scores keep apart ("filing"/"file"), and the plural-only stem in highlights misses "increased"
for "increase".
"""

from __future__ import annotations

from functools import lru_cache


def plural_stem(token: str) -> str:
    """Harman's S-stemmer: folds regular plurals only, so it rarely conflates distinct words."""
    if not token.isalpha() or len(token) <= 3:
        return token
    if token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


@lru_cache(maxsize=65_536)
def light_stem(word: str) -> str:
    """Plurals, -ing/-ed and a final e, so 'increased' meets 'increase' ("increas")."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            word = word[: -len(suffix)]
            break
    else:
        if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
    if len(word) > 4 and word.endswith("e"):
        word = word[:-1]
    return word
