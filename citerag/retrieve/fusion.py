"""Reciprocal rank fusion of several ranked id lists, some of them with ties."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class TiedRanking:
    """A ranking with ties: groups of ids that rank equally, the best group first.

    Every member of a group takes the rank of the group's first place (1, 2, 2, 4: competition
    ranking), so a signal that cannot order its members (every chunk carrying the year the
    question names) raises them alike and leaves their order to the other rankings.
    """

    groups: tuple[tuple[str, ...], ...]

    @classmethod
    def by_score(cls, ordered: Sequence[str], score: dict[str, float]) -> TiedRanking:
        """`ordered` (best first by `score`) cut into groups of equal score."""
        groups: list[list[str]] = []
        for item in ordered:
            if groups and score[groups[-1][0]] == score[item]:
                groups[-1].append(item)
            else:
                groups.append([item])
        return cls(tuple(tuple(group) for group in groups))

    @classmethod
    def untied(cls, ordered: Sequence[str]) -> TiedRanking:
        return cls(tuple((item,) for item in ordered))

    def head(self, n: int) -> TiedRanking:
        """The first `n` ids, each still ranked with its group."""
        kept: list[tuple[str, ...]] = []
        left = n
        for group in self.groups:
            if left <= 0:
                break
            kept.append(group[:left])
            left -= len(group)
        return TiedRanking(tuple(kept))

    @property
    def ids(self) -> list[str]:
        return [item for group in self.groups for item in group]

    def ranks(self) -> Iterator[tuple[str, int]]:
        rank = 1
        for group in self.groups:
            for item in group:
                yield item, rank
            rank += len(group)


Ranking = Sequence[str] | TiedRanking


def reciprocal_rank_fusion(
    rankings: Sequence[Ranking],
    k: int = 60,
    top_n: int | None = None,
    weights: Sequence[float] | None = None,
) -> list[tuple[str, float]]:
    """Score each id by the sum over rankings of weight / (k + rank), rank starting at 1 (tied
    ids of a `TiedRanking` share one rank).

    Weights default to 1 per ranking. Ties in the fused score keep the order in which ids were
    first seen, so the result is deterministic.
    """
    if weights is None:
        weights = [1.0] * len(rankings)
    if len(weights) != len(rankings):
        raise ValueError(f"{len(weights)} weights for {len(rankings)} rankings")
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        ranked = ranking.ranks() if isinstance(ranking, TiedRanking) else _ranks(ranking)
        for item, rank in ranked:
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    fused = sorted(scores.items(), key=lambda pair: -pair[1])
    return fused if top_n is None else fused[:top_n]


def _ranks(ranking: Sequence[str]) -> Iterator[tuple[str, int]]:
    return ((item, rank) for rank, item in enumerate(ranking, start=1))
