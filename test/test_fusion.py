from __future__ import annotations

import pytest

from citerag.retrieve.fusion import TiedRanking, reciprocal_rank_fusion


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


def test_tied_ids_share_the_rank_of_their_group_s_first_place() -> None:
    tied = TiedRanking((("a",), ("b", "c"), ("d",)))
    assert dict(tied.ranks()) == {"a": 1, "b": 2, "c": 2, "d": 4}
    fused = dict(reciprocal_rank_fusion([tied], k=10))
    assert fused["b"] == fused["c"] == pytest.approx(1 / 12)
    assert fused["d"] == pytest.approx(1 / 14)


def test_a_tie_leaves_the_gap_to_the_other_rankings() -> None:
    """Evidence that lists its equal chunks one after another in the fused order doubles the
    gap between them; tied, it raises both alike and the gap is the other rankings'."""
    alone = dict(reciprocal_rank_fusion([["x", "y"]], k=10))
    untied = dict(reciprocal_rank_fusion([["x", "y"], ["x", "y"]], k=10))
    tied = dict(reciprocal_rank_fusion([["x", "y"], TiedRanking((("x", "y"),))], k=10))
    gap = alone["x"] - alone["y"]
    assert untied["x"] - untied["y"] == pytest.approx(2 * gap)
    assert tied["x"] - tied["y"] == pytest.approx(gap)
    assert tied["y"] - alone["y"] == pytest.approx(1 / 11)


def test_tied_rankings_are_made_by_score_and_cut_at_a_length() -> None:
    ranking = TiedRanking.by_score(["a", "b", "c", "d"], {"a": 3, "b": 2, "c": 2, "d": 1})
    assert ranking.groups == (("a",), ("b", "c"), ("d",))
    assert ranking.head(2).groups == (("a",), ("b",))
    assert ranking.head(2).ids == ["a", "b"]
    assert TiedRanking.untied(["a", "b"]).groups == (("a",), ("b",))
