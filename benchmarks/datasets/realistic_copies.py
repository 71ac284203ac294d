"""What makes a copied document look like another filing: names renamed, years shifted, vectors
perturbed. Pure functions over text, JSON values and arrays; the scale benchmark's builder
(`benchmarks.datasets.scaled_library`) applies them to every stored part of a document.

* **Names.** The renamable words are the words of the source's named entities (the chunks'
  `entities` metadata, the cards' organisation, authors and ticker) that the source writes
  capitalized far more often than in lower case (at least ten times), so "Netflix", "Nadella"
  or "Viaweb" are renamed and "Company", "The" or "Revenue" are not; month and weekday names
  are never renamed (dates stay dates). Each copy maps each such
  word to its own pseudo-word of the same length (consonant-vowel letters drawn from a hash of
  the copy number and the word), keeping the case it is written in ("NETFLIX_2020_10K.pdf",
  "Netflix", "netflix.com"): the vocabulary grows by a new set of names per copy.
* **Years.** A four-digit year from 1800 to 2099 standing alone (not inside a word or a number:
  "FY2020", "$2,019" and decades like "1990s" are left alone) moves by the copy's offset, which
  alternates in sign and grows from 1 to 25 years (+1, -1, +2, -2, ...); a year that would leave
  1800-2099 stays. A card's fiscal year moves with it.
* Both keep every string's length, so the chunks' character offsets (sentence spans, page
  offsets, highlights) stay exact without recomputing them.
* **Vectors.** Each row gets Gaussian noise whose norm is `NOISE` (0.48) times the row's norm,
  spread evenly over the dimensions, and is normalised again: cosine to its source about
  1/sqrt(1 + 0.48^2) = 0.90 in 384 dimensions, so an approximate index never sees two equal
  vectors while a copy stays near what it copies.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from citerag.text.dates import MONTH_NAMES
from citerag.text.stopwords import FUNCTION_WORDS

NOISE = 0.48  # noise norm / vector norm: cosine to the source ~0.90
MIN_CAPITALIZED_RATIO = 10  # capitalized uses per lower-case use for a word to count as a name
MIN_NAME_CHARS = 3
MAX_YEAR_SHIFT = 25
FIRST_YEAR, LAST_YEAR = 1800, 2099
# Capitalized by spelling, not names: months and weekdays stay so that dates still read as dates.
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NEVER_RENAMED = frozenset(MONTH_NAMES) | frozenset(_WEEKDAYS) | FUNCTION_WORDS
_ID_KEY = re.compile(r"(?:^|_)ids?$")
_CONSONANTS = "bcdfghjklmnprstvz"
_VOWELS = "aeiou"
_WORD = re.compile(r"[A-Za-z]+")
# A word, or a year standing alone: the alternation consumes "FY" before "2020" can match.
_TOKEN = re.compile(r"[A-Za-z]+|(?<![\dA-Za-z$.,])(?:1[89]\d\d|20\d\d)(?![\dA-Za-z%])")


def year_offset(copy: int) -> int:
    """The copy's year shift: +1, -1, +2, -2, ... up to 25 years; copy 0 (the source) is 0."""
    if copy == 0:
        return 0
    size = 1 + ((copy - 1) // 2) % MAX_YEAR_SHIFT
    return size if copy % 2 else -size


def renamable_words(texts: Iterable[str], names: Iterable[str]) -> frozenset[str]:
    """The words of `names` (casefolded) that `texts` write capitalized at least ten times as
    often as in lower case."""
    counts = Counter(word for text in texts for word in _WORD.findall(text))
    found = set()
    for name in names:
        for word in _WORD.findall(name):
            folded = word.casefold()
            if len(word) < MIN_NAME_CHARS or folded in found or folded in _NEVER_RENAMED:
                continue
            capitalized = counts[folded.capitalize()] + counts[folded.upper()]
            if capitalized and counts[folded] * MIN_CAPITALIZED_RATIO <= capitalized:
                found.add(folded)
    return frozenset(found)


def pseudo_word(word: str, copy: int) -> str:
    """A pronounceable lower-case word as long as `word`, the same for the same copy."""
    digest = hashlib.sha256(f"{copy}:{word.casefold()}".encode()).digest()
    letters = []
    for i in range(len(word)):
        pool = _CONSONANTS if i % 2 == 0 else _VOWELS
        letters.append(pool[digest[i % len(digest)] % len(pool)])
    return "".join(letters)


def _as_written(replacement: str, written: str) -> str:
    if written.isupper() and len(written) > 1:
        return replacement.upper()
    if written[0].isupper():
        return replacement.capitalize()
    return replacement


@dataclass
class CopyPlan:
    """How copy number `copy` changes what it copies (copy 0 changes nothing)."""

    copy: int
    words: frozenset[str]
    offset: int = 0
    _renames: dict[str, str] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, copy: int, words: frozenset[str]) -> CopyPlan:
        return cls(copy, words if copy else frozenset(), year_offset(copy))

    def _replacement(self, token: str) -> str:
        if token[0].isdigit():
            shifted = int(token) + self.offset
            return str(shifted) if FIRST_YEAR <= shifted <= LAST_YEAR else token
        folded = token.casefold()
        if folded not in self._renames:
            self._renames[folded] = pseudo_word(folded, self.copy)
        return _as_written(self._renames[folded], token)

    def text(self, text: str) -> str:
        """`text` with names renamed and years shifted; as long as `text`."""
        if self.copy == 0 or not text:
            return text
        spans = _changing_spans(text, self.words)
        if not spans:
            return text
        pieces, end = [], 0
        for start, stop in spans:
            pieces += [text[end:start], self._replacement(text[start:stop])]
            end = stop
        pieces.append(text[end:])
        return "".join(pieces)

    def value(self, value: Any) -> Any:
        """Every string inside a JSON value changed as `text` changes it, except under keys
        that name ids ("node_id", "doc_ids"): ids are references, not text."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: v if _ID_KEY.search(k) else self.value(v) for k, v in value.items()}
        return value

    def metadata(self, metadata: Mapping[str, Any], keep: Iterable[str]) -> dict[str, Any]:
        """Chunk metadata changed, except the keys in `keep` (ids and geometry)."""
        kept = set(keep)
        return {k: v if k in kept else self.value(v) for k, v in metadata.items()}

    def card(self, card: Mapping[str, Any]) -> dict[str, Any]:
        """A document card changed: its strings, and its fiscal year by the offset."""
        changed = {k: self.value(v) for k, v in card.items()}
        year = card.get("fiscal_year")
        if isinstance(year, int) and FIRST_YEAR <= year + self.offset <= LAST_YEAR:
            changed["fiscal_year"] = year + self.offset
        return changed


@functools.lru_cache(maxsize=1 << 20)
def _changing_spans(text: str, words: frozenset[str]) -> tuple[tuple[int, int], ...]:
    """Where `text` holds a year or one of `words`: found once per distinct string, so that
    each copy only splices (a copy repeats the same source strings)."""
    return tuple(
        match.span()
        for match in _TOKEN.finditer(text)
        if match.group(0)[0].isdigit() or match.group(0).casefold() in words
    )


def perturbed(vectors: np.ndarray, rng: np.random.Generator, noise: float = NOISE) -> np.ndarray:
    """Each row plus Gaussian noise of `noise` times its norm, normalised again (zero rows stay
    zero)."""
    rows = np.asarray(vectors, dtype=np.float32).reshape(-1, vectors.shape[-1])
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    scale = noise * norms / np.sqrt(rows.shape[1])
    moved = rows + rng.standard_normal(rows.shape).astype(np.float32) * scale
    lengths = np.linalg.norm(moved, axis=1, keepdims=True)
    out = np.divide(moved, lengths, out=np.zeros_like(moved), where=lengths > 0)
    return out.reshape(vectors.shape).astype(np.float32)
