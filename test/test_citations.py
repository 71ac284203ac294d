"""Citation markers: every marker left in an answer names an existing source."""

from __future__ import annotations

from dataclasses import dataclass

from citerag.answer.citations import cited_numbers, normalize_citations


@dataclass(frozen=True)
class Ref:
    document_name: str
    page_number: int
    citation_number: int


SOURCES = [Ref("a.pdf", 3, 1), Ref("b.pdf", 7, 2), Ref("a.pdf", 5, 3), Ref("a.pdf", 3, 4)]


def test_doc_page_marker_becomes_the_best_source_on_that_page() -> None:
    answer = "Revenue grew <doc=a.pdf;page=3>. Costs fell <doc=b.pdf;page=7>."
    assert normalize_citations(answer, SOURCES) == "Revenue grew [1]. Costs fell [2]."


def test_marker_for_an_uncited_page_goes_to_the_nearest_page_of_that_document() -> None:
    assert normalize_citations("X <doc=a.pdf;page=6>.", SOURCES) == "X [3]."
    assert normalize_citations("X <doc=A.PDF; page=1>.", SOURCES) == "X [1]."


def test_marker_for_an_unknown_document_is_dropped() -> None:
    assert normalize_citations("X <doc=zzz.pdf;page=3>. Y [2].", SOURCES) == "X. Y [2]."


def test_numbers_without_a_source_are_removed() -> None:
    answer = "First [1]. Second [9]. Third [5, 2]. Fourth [0]"
    assert normalize_citations(answer, SOURCES) == "First [1]. Second. Third [2]. Fourth"


def test_grouped_forms_become_adjacent_markers() -> None:
    answer = "A [1, 2]. B [1,2]. C [1][2]. D [1; 3]. E [2-4]. F [1, 1]."
    assert normalize_citations(answer, SOURCES) == (
        "A [1][2]. B [1][2]. C [1][2]. D [1][3]. E [2][3][4]. F [1]."
    )


def test_repeated_markers_for_the_same_source_collapse() -> None:
    answer = "Claim <doc=a.pdf;page=3> <doc=a.pdf;page=3>."
    assert normalize_citations(answer, SOURCES) == "Claim [1]."


def test_text_without_markers_is_unchanged() -> None:
    answer = "Plain text with [a link](http://x) and $x_{i}$ math.\nSecond line."
    assert normalize_citations(answer, SOURCES) == answer


def test_cited_numbers_in_order_of_first_appearance() -> None:
    assert cited_numbers("B [2]. A [1, 2]. C [3][2]. D [4-5].") == [2, 1, 3, 4, 5]
    assert cited_numbers("no citations") == []
