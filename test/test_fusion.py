from __future__ import annotations

import pytest

from citerag.retrieve.fusion import reciprocal_rank_fusion


def test_rrf_scores_are_sums_of_reciprocal_ranks() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60))
    assert fused["a"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["b"] == pytest.approx(1 / 62)
    assert fused["c"] == pytest.approx(1 / 63 + 1 / 61)


def test_rrf_orders_by_fused_score_and_truncates() -> None:
    fused = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60, top_n=2)
    assert [item for item, _ in fused] == ["a", "c"]


def test_an_item_in_both_lists_beats_one_ranked_first_in_only_one() -> None:
    fused = reciprocal_rank_fusion([["x", "both"], ["y", "both"]], k=1)
    assert fused[0][0] == "both"


def test_empty_rankings_give_nothing() -> None:
    assert reciprocal_rank_fusion([[], []]) == []


def test_weights_scale_each_ranking() -> None:
    fused = dict(reciprocal_rank_fusion([["a", "b"], ["b", "a"]], k=10, weights=[1.0, 2.0]))
    assert fused["a"] == pytest.approx(1 / 11 + 2 / 12)
    assert fused["b"] == pytest.approx(1 / 12 + 2 / 11)


def test_a_weighted_first_place_beats_two_unweighted_ones() -> None:
    fused = reciprocal_rank_fusion([["x"], ["x"], ["y"]], k=1, weights=[1.0, 1.0, 3.0])
    assert fused[0][0] == "y"


def test_one_weight_per_ranking_is_required() -> None:
    with pytest.raises(ValueError, match="2 weights for 3 rankings"):
        reciprocal_rank_fusion([["a"], ["b"], ["c"]], weights=[1.0, 1.0])
