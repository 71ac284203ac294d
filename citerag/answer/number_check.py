"""Every number of an answer looked for in the sources its claim cites.

A claim is a sentence of the answer with the `[N]` markers that close it; its numbers (amounts,
percentages, years, counts) must each appear in one of the sources it cites, compared by value
and scale ("1,577" in a table in millions, "$1.6 billion" and "1577" are one figure; "$25
billion" rounds 24,996,056 thousand). A sentence without a marker is held to every source the
answer cites (to every source when it cites none). Numbers the question itself states, and
labels such as "page 5" or "Table 1", are not claims. Cheap: regular expressions over the few
cited sources, no model.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from citerag.answer.citations import cited_numbers
from citerag.answer.contract import AnswerResult, UnsupportedRecord
from citerag.answer.numbers import Quantity, any_figure, figure_index, quantities

# A claim ends at its sentence's end and the markers right after it ("... 0.97. [1] Next"), or
# at markers followed by a space ("... 2000-2013 [7] In total"); "vs." and "Mr." end nothing.
_CLAIM_END = re.compile(
    r"(?<!\bvs)(?<!\bMr)(?<!\bMs)(?<!\bDr)(?<!\bNo)(?<!\bInc)(?<!\bCo)"
    r"[.!?][\"”’)]?(?:[ \t]*\[\d+\])*(?=\s+|$)|(?:\[\d+\])+(?=[ \t]+\S)|\n+"
)
_MARKER = re.compile(r"\[\d+(?:\s*[,;–-]\s*\d+)*\]")


class CitableSource(Protocol):
    @property
    def citation_number(self) -> int: ...

    @property
    def content(self) -> str: ...


@dataclass(frozen=True)
class UnsupportedNumber:
    number: str  # as the answer writes it
    claim: str  # the sentence it sits in
    citations: tuple[int, ...]  # the sources that claim was checked against

    def to_dict(self) -> UnsupportedRecord:
        return {"number": self.number, "claim": self.claim, "citations": list(self.citations)}


@dataclass(frozen=True)
class NumberCheck:
    checked: int  # numbers looked for
    unsupported: tuple[UnsupportedNumber, ...]


def check_numbers(question: str, answer: str, sources: Sequence[CitableSource]) -> NumberCheck:
    """The numbers of `answer` that no source its claim cites holds."""
    by_number = {s.citation_number: s for s in sources}
    answer_cites = [n for n in cited_numbers(answer) if n in by_number]
    fallback = tuple(answer_cites or by_number)
    given = quantities(question, skip_references=False)
    checked = 0
    unsupported: list[UnsupportedNumber] = []
    for claim in _claims(answer):
        cites = tuple(n for n in cited_numbers(claim) if n in by_number) or fallback
        for number in quantities(_MARKER.sub(lambda m: " " * len(m.group(0)), claim)):
            if any_figure(number, given):
                continue
            checked += 1
            if not any(_holds(by_number[n], number) for n in cites):
                unsupported.append(UnsupportedNumber(number.text, claim.strip(), cites))
    return NumberCheck(checked, tuple(unsupported))


def with_number_check(question: str, result: AnswerResult) -> AnswerResult:
    """`result` with its metadata's `numbersChecked` and `unsupportedNumbers` filled in."""
    found = check_numbers(question, result.answer, result.sources)
    result.metadata.numbers_checked = found.checked
    result.metadata.unsupported_numbers = [u.to_dict() for u in found.unsupported]
    return result


def _claims(answer: str) -> list[str]:
    claims: list[str] = []
    start = 0
    for match in _CLAIM_END.finditer(answer):
        claims.append(answer[start : match.end()])
        start = match.end()
    claims.append(answer[start:])
    return [c for c in claims if c.strip()]


def _holds(source: CitableSource, number: Quantity) -> bool:
    return number.text in source.content or figure_index(source.content).holds(number)
