"""Citation markers in an answer: `<doc=FILE;page=N>` and `[N]` forms become valid `[K]` markers.

Every marker left in the answer names a source that exists; grouped forms (`[1, 2]`, `[1,2]`,
`[1-3]`) become adjacent markers (`[1][2]`) so a renderer needs to know only one form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Protocol

_DOC_MARKER = re.compile(r"[ \t]*<doc=([^;>]+);\s*page=(\d+)\s*>")
_ITEM = r"\d+(?:\s*[-–]\s*\d+)?"
_GROUP = re.compile(rf"[ \t]*\[(\s*{_ITEM}\s*(?:[,;]\s*{_ITEM}\s*)*)\]")
_RANGE = re.compile(r"(\d+)\s*[-–]\s*(\d+)")
_REPEATED = re.compile(r"(\[\d+\])(?:\s*\1)+")
_MAX_RANGE = 50  # "[1-3]" expands; "[1990-2020]" is not a citation range


class SourceRef(Protocol):
    @property
    def document_name(self) -> str: ...

    @property
    def page_number(self) -> int: ...

    @property
    def citation_number(self) -> int: ...


def normalize_citations(answer: str, sources: Sequence[SourceRef]) -> str:
    """`answer` with every citation marker mapped to an existing source's `[K]` or removed."""
    with_numbers = _DOC_MARKER.sub(lambda m: _doc_marker_replacement(m, sources), answer)
    valid = {s.citation_number for s in sources}
    regrouped = _GROUP.sub(lambda m: _group_replacement(m, valid), with_numbers)
    return _REPEATED.sub(r"\1", regrouped)


def cited_numbers(answer: str) -> list[int]:
    """The citation numbers in `answer`, each once, in order of first appearance."""
    seen: dict[int, None] = {}
    for match in _GROUP.finditer(answer):
        for number in _numbers_in_group(match.group(1)):
            seen.setdefault(number, None)
    return list(seen)


def _doc_marker_replacement(match: re.Match[str], sources: Sequence[SourceRef]) -> str:
    number = _source_for_page(match.group(1).strip(), int(match.group(2)), sources)
    if number is None:
        return ""
    return _leading_space(match.group(0)) + f"[{number}]"


def _source_for_page(document: str, page: int, sources: Sequence[SourceRef]) -> int | None:
    """The best-ranked source of `document` on `page`, else on the nearest page; None if absent."""
    same_document = [s for s in sources if _same_document(s.document_name, document)]
    if not same_document:
        return None
    best = min(
        same_document,
        key=lambda s: (abs(s.page_number - page), s.page_number, s.citation_number),
    )
    return best.citation_number


def _same_document(name: str, cited: str) -> bool:
    return PurePath(name).name.casefold() == PurePath(cited).name.casefold()


def _group_replacement(match: re.Match[str], valid: set[int]) -> str:
    kept = [n for n in dict.fromkeys(_numbers_in_group(match.group(1))) if n in valid]
    if not kept:
        return ""
    return _leading_space(match.group(0)) + "".join(f"[{n}]" for n in kept)


def _numbers_in_group(inside: str) -> list[int]:
    numbers: list[int] = []
    for part in re.split(r"[,;]", inside):
        span = _RANGE.fullmatch(part.strip())
        if span:
            low, high = int(span.group(1)), int(span.group(2))
            if low <= high and high - low <= _MAX_RANGE:
                numbers.extend(range(low, high + 1))
            continue
        numbers.append(int(part))
    return numbers


def _leading_space(matched: str) -> str:
    return matched[: len(matched) - len(matched.lstrip(" \t"))]
