"""The extractive answer: best distinct sentences, page order, one marker each."""

from __future__ import annotations

from citerag.answer.citations import cited_numbers
from citerag.answer.extractive import NO_ANSWER, ExtractiveCandidate, extractive_answer


def _c(number: int, page: int, offset: int, text: str, score: float) -> ExtractiveCandidate:
    return ExtractiveCandidate(number, page, offset, text, score)


def test_sentences_come_in_page_order_each_with_its_marker() -> None:
    answer = extractive_answer(
        [
            _c(1, 9, 0, "Operating income rose to $4.6 billion.", 0.9),
            _c(2, 4, 50, "Revenue grew 24% in 2020.", 0.8),
            _c(3, 4, 10, "Streaming members reached 204 million.", 0.5),
        ]
    )
    assert answer == (
        "Streaming members reached 204 million. [3] Revenue grew 24% in 2020. [2] "
        "Operating income rose to $4.6 billion. [1]"
    )


def test_same_sentence_in_two_sources_counts_once_with_the_better_source() -> None:
    answer = extractive_answer(
        [
            _c(1, 3, 0, "Revenue grew 24% in 2020.", 0.6),
            _c(2, 3, 0, "Revenue  grew 24% in 2020 ", 0.8),
            _c(3, 5, 0, "Costs rose.", 0.5),
        ]
    )
    assert answer.count("Revenue grew 24% in 2020") == 1
    assert answer == "Revenue grew 24% in 2020 [2] Costs rose. [3]"


def test_fragment_from_chunk_overlap_is_a_near_duplicate() -> None:
    answer = extractive_answer(
        [
            _c(1, 2, 0, "Revenue grew 24% in 2020, driven by membership growth.", 0.9),
            _c(2, 2, 0, "revenue grew 24% in 2020, driven by membership", 0.85),
        ]
    )
    assert cited_numbers(answer) == [1]


def test_at_most_max_sentences_and_the_best_ones() -> None:
    candidates = [
        _c(n, n, 0, f"Distinct fact number {n} about topic {n * 7}.", n / 10) for n in range(1, 10)
    ]
    answer = extractive_answer(candidates, max_sentences=3)
    assert cited_numbers(answer) == [7, 8, 9]


def test_sentences_far_below_the_best_are_left_out() -> None:
    answer = extractive_answer(
        [
            _c(1, 1, 0, "Revenue grew 24% in 2020.", 0.8),
            _c(2, 2, 0, "The office is in Los Gatos.", 0.2),
        ]
    )
    assert cited_numbers(answer) == [1]


def test_low_scores_give_the_no_answer_sentence_without_citation() -> None:
    answer = extractive_answer([_c(1, 1, 0, "Unrelated text.", 0.01)])
    assert answer == NO_ANSWER
    assert cited_numbers(answer) == []
    assert extractive_answer([]) == NO_ANSWER


def test_headings_are_not_offered_as_answers() -> None:
    answer = extractive_answer(
        [
            _c(1, 1, 0, "4 Evaluation", 0.9),
            _c(1, 1, 20, "The evaluation uses hit rate and reciprocal rank.", 0.8),
        ]
    )
    assert answer == "The evaluation uses hit rate and reciprocal rank. [1]"
