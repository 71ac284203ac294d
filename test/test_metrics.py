from __future__ import annotations

import pytest

from citerag.eval.metrics import percentile, score_question, summarize

CONTEXT = (
    "The author wrote short stories before college. "
    "He programmed an IBM 1401 using punched cards in ninth grade."
)


def test_a_sentence_counts_as_found_when_most_of_its_words_are_in_one_chunk() -> None:
    chunk = "In ninth grade he programmed an IBM 1401 using punched cards, a hard machine."
    score = score_question(["unrelated text about painting", chunk], [CONTEXT], recall_ks=(1, 2))
    assert score.first_relevant_rank == 2
    assert score.recall_at[1] == 0.0
    assert score.recall_at[2] == pytest.approx(0.5)  # one of the two reference sentences


def test_words_split_across_chunks_do_not_count() -> None:
    half_a = "He programmed an IBM 1401"
    half_b = "using punched cards in ninth grade."
    score = score_question([half_a, half_b], [CONTEXT], recall_ks=(2,))
    assert score.first_relevant_rank is None
    assert score.recall_at[2] == 0.0


def test_summary_hit_rates_and_mrr() -> None:
    found_first = score_question([CONTEXT], [CONTEXT], recall_ks=(5, 10))
    found_third = score_question(["a", "b", CONTEXT], [CONTEXT], recall_ks=(5, 10))
    missed = score_question(["nothing here at all"], [CONTEXT], recall_ks=(5, 10))
    report = summarize([found_first, found_third, missed])
    assert report.hit_at[1] == pytest.approx(1 / 3)
    assert report.hit_at[3] == pytest.approx(2 / 3)
    assert report.mrr == pytest.approx((1 + 1 / 3) / 3)
    assert report.recall_at[10] == pytest.approx(2 / 3)


def test_percentile() -> None:
    assert percentile([5, 1, 3, 2, 4], 0.5) == 3
    assert percentile([1, 2, 3, 4, 100], 0.95) == 100
