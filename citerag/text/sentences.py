"""Sentence spans with exact character offsets (no model, no download)."""

from __future__ import annotations

import re

_ABBREVIATIONS = {
    "fig",
    "figs",
    "eq",
    "eqs",
    "e.g",
    "i.e",
    "etc",
    "vs",
    "mr",
    "mrs",
    "ms",
    "dr",
    "prof",
    "inc",
    "ltd",
    "co",
    "corp",
    "no",
    "vol",
    "pp",
    "al",
    "st",
    "jr",
    "sr",
    "u.s",
    "approx",
    "sec",
    "ch",
}
# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) and whitespace, or at
# a blank line / bullet line break.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+|\n\s*\n|\n(?=\s*(?:[-•*▪]|\d+[.)])\s)")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.]*)\.$")


def sentence_spans(text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
    """Spans (a, b) of the sentences in text[start:end], trimmed of surrounding whitespace.

    `text[a:b]` is always a non-empty, whitespace-trimmed sentence.
    """
    stop = len(text) if end is None else end
    spans: list[tuple[int, int]] = []
    sentence_start = start
    for match in _BOUNDARY.finditer(text, start, stop):
        if _is_abbreviation(text[sentence_start : match.start()]):
            continue
        append_trimmed(text, sentence_start, match.start(), spans)
        sentence_start = match.end()
    append_trimmed(text, sentence_start, stop, spans)
    return spans


def _is_abbreviation(candidate: str) -> bool:
    match = _WORD_BEFORE.search(candidate)
    if not match:
        return False
    word = match.group(1).lower()
    return word in _ABBREVIATIONS or len(word) == 1


def append_trimmed(text: str, a: int, b: int, spans: list[tuple[int, int]]) -> None:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    if b > a:
        spans.append((a, b))
