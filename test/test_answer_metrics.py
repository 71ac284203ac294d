"""The answer benchmark's scores: numbers by value, texts by normalized match, citations by page."""

from __future__ import annotations

from benchmarks.metrics.answers import citation_precision, numeric_match, text_match

NFLX = "$24,996,056 thousand (about $25.0 billion)"
QUESTION = "How much total revenue did Netflix report for 2020?"


def test_the_first_number_of_the_answer_is_matched_by_value_and_scale() -> None:
    assert numeric_match(QUESTION, "Revenues (2020): $24,996,056 thousand [1].", NFLX) == (
        True,
        True,
    )
    assert numeric_match(QUESTION, "Revenue was about $25.0 billion [2].", NFLX) == (True, True)
    assert numeric_match(QUESTION, "Revenues $ 24,996,056 $ 20,156,447", NFLX)[0]


def test_a_match_past_the_first_number_counts_only_as_any() -> None:
    answer = "Revenues in 2019 were $20,156,447 thousand, and $24,996,056 thousand later [1]."
    assert numeric_match(QUESTION, answer, NFLX) == (False, True)


def test_years_the_question_states_and_citation_markers_are_not_the_answers_number() -> None:
    assert numeric_match(QUESTION, "In 2020 [1], revenues were 24,996,056 [1].", NFLX)[0]


def test_the_day_of_a_date_is_not_the_answers_number() -> None:
    answer = "As of December 31, 2020, we had approximately 9,400 full-time employees [1]."
    assert numeric_match("How many staff?", answer, "About 9,400 full-time employees")[0]


def test_figures_outside_the_tolerance_do_not_match() -> None:
    assert numeric_match(QUESTION, "Revenue was $25.5 billion [1].", NFLX) == (False, False)
    assert numeric_match(QUESTION, "No figure is given [1].", NFLX) == (False, False)


def test_text_and_list_references_match_after_normalization() -> None:
    assert text_match(
        "The defendant is the Delaware State Public Integrity Commission [1].",
        "DELAWARE STATE PUBLIC INTEGRITY COMMISSION.",
    )
    assert not text_match("The commission of Delaware [1].", "Delaware State Public Integrity")
    assert text_match("Filing 48897809, case 5152012 [2].", "['48897809', '5152012']")
    assert not text_match("Filing 48897809 [2].", "['48897809', '5152012']")


def test_citation_precision_is_the_share_of_cited_pages_with_evidence() -> None:
    assert citation_precision([44, 47, 44], [22, 44]) == 2 / 3
    assert citation_precision([], [44]) is None
