"""The best-sentence ranking reads each candidate's own sentences: one printed on many of the
candidates' pages (a running header, a figure's source line) is skipped."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from llama_index.core.schema import QueryBundle
from state_helpers import memory_docstore
from test_evidence import OFF, Keywords, Vectors, doc_state, evidence_settings, place

from citerag.domain import DomainVocabulary
from citerag.nodes import BLOCK_TYPE, page_vector_key
from citerag.retrieve.best_sentence import MAX_SHARED_PAGES, best_sentence_scores
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.hybrid import HybridRetriever, RetrievalSettings


def unit(*values: float) -> np.ndarray:
    vector = np.array([*values, 0.0, 0.0, 0.0][:4], dtype=np.float32)
    return vector / np.linalg.norm(vector)


QUESTION = unit(1, 0, 0)
CAPTION = unit(1, 0.2, 0)  # closest to the question, printed under every figure
CLOSE, MIDDLE, FAR = unit(1, 0.5, 0), unit(1, 1, 0), unit(0, 1, 0)


def page_of(chunk_id: str) -> str:
    return chunk_id.split("#")[0]


def test_a_sentence_on_more_pages_than_allowed_is_skipped() -> None:
    pages = [f"p{i}" for i in range(MAX_SHARED_PAGES + 1)]
    vectors = {f"{p}#1": np.stack([CAPTION, FAR]) for p in pages}
    vectors["p0#1"] = np.stack([CAPTION, CLOSE])
    best = best_sentence_scores(vectors, page_of, QUESTION)
    assert best["p0#1"] == float(CLOSE @ QUESTION)
    assert best["p1#1"] == float(FAR @ QUESTION)


def test_a_sentence_two_pages_share_still_counts() -> None:
    vectors = {"p0#1": np.stack([CAPTION, FAR]), "p1#1": np.stack([CAPTION, FAR])}
    best = best_sentence_scores(vectors, page_of, QUESTION)
    assert best == {"p0#1": float(CAPTION @ QUESTION), "p1#1": float(CAPTION @ QUESTION)}


def test_chunks_of_one_page_count_as_one_page() -> None:
    """Overlapping chunks of one page share sentences; that is no running header."""
    vectors = {f"p0#{i}": np.stack([CAPTION]) for i in range(MAX_SHARED_PAGES + 2)}
    best = best_sentence_scores(vectors, page_of, QUESTION)
    assert set(best.values()) == {float(CAPTION @ QUESTION)}


def test_a_chunk_of_shared_sentences_only_has_no_score() -> None:
    vectors = {f"p{i}#1": np.stack([CAPTION]) for i in range(MAX_SHARED_PAGES + 1)}
    vectors["p9#1"] = np.stack([CAPTION, MIDDLE])
    assert best_sentence_scores(vectors, page_of, QUESTION) == {"p9#1": float(MIDDLE @ QUESTION)}


class SentenceStore:
    def __init__(self, vectors: dict[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.reads = 0

    def get_sentence_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Any]:
        self.reads += 1
        return {c: self.vectors[c] for c in ids if c in self.vectors}


def test_the_chunk_whose_own_sentence_is_closest_ranks_first() -> None:
    """Each chunk prints the caption; before, all tied on it and the ranking repeated the dense
    order (a first); now the chunk with the closest sentence of its own leads."""
    places = {f"c{i}": place("doc", i) for i in (1, 2, 3)}
    vectors = {
        "c1": np.stack([CAPTION, FAR]),
        "c2": np.stack([CAPTION, MIDDLE]),
        "c3": np.stack([CAPTION, CLOSE]),
    }
    state = CollectionState("c", {"doc": doc_state("doc", places)}, Keywords([]), memory_docstore())  # type: ignore[arg-type]
    retriever = HybridRetriever(
        Vectors(["c1", "c2", "c3"]),  # type: ignore[arg-type]
        SentenceStore(vectors),  # type: ignore[arg-type]
        state,
        embed_model=None,  # type: ignore[arg-type]
        settings=RetrievalSettings(page_weight=0.0, **evidence_settings(OFF)),
    )
    query = QueryBundle("question", embedding=list(QUESTION))
    ranking = retriever.rank(query)
    assert ranking.rankings["best_sentence"] == ["c3", "c2", "c1"]
    fused = [chunk_id for chunk_id, _ in ranking.fused]
    assert fused.index("c3") < fused.index("c2")


def test_a_table_is_also_scored_by_its_page_head_and_prose_is_not() -> None:
    """A statement's rows say little alone; its page head (title, period, header) names it. The
    head counts as one of a table chunk's sentences, never as one of a prose chunk's."""
    places = {
        "rows": {**place("doc", 1), BLOCK_TYPE: "table"},
        "prose": {**place("doc", 2), BLOCK_TYPE: "text"},
        "other": {**place("doc", 3), BLOCK_TYPE: "text"},
    }
    vectors = {"rows": np.stack([FAR]), "prose": np.stack([FAR]), "other": np.stack([MIDDLE])}
    # Page heads, kept by the docstore beside the sentences: the statement's title and period,
    # a prose page's head (not read), and a third page's.
    heads = {1: CLOSE, 2: QUESTION, 3: FAR}
    vectors |= {page_vector_key("doc", page): head[None] for page, head in heads.items()}
    state = CollectionState("c", {"doc": doc_state("doc", places)}, Keywords([]), memory_docstore())  # type: ignore[arg-type]
    retriever = HybridRetriever(
        Vectors(list(places)),  # type: ignore[arg-type]
        SentenceStore(vectors),  # type: ignore[arg-type]
        state,
        embed_model=None,  # type: ignore[arg-type]
        settings=RetrievalSettings(page_weight=0.0, **evidence_settings(OFF)),
    )
    ranking = retriever.rank(QueryBundle("question", embedding=list(QUESTION)))
    assert ranking.rankings["best_sentence"] == ["rows", "other", "prose"]


WORDS = DomainVocabulary("finance", expansions=((r"\bmargin\b", "operating income"),))


def domain_retriever(store: SentenceStore, keyword_weight: float = 2.0) -> HybridRetriever:
    places = {f"c{i}": place("doc", i) for i in (1, 2, 3)}
    state = CollectionState("c", {"doc": doc_state("doc", places)}, Keywords([]), memory_docstore())  # type: ignore[arg-type]
    settings = RetrievalSettings(
        page_weight=0.0,
        **evidence_settings(OFF),
        vocabulary=WORDS,
        filing_keyword_weight=keyword_weight,
    )
    return HybridRetriever(
        Vectors(["c1", "c2", "c3"]),  # type: ignore[arg-type]
        store,  # type: ignore[arg-type]
        state,
        embed_model=None,  # type: ignore[arg-type]
        settings=settings,
    )


def fused(retriever: HybridRetriever, question: str) -> list[str]:
    query = QueryBundle(question, embedding=list(QUESTION))
    return [chunk_id for chunk_id, _ in retriever.rank(query).fused]


def sentences() -> SentenceStore:
    return SentenceStore({"c1": np.stack([FAR]), "c2": np.stack([MIDDLE]), "c3": np.stack([CLOSE])})


def test_a_question_in_the_domains_words_gets_no_best_sentence_ranking() -> None:
    """In the domain's words the keyword rankings count for more and the embedding votes once
    (the dense ranking): a statement's rows lie far from a metric's name, and a second vote
    lifted the prose that discusses the metric above the statement. Nothing is read for it."""
    store = sentences()
    retriever = domain_retriever(store)
    assert fused(retriever, "What was the operating margin?") == ["c1", "c2", "c3"]
    assert store.reads == 0
    assert fused(retriever, "What was the operating result?").index("c3") < 2
    assert store.reads == 1


def test_with_the_domains_words_unweighted_the_best_sentence_still_counts() -> None:
    store = sentences()
    retriever = domain_retriever(store, keyword_weight=1.0)
    assert fused(retriever, "What was the operating margin?").index("c3") < 2
    assert store.reads == 1
