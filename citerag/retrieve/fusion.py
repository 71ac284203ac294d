"""Reciprocal rank fusion of several ranked id lists."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]],
    k: int = 60,
    top_n: int | None = None,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Score each id by the sum over rankings of weight / (k + rank), rank starting at 1.

    Weights default to 1 per ranking. Ties keep the order in which ids were first seen, so the
    result is deterministic.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    fused = sorted(scores.items(), key=lambda pair: -pair[1])
    return fused if top_n is None else fused[:top_n]
