"""Word and keyword tokens: what every keyword backend indexes is lower case, stop words out,
plurals folded.

BM25 uses Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)), which stays positive. Robertson's,
log((N - n + 0.5) / (n + 0.5)), is clamped to zero for terms in more than half of the entries:
in one PDF's small corpus those are often the very words a question is about (the company's
name in its own 10-K), and they would count for nothing.
"""

from __future__ import annotations

import re

from citerag.text.stemming import plural_stem
from citerag.text.stopwords import STOPWORDS

WORD = re.compile(r"\w+")
# A number is one token ("2,427,077", "3.5"); thousands separators are dropped so that a figure
# matches however it is written ("4,585,289" and "4585289").
TOKEN_PATTERN = re.compile(r"\d+(?:[.,]\d+)*|\w+")


def tokenize(text: str) -> list[str]:
    """Lower-cased word and number tokens, English stopwords removed, plurals folded."""
    tokens = TOKEN_PATTERN.findall(text.lower())
    return [plural_stem(token.replace(",", "")) for token in tokens if token not in STOPWORDS]
