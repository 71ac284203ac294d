"""A LlamaIndex user's app over citerag's parts: stock query engine, evaluator and index.

The demo PDF is ingested with small chunks (ten of them over three pages), so that retrieving
three nodes is a real choice and a hit rate of 1.0 means something.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from helpers import DEMO_PDF
from llama_index.core import VectorStoreIndex
from llama_index.core.evaluation import RetrieverEvaluator
from llama_index.core.llms import MockLLM
from llama_index.core.query_engine import RetrieverQueryEngine
from llama_index.core.schema import TextNode

import rag_factory
from citerag.engine import Engine
from citerag.nodes import HIGHLIGHTS, PAGE
from citerag.retrieve.filters import page_filters
from citerag.settings import Settings

pytestmark = pytest.mark.slow
COLLECTION = "dropin"
TOP_K = 3


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    settings = Settings(
        storage_dir=tmp_path_factory.mktemp("storage"),
        chunk_size=96,
        chunk_overlap=16,
        fusion_top_n=TOP_K,
        reranker="sentence",
    )
    built = Engine(settings)
    outcome = built.ingest(DEMO_PDF, COLLECTION)
    assert outcome.status == "ingested"
    assert outcome.chunks >= 8, "the test needs many more chunks than it retrieves"
    try:
        yield built
    finally:
        built.close()


@pytest.fixture(scope="module")
def chunks(engine: Engine) -> list[TextNode]:
    return engine.docstore.ready_chunks(COLLECTION)


def chunk_containing(chunks: list[TextNode], phrase: str) -> str:
    """The id of the one chunk whose text holds the phrase (chosen by content, not by search)."""
    found = [n.node_id for n in chunks if phrase in n.get_content()]
    assert len(found) == 1, f"{phrase!r} is in {len(found)} chunks; pick a more distinctive one"
    return found[0]


def test_stock_retriever_query_engine_returns_highlighted_page_nodes(engine: Engine) -> None:
    retriever = rag_factory.build_retriever(engine, COLLECTION)
    postprocessors = rag_factory.build_postprocessors(engine, COLLECTION, top_k=TOP_K)
    query_engine = RetrieverQueryEngine.from_args(
        retriever, node_postprocessors=postprocessors, llm=MockLLM()
    )

    response = query_engine.query("How does reciprocal rank fusion combine the ranked lists?")

    assert 1 <= len(response.source_nodes) <= TOP_K
    assert str(response.response)  # MockLLM answered, no network
    highlighted = 0
    for scored in response.source_nodes:
        node = scored.node
        assert isinstance(node, TextNode)
        assert isinstance(node.metadata[PAGE], int) and 1 <= node.metadata[PAGE] <= 3
        for highlight in node.metadata[HIGHLIGHTS]:
            start, end = highlight["startOffset"], highlight["endOffset"]
            assert node.get_content()[start:end] == highlight["text"]
            highlighted += 1
    assert highlighted >= 1
    assert any("reciprocal rank fusion" in n.node.get_content() for n in response.source_nodes)


def test_stock_query_engine_leaves_docstore_nodes_without_highlights(engine: Engine) -> None:
    retriever = rag_factory.build_retriever(engine, COLLECTION)
    postprocessors = rag_factory.build_postprocessors(engine, COLLECTION, top_k=TOP_K)
    query_engine = RetrieverQueryEngine.from_args(
        retriever, node_postprocessors=postprocessors, llm=MockLLM()
    )
    response = query_engine.query("Which parser needs no model weights?")
    ids = [n.node.node_id for n in response.source_nodes]

    stored = engine.docstore.get_chunks(COLLECTION, ids)

    assert stored and all(HIGHLIGHTS not in node.metadata for node in stored)


def test_retriever_evaluator_hits_every_reference_chunk(
    engine: Engine, chunks: list[TextNode]
) -> None:
    retriever = rag_factory.build_retriever(engine, COLLECTION)
    evaluator = RetrieverEvaluator.from_metric_names(["hit_rate", "mrr"], retriever=retriever)
    questions = {
        "What does k = 60 do in reciprocal rank fusion?": "k = 60 damps the influence",
        "Which parser reads the text layer and finds ruled tables from vector lines?": (
            "PyMuPDF reads the text layer directly"
        ),
        "How are the answers evaluated, besides retrieval hit rate?": (
            "share of cited sentences that really contain the claimed fact"
        ),
    }

    for question, phrase in questions.items():
        expected = chunk_containing(chunks, phrase)
        result = evaluator.evaluate(query=question, expected_ids=[expected])
        assert len(result.retrieved_ids) <= TOP_K
        assert result.metric_vals_dict["hit_rate"] == 1.0, (question, result.retrieved_ids)
        assert result.metric_vals_dict["mrr"] > 0.0


def test_page_filters_keep_every_hit_on_the_page(engine: Engine) -> None:
    retriever = rag_factory.build_retriever(engine, COLLECTION, filters=page_filters(2, 2))

    # A question about page 1 (the parsers): unfiltered it would find page 1 first.
    hits = retriever.retrieve("Which parsers are available and how do they find tables?")

    assert hits
    assert {hit.node.metadata[PAGE] for hit in hits} == {2}


def test_local_embedding_drives_a_stock_vector_store_index(
    engine: Engine, chunks: list[TextNode]
) -> None:
    vector = np.asarray(engine.embed_model.get_query_embedding("rank fusion"))
    assert vector.ndim == 1 and vector.shape[0] > 0
    assert np.linalg.norm(vector) == pytest.approx(1.0, abs=1e-3)

    index = VectorStoreIndex(chunks, embed_model=engine.embed_model)
    hits = index.as_retriever(similarity_top_k=1).retrieve(
        "Which formula gives the fused score of a chunk from its rank in each list?"
    )

    assert [hit.node.node_id for hit in hits] == [
        chunk_containing(chunks, "The fused score of a chunk is the sum over rankers")
    ]
