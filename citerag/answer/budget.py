"""One source budget for a whole answer, shared fairly between its sub-questions.

`--top-k N` (the API's `topK`) bounds the sources of the answer, not of each sub-question: each
sub-question's ranking (best first, edge neighbours after the chunk they complete) is taken in
turn, one source per turn, until N distinct sources are chosen or every ranking is spent. A
chunk two sub-questions both found costs the budget once and serves both (its highlights are
joined). Each ranking is taken by score, as a question asked alone is cut, so a sub-question's share
holds what it would have found alone with that many sources. The sources are listed best first:
every sub-question's best, then every second best, and so on, each round by score.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import NodeWithScore

from citerag.nodes import HIGHLIGHTS


def fair_share(rankings: Sequence[Sequence[NodeWithScore]], budget: int) -> list[NodeWithScore]:
    """At most `budget` distinct nodes taken in turn from each ranking, best first."""
    if len([r for r in rankings if r]) == 1:
        ranking = next(r for r in rankings if r)
        first: dict[str, NodeWithScore] = {}
        for scored in ranking:  # each node once, where it first stands (ties keep that order)
            first.setdefault(scored.node.node_id, scored)
        unique = list(first.values())
        ordered = sorted(unique, key=_by_score)[:budget]
        _join_repeats(ordered, rankings)
        return ordered
    rankings = [sorted(ranking, key=_by_score) for ranking in rankings]
    chosen: dict[str, NodeWithScore] = {}
    rounds: list[list[NodeWithScore]] = []
    cursors = [0] * len(rankings)
    while len(chosen) < budget and any(c < len(r) for c, r in zip(cursors, rankings, strict=True)):
        this_round: list[NodeWithScore] = []
        for index, ranking in enumerate(rankings):
            picked = _next_new(ranking, cursors, index, chosen)
            if picked is not None and len(chosen) < budget:
                chosen[picked.node.node_id] = picked
                this_round.append(picked)
        rounds.append(sorted(this_round, key=_by_score))
    ordered = [scored for picks in rounds for scored in picks]
    _join_repeats(ordered, rankings)
    return ordered


def _next_new(
    ranking: Sequence[NodeWithScore],
    cursors: list[int],
    index: int,
    chosen: dict[str, NodeWithScore],
) -> NodeWithScore | None:
    """The ranking's best node not chosen yet (its cursor moved past it), or None."""
    while cursors[index] < len(ranking):
        scored = ranking[cursors[index]]
        cursors[index] += 1
        if scored.node.node_id not in chosen:
            return scored
    return None


def _join_repeats(
    ordered: Sequence[NodeWithScore], rankings: Sequence[Sequence[NodeWithScore]]
) -> None:
    """Highlights and best score of every ranking's copy of a chosen node, on the chosen one."""
    kept = {scored.node.node_id: scored for scored in ordered}
    for ranking in rankings:
        for scored in ranking:
            known = kept.get(scored.node.node_id)
            if known is not None and known is not scored:
                _join_highlights(known, scored)


def _join_highlights(kept: NodeWithScore, other: NodeWithScore) -> None:
    have = kept.node.metadata.setdefault(HIGHLIGHTS, [])
    spans = {(h["startOffset"], h["endOffset"]) for h in have}
    for highlight in other.node.metadata.get(HIGHLIGHTS, []):
        if (highlight["startOffset"], highlight["endOffset"]) not in spans:
            have.append(highlight)
    kept.score = max(kept.score or 0.0, other.score or 0.0)


def _by_score(scored: NodeWithScore) -> float:
    return -(scored.score or 0.0)
