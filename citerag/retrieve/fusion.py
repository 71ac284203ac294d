"""Reciprocal rank fusion of several ranked id lists."""

from __future__ import annotations

from collections.abc import Sequence


def reciprocal_rank_fusion(
    rankings: Sequence[Sequence[str]], k: int = 60, top_n: int | None = None
) -> list[tuple[str, float]]:
    """Score each id by the sum over rankings of 1 / (k + rank), rank starting at 1.

    Ties keep the order in which ids were first seen, so the result is deterministic.
    """
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    fused = sorted(scores.items(), key=lambda pair: -pair[1])
    return fused if top_n is None else fused[:top_n]
