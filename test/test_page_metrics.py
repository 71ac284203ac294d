"""Page recall@k, MRR over distinct pages, and the report renderers (hand-computed values)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.metrics.pages import (
    ALL_TYPES,
    LatencySummary,
    PageScore,
    PageSummary,
    distinct_pages,
    page_hits,
    reciprocal_rank,
    score_pages,
    summarize_by_type,
    summarize_latency,
    summarize_pages,
)
from benchmarks.tables import (
    plot_recall_by_type,
    render_latency_table,
    render_question_set,
    render_summary_table,
)


@dataclass(frozen=True)
class Hit:
    page: int


def hits(*pages: int) -> list[Hit]:
    return [Hit(p) for p in pages]


def test_distinct_pages_keep_first_occurrence_order() -> None:
    assert distinct_pages(hits(5, 5, 7, 9)) == [5, 7, 9]
    assert distinct_pages(hits(3, 1, 3, 2, 1)) == [3, 1, 2]
    assert distinct_pages([]) == []


def test_brief_example() -> None:
    score = score_pages(hits(5, 5, 7, 9), {7})
    assert score.pages == (5, 7, 9)
    assert score.hits == {1: 0, 3: 1, 5: 1, 10: 1}
    assert score.reciprocal_rank == pytest.approx(0.5)


def test_hits_count_distinct_pages_not_chunks() -> None:
    # chunks on pages 1,1,1,2,2,3,4 -> distinct 1,2,3,4: page 4 is 4th, inside k=5, not k=3
    score = score_pages(hits(1, 1, 1, 2, 2, 3, 4), [4, 40])
    assert score.hits == {1: 0, 3: 0, 5: 1, 10: 1}
    assert score.reciprocal_rank == pytest.approx(0.25)


def test_any_evidence_page_counts() -> None:
    assert page_hits([8, 2, 6], {6, 2}, ks=(1, 2)) == {1: 0, 2: 1}
    assert reciprocal_rank([8, 2, 6], {6, 2}) == pytest.approx(0.5)


def test_miss_and_beyond_max_rank() -> None:
    pages = list(range(1, 13))  # evidence at the 11th distinct page
    assert reciprocal_rank(pages, {11}) == 0.0
    assert reciprocal_rank(pages, {11}, max_rank=11) == pytest.approx(1 / 11)
    assert page_hits(pages, {11}) == {1: 0, 3: 0, 5: 0, 10: 0}
    assert score_pages([], {1}).reciprocal_rank == 0.0


def test_first_page_hit() -> None:
    score = score_pages(hits(7, 7, 9), [7])
    assert score.hits == {1: 1, 3: 1, 5: 1, 10: 1}
    assert score.reciprocal_rank == 1.0


def _score(qid: str, qtype: str, pages: list[int], evidence: set[int]) -> PageScore:
    return score_pages(hits(*pages), evidence, qid, qtype)


SCORES = [
    _score("a", "table", [1, 2, 3], {1}),  # rr 1, hits all
    _score("b", "table", [4, 5, 6, 7], {7}),  # rr 1/4: hit@5, hit@10
    _score("c", "prose", [9, 9, 8], {8}),  # distinct 9,8 -> rr 1/2: hit@3..
    _score("d", "prose", [1, 2], {30}),  # miss
]


def test_summarize_pages_averages() -> None:
    summary = summarize_pages(SCORES)
    assert summary.n == 4
    assert summary.recall_at == {1: 0.25, 3: 0.5, 5: 0.75, 10: 0.75}
    assert summary.mrr == pytest.approx((1 + 0.25 + 0.5 + 0) / 4)


def test_summarize_by_type_and_all() -> None:
    by_type = summarize_by_type(SCORES)
    assert list(by_type) == ["prose", "table", ALL_TYPES]
    assert by_type["table"].recall_at == {1: 0.5, 3: 0.5, 5: 1.0, 10: 1.0}
    assert by_type["table"].mrr == pytest.approx(0.625)
    assert by_type["prose"].recall_at == {1: 0.0, 3: 0.5, 5: 0.5, 10: 0.5}
    assert by_type["prose"].mrr == pytest.approx(0.25)
    assert by_type[ALL_TYPES].n == 4
    assert ALL_TYPES not in summarize_by_type(SCORES, include_all=False)


def test_empty_summary_is_zero() -> None:
    summary = summarize_pages([])
    assert summary == PageSummary({1: 0.0, 3: 0.0, 5: 0.0, 10: 0.0}, 0.0, 0)


def test_latency_summary() -> None:
    ms = [float(v) for v in range(1, 101)]  # 1..100
    lat = summarize_latency(ms)
    assert lat.n == 100
    assert lat.max_ms == 100.0
    assert lat.p50_ms == 51.0  # index round(0.5 * 99) = 50 (banker's rounding) -> 51
    assert lat.p95_ms == 95.0  # index round(0.95 * 99) = 94 -> 95
    assert summarize_latency([]) == LatencySummary(0.0, 0.0, 0.0, 0)


def test_render_tables() -> None:
    table = render_summary_table({"dense": summarize_pages(SCORES)})
    assert (
        table.splitlines()[0] == "| system | recall@1 | recall@3 | recall@5 | recall@10 | MRR | n |"
    )
    assert table.splitlines()[2] == "| dense | 0.250 | 0.500 | 0.750 | 0.750 | 0.438 | 4 |"
    section = render_question_set("set", {"dense": SCORES, "hybrid": SCORES[:2]})
    assert "| table | hybrid | 0.500 | 0.500 | 1.000 | 1.000 | 0.625 | 2 |" in section
    assert "| prose | dense |" in section and "| prose | hybrid |" not in section
    latency = render_latency_table({"dense": LatencySummary(12.34, 20.0, 25.5, 3)})
    assert "| dense | 12.3 | 20.0 | 25.5 | 3 |" in latency


def test_plot_writes_png(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    summaries = {"dense": summarize_by_type(SCORES), "hybrid": summarize_by_type(SCORES[:2])}
    path = plot_recall_by_type(summaries, tmp_path / "plot.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
