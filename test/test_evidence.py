"""Soft evidence in the fusion: what the question names raises the chunks (or documents) that
carry it, never removes a chunk, and costs nothing when its setting is off."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
from llama_index.core.schema import QueryBundle
from state_helpers import stored_state

from citerag.enrich.fields import TOPICS
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.doc_state import DocState
from citerag.retrieve.evidence import (
    CollectionView,
    EvidenceWeights,
    evidence_rankings,
    named_entities,
    quoted_phrases,
)
from citerag.retrieve.hybrid import HybridRetriever, RetrievalSettings
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import Place
from citerag.store.base import VectorQuery
from citerag.store.keywords import KeywordQuery
from citerag.text.mentions import EntityMatcher, TopicMatcher

DIM = 4
OFF = EvidenceWeights(entities=0, years=0, quotes=0, topics=0)


def evidence_settings(weights: EvidenceWeights) -> dict[str, Any]:
    """The retrieval settings that give `weights` (`RetrievalSettings.evidence`)."""
    return {f"evidence_{name}": weight for name, weight in asdict(weights).items()}


def place(doc: str, page: int, **lists: list[str]) -> dict[str, Any]:
    return {"doc_id": doc, "doc_name": f"{doc}.pdf", "page": page, **lists}


def doc_state(doc: str, places: dict[str, dict[str, Any]]) -> DocState:
    """The document's state in memory, for tests that filter on no list (`stored_state` writes
    the lists to a docstore, where a snapshot reads them)."""
    chunk_ids: dict[PageKey, list[str]] = {}
    for chunk_id, where in places.items():
        chunk_ids.setdefault(PageKey(doc, where["page"]), []).append(chunk_id)
    held = {chunk_id: Place.of(where) for chunk_id, where in places.items()}
    return DocState(doc, 1.0, held, tuple(chunk_ids), chunk_ids, frozenset())


class Keywords:
    """A keyword index that ranks whatever the test lists, for every query."""

    def __init__(self, chunks: Sequence[str]) -> None:
        self.chunks = list(chunks)
        self.queries: list[str] = []

    def search(self, collection: str, query: KeywordQuery) -> list[tuple[str, float]]:
        self.queries.append(query.text)
        if query.kind != "chunk":
            return []
        allowed = query.allowed_ids
        found = [c for c in self.chunks if allowed is None or c in allowed]
        return [(c, 1.0 / (i + 1)) for i, c in enumerate(found[: query.top_k])]


class Vectors:
    def __init__(self, ranking: Sequence[str]) -> None:
        self.ranking = list(ranking)

    def search(self, collection: str, query: VectorQuery) -> list[list[tuple[str, float]]]:
        return [[(c, 1.0) for c in self.ranking[: query.top_k]]]


class Docstore:
    def get_sentence_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Any]:
        return {}


# Two documents: "acme" (the company the question names) and "other".
PLACES = {
    "other-1": place("other", 1),
    "other-2": place("other", 2),
    "acme-1": place("acme", 1, entities=["Acme Corp"]),
    "acme-2": place("acme", 2, years=["2019"]),
    "acme-3": place("acme", 3, years=["2020"]),
}
DENSE = ["other-1", "other-2", "acme-2", "acme-3", "acme-1"]
KEYWORD = ["other-2", "other-1", "acme-3", "acme-2", "acme-1"]


def retriever(weights: EvidenceWeights) -> tuple[HybridRetriever, CollectionState]:
    state = stored_state(PLACES, Keywords(KEYWORD))  # type: ignore[arg-type]
    settings = RetrievalSettings(page_weight=0.0, sentence_weight=0.0, **evidence_settings(weights))
    built = HybridRetriever(
        Vectors(DENSE),  # type: ignore[arg-type]
        Docstore(),  # type: ignore[arg-type]
        state,
        embed_model=None,  # type: ignore[arg-type]
        settings=settings,
    )
    return built, state


def ranked(weights: EvidenceWeights, question: str) -> list[str]:
    built, _ = retriever(weights)
    query = QueryBundle(question, embedding=list(np.ones(DIM)))
    return [chunk_id for chunk_id, _ in built.rank(query).fused]


def test_a_document_carrying_the_named_entity_rises() -> None:
    question = "How many people did Acme Corp employ?"
    without = ranked(OFF, question)
    with_entities = ranked(EvidenceWeights(entities=1, years=0, quotes=0, topics=0), question)
    assert without[0].startswith("other")
    assert with_entities[0].startswith("acme")
    # Soft: the other document's chunks are still there, only lower.
    assert set(with_entities) == set(without)


def test_entity_evidence_keeps_the_order_inside_a_document() -> None:
    question = "How many people did Acme Corp employ?"
    on = ranked(EvidenceWeights(entities=1, years=0, quotes=0, topics=0), question)
    off = ranked(OFF, question)
    assert [c for c in on if c.startswith("acme")] == [c for c in off if c.startswith("acme")]


def test_a_year_the_question_names_raises_the_chunk_carrying_it() -> None:
    question = "What changed in 2020?"
    without = ranked(OFF, question)
    with_years = ranked(EvidenceWeights(entities=0, years=1, quotes=0, topics=0), question)
    assert with_years.index("acme-3") < without.index("acme-3")
    assert set(with_years) == set(without)


def test_nothing_is_computed_for_a_signal_that_is_off() -> None:
    built, state = retriever(OFF)
    asked: list[str] = []
    state.mentions = lambda key, text: asked.append(key) or []  # type: ignore[method-assign]
    ranking = built.rank(QueryBundle('"Acme Corp" in 2020?', embedding=list(np.ones(DIM))))
    assert ranking.evidence == {}
    assert asked == []
    assert state.keywords.queries == ['"Acme Corp" in 2020?'] * 2  # type: ignore[attr-defined]


def test_the_ranking_reports_each_signal_that_found_something() -> None:
    built, _ = retriever(EvidenceWeights())
    ranking = built.rank(QueryBundle("Did Acme Corp grow in 2020?", embedding=list(np.ones(DIM))))
    assert set(ranking.evidence) == {"entities", "years"}


def test_a_lower_case_word_does_not_name_a_capitalised_entity() -> None:
    question = "Does Netflix pay a dividend?"
    mentions = EntityMatcher(["Dividend", "Netflix"]).mentions(question)
    assert named_entities(question, mentions) == ["netflix"]


def test_quoted_phrases_of_two_words_or_more() -> None:
    question = 'Based on "PSEUDOCODE FOR RETRIEVAL METHODS", which "one" is longer?'
    assert quoted_phrases(question) == ["PSEUDOCODE FOR RETRIEVAL METHODS"]


def _mentions(known: Sequence[str], key: str, text: str) -> list[str]:
    return (TopicMatcher if key == TOPICS else EntityMatcher)(known).mentions(text)


def view(index: dict[str, dict[str, set[str]]], known: dict[str, tuple[str, ...]]) -> Any:
    searched: list[str] = []

    def keyword_search(text: str, allowed: Collection[str] | None) -> list[str]:
        searched.append(text)
        return ["quoted"]

    built = CollectionView(
        mentions=lambda key, text: _mentions(known.get(key, ()), key, text),
        carriers=lambda key, values: index.get(key, {}),
        doc_of=lambda chunk_id: chunk_id.split("-")[0],
        chunk_count=10,
        keyword_search=keyword_search,
    )
    return built, searched


def test_a_quoted_phrase_is_searched_alone() -> None:
    built, searched = view({}, {})
    weights = EvidenceWeights(entities=0, years=0, quotes=1, topics=0)
    found = evidence_rankings('Where is "the spare tyre"?', weights, built, [], None, 5)
    assert {signal: ranking.ids for signal, ranking in found.items()} == {"quotes": ["quoted"]}
    assert searched == ["the spare tyre"]


def test_topics_are_read_when_stored_and_matched_by_value() -> None:
    index = {"topics": {"product=dishwasher": {"a-1"}, "product=oven": {"a-2"}}}
    known = {"topics": ("product=dishwasher", "product=oven")}
    built, _ = view(index, known)
    weights = EvidenceWeights(entities=0, years=0, quotes=0, topics=1)
    found = evidence_rankings("How do I clean the dishwasher?", weights, built, [], None, 5)
    assert {signal: ranking.ids for signal, ranking in found.items()} == {"topics": ["a-1"]}


def test_rarer_values_rank_first() -> None:
    index = {"years": {"2019": {"a-1", "a-2", "a-3"}, "2020": {"a-3", "b-1"}}}
    built, _ = view(index, {})
    weights = EvidenceWeights(entities=0, years=1, quotes=0, topics=0)
    order = ["a-1", "a-2", "a-3", "b-1"]
    found = evidence_rankings("From 2019 to 2020?", weights, built, order, None, 5)
    assert found["years"].groups == (("a-3",), ("b-1",), ("a-1", "a-2"))  # both, 2020, 2019


def test_chunks_the_evidence_cannot_tell_apart_share_one_rank() -> None:
    """Two carriers of the one year named rank alike, so the evidence does not repeat the fused
    order between them (that only amplified it); their order stays the other rankings'."""
    index = {"years": {"2019": {"a-1", "a-2"}}}
    built, _ = view(index, {})
    weights = EvidenceWeights(entities=0, years=1, quotes=0, topics=0)
    found = evidence_rankings("In 2019?", weights, built, ["a-2", "a-1"], None, 5)
    assert found["years"].groups == (("a-2", "a-1"),)
    assert dict(found["years"].ranks()) == {"a-2": 1, "a-1": 1}


def test_the_cut_at_the_limit_keeps_ranks_of_a_partly_kept_group() -> None:
    index = {"years": {"2019": {"a-1", "a-2", "a-3"}, "2020": {"b-1"}}}
    built, _ = view(index, {})
    weights = EvidenceWeights(entities=0, years=1, quotes=0, topics=0)
    found = evidence_rankings("In 2019 or 2020?", weights, built, ["a-3", "a-1"], None, 3)
    assert found["years"].groups == (("b-1",), ("a-3", "a-1"))
    assert dict(found["years"].ranks()) == {"b-1": 1, "a-3": 2, "a-1": 2}


def test_a_hard_filter_only_for_what_the_question_states() -> None:
    from types import SimpleNamespace

    from citerag.plan.question_filters import filters_for
    from citerag.tools.facts import FactsQueryEngine
    from citerag.tools.retriever import ListFilters

    facts = FactsQueryEngine(SimpleNamespace(filter_scopes={}))  # type: ignore[arg-type]
    acme = EntityMatcher(["Acme Corp"]).mentions
    named_only = filters_for("How many people did Acme Corp employ?", acme)
    assert named_only.entities == ["Acme Corp"]
    assert facts.scoped_filters(named_only) == ListFilters()  # evidence, not a filter
    pinned = filters_for("How many people did Acme Corp employ in 2020?", acme)
    scoped = facts.scoped_filters(pinned)
    assert scoped.vector is None
    assert scoped.hard is not None
    assert [f.key for f in scoped.hard.filters] == ["years"]  # type: ignore[union-attr]


def test_a_value_most_of_the_collection_carries_is_no_evidence() -> None:
    index = {"years": {"2020": {f"a-{i}" for i in range(8)}}}
    built, _ = view(index, {})
    weights = EvidenceWeights(entities=0, years=1, quotes=0, topics=0)
    assert evidence_rankings("Revenue in 2020?", weights, built, [], None, 5) == {}
