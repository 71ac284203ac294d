"""The rankers a retriever runs: the built-in ones, then every registered one, less those
disabled by name, each at its stage in that order (the order breaks ties in the fusion)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from citerag.errors import ConfigError
from citerag.retrieve.chunk_rankers import (
    BestSentence,
    DenseChunks,
    DocumentPreference,
    KeywordChunks,
)
from citerag.retrieve.evidence import EntityEvidence, QuoteEvidence, TopicEvidence, YearEvidence
from citerag.retrieve.page_rankers import KeyPages, PageChunkCounts, PageHeadVectors, PageKeywords
from citerag.retrieve.rankers import Ranker, registered_rankers

BUILT_IN: tuple[type[Ranker], ...] = (
    DenseChunks,
    KeywordChunks,
    BestSentence,
    EntityEvidence,
    YearEvidence,
    QuoteEvidence,
    TopicEvidence,
    DocumentPreference,
    PageKeywords,
    PageChunkCounts,
    KeyPages,
    PageHeadVectors,
)


def ranker_classes() -> dict[str, type[Ranker]]:
    """Every ranker by name: the built-in ones, then the registered ones."""
    found = {ranker.name: ranker for ranker in BUILT_IN}
    for name, ranker in registered_rankers().items():
        if name in found:
            raise ConfigError(f"A registered ranker is named {name!r} like a built-in one.")
        found[name] = ranker
    return found


def active_rankers(
    weights: Mapping[str, float], disabled: Collection[str] = ()
) -> tuple[Ranker, ...]:
    """Each ranker not `disabled`, with its weight from `weights` (its own default where
    absent), ordered by stage; a ConfigError names a disabled name no ranker has."""
    classes = ranker_classes()
    unknown = sorted(set(disabled) - set(classes))
    if unknown:
        raise ConfigError(
            f"disabled_rankers names {', '.join(map(repr, unknown))}; the rankers are "
            f"{', '.join(classes)}."
        )
    made = [
        ranker(weights[name]) if name in weights else ranker()
        for name, ranker in classes.items()
        if name not in disabled
    ]
    return tuple(sorted(made, key=lambda ranker: ranker.stage))
