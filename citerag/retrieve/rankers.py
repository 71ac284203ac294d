"""Rankers: each retrieval signal one class with a name, a weight and `rank(context)`.

The hybrid retriever (`citerag.retrieve.hybrid`) joins rankings by weighted reciprocal rank in
stages (`Stage`): each stage's rankers read what the stages before it fused (the candidates'
order, the fused chunks), and each join fuses every chunk ranking so far. A ranker asks for
what it needs through its `RankContext` (bounded lists: the top hits of a search, the chunks
carrying a value), never from the collection's Python state directly, so where that state
lives can change under it.

A new ranker is a subclass registered by name (`register_ranker`); the retriever runs the
built-in rankers (`citerag.retrieve.ranker_set`) and every registered one, less those the
`disabled_rankers` setting names. A weight of 0 (for this question) switches a ranker off and
nothing is computed for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import ClassVar, Protocol, TypeVar

import numpy as np

from citerag.domain import DomainVocabulary
from citerag.retrieve.fusion import Ranking
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import Place
from citerag.retrieve.routing import NOT_ROUTED, Routing
from citerag.store.keywords import KeywordKind


class Stage(IntEnum):
    """When a ranker runs; each stage's join fuses every chunk ranking so far."""

    CANDIDATES = 1  # chunks found for the question (vectors, keywords, their best sentences)
    EVIDENCE = 2  # chunks by what the question names; reads the candidates' fused order
    PREFERENCE = 3  # chunks by the documents routing prefers; reads the order after evidence
    PAGES = 4  # pages, fused apart; reads the fused chunks


class RankSource(Protocol):
    """The searches a ranker may ask of one collection, each giving a bounded list."""

    def vector_hits(self, vector: np.ndarray, top_k: int, allowed: set[str] | None) -> list[str]:
        """Chunk ids nearest `vector` among `allowed` (None: any), best first."""
        ...

    def keyword_hits(
        self, kind: KeywordKind, text: str, top_k: int, among: Collection[str] | None
    ) -> list[str]:
        """Chunk or page ids by keyword score among `among` (None: any), best first."""
        ...

    def sentence_vectors(self, chunk_ids: Sequence[str]) -> dict[str, np.ndarray]:
        """Each chunk's sentence vectors (rows, normalized), where stored."""
        ...

    def head_vectors(self, pages: Collection[PageKey]) -> dict[str, np.ndarray]:
        """Each page's head vector (one row, normalized) by page id, where stored."""
        ...

    def page_vector_hits(
        self, vector: np.ndarray, top_k: int, allowed: set[str] | None
    ) -> list[str]:
        """Page ids whose head vectors are nearest `vector`; empty when pages have none."""
        ...

    def place(self, chunk_id: str) -> Place: ...

    def pages_of(self, chunk_ids: Collection[str]) -> set[str]: ...

    def chunks_on(self, page_id: str) -> list[str]:
        """The page's chunk ids, in reading order."""
        ...

    def mentions(self, key: str, text: str) -> list[str]:
        """The stored values of list field `key` that `text` names, whole words and case-blind,
        as written: longest first, none inside another (`citerag.text.mentions`). A topic
        (`kind=value`) is named by its value."""
        ...

    def carriers(self, key: str, values: Sequence[str]) -> Mapping[str, set[str]]:
        """Each of `values` (case-folded) that chunks carry in list field `key` -> those
        chunks."""
        ...

    @property
    def chunk_count(self) -> int: ...

    def key_pages(self) -> Mapping[str, str]:
        """The domain's key pages (a filing's statements): page id -> the kind its title
        names."""
        ...


@dataclass(frozen=True)
class RankContext:
    """One question over one collection (or a routed part of it), and what the stages so far
    have found."""

    question: str
    query_vector: np.ndarray
    source: RankSource
    vocabulary: DomainVocabulary
    limit: int  # how many ids a search ranking keeps (similarity_top_k_fusion)
    # How much keyword rankings count for this question: above 1 where it uses the domain's
    # words, whose expanded keywords are precise where embeddings are not.
    keyword_boost: float = 1.0
    allowed: set[str] | None = None  # the chunks the filters and routing leave (None: any)
    allowed_pages: set[str] | None = None  # the pages of `allowed` (None: any)
    routing: Routing = NOT_ROUTED  # the routing this search runs under
    scope: tuple[str, ...] = ()  # the documents a routed search is held to
    # The rankings of the rankers run before this one at its level (chunks, or pages), by name.
    rankings: Mapping[str, Ranking] = field(default_factory=dict)
    fused: Sequence[tuple[str, float]] = ()  # the chunks as the last join fused them

    @property
    def order(self) -> list[str]:
        """The chunk ids as the last join fused them."""
        return [chunk_id for chunk_id, _ in self.fused]

    def keyword_query(self) -> str:
        """The question with the document words its domain terms stand for."""
        return self.vocabulary.keyword_query(self.question)


class Ranker(ABC):
    """One retrieval signal. `weight` counts it in its stage's join (1: like the dense
    ranking); `weight_for` may change it by question (0: not run)."""

    name: ClassVar[str]
    stage: ClassVar[Stage]

    def __init__(self, weight: float = 1.0) -> None:
        self.weight = weight

    def weight_for(self, context: RankContext) -> float:
        return self.weight

    @abstractmethod
    def rank(self, context: RankContext) -> Ranking:
        """The ids, best first (chunk ids, or page ids in `Stage.PAGES`)."""


R = TypeVar("R", bound=type[Ranker])
_REGISTERED: dict[str, type[Ranker]] = {}


def register_ranker(ranker: R) -> R:
    """Adds a ranker class by its `name`; every retriever made after runs it, at the end of
    its stage, with weight 1 (or its own default), until a setting disables it."""
    if ranker.name in _REGISTERED:
        raise ValueError(f"A ranker named {ranker.name!r} is already registered.")
    _REGISTERED[ranker.name] = ranker
    return ranker


def unregister_ranker(name: str) -> None:
    _REGISTERED.pop(name, None)


def registered_rankers() -> dict[str, type[Ranker]]:
    """The rankers added by name, in the order they were registered."""
    return dict(_REGISTERED)
