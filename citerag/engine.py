"""The one engine object behind the CLI, the HTTP API, the benchmarks and the tests."""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.schema import NodeWithScore, QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters

from citerag.answer.contract import AnswerResult
from citerag.answer.llm_answer import LLMAnswerer
from citerag.answer.number_check import with_number_check
from citerag.embed.collection_model import check_model, record_model
from citerag.embed.embedder import Embedder
from citerag.embed.llama import LocalEmbedding
from citerag.embed.providers import build_embedder
from citerag.enrich.enrichment_summary import enrichment_summary
from citerag.enrich.step import build_enricher
from citerag.errors import InputError
from citerag.ingest.pipeline import Ingestor, IngestOutcome, Progress
from citerag.ingest.repair import Repair, SplitBrainRepairer
from citerag.nodes import DOC_ID
from citerag.plan.limits import check_pages_exist, checked_question
from citerag.query.cited_query_engine import CitedQueryEngine, answer_from_response
from citerag.query.query_factory import QueryFactory
from citerag.query.subquestions import CitedSubQuestionQueryEngine
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.retrieve.filters import page_filters
from citerag.retrieve.routing import checked_where
from citerag.settings import Settings
from citerag.store.base import DocStore, PageRange, Stores, VectorIndex
from citerag.store.factory import open_docstore, open_keyword_index, open_vector_index
from citerag.store.keywords import KeywordIndex
from citerag.tools.context import ToolContext
from citerag.tools.registry import build_question_generator, build_tools
from citerag.tools.retriever import FilterScope
from citerag.tools.tree_answer import tree_answer
from citerag.tools.tree_mode import TOP_K_FILES
from citerag.types import DocumentRecord, camel_case_fields

log = logging.getLogger(__name__)
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")


@dataclass
class DocumentSummary:
    collection: str
    name: str
    doc_id: str
    pages: int
    parser: str
    chunks_in_milvus: int
    chunks_in_docstore: int
    metadata: dict[str, Any] | None = None  # what enrichment stored (enrich.enrichment_summary)
    card: dict[str, Any] | None = None  # what the document is (citerag.enrich.cards)

    @property
    def health(self) -> str:
        """ "ok" when Milvus and the docstore hold the same chunks, else what is missing."""
        if self.chunks_in_milvus == self.chunks_in_docstore > 0:
            return "ok"
        if self.chunks_in_docstore == 0:
            return "no chunks in the docstore"
        if self.chunks_in_milvus < self.chunks_in_docstore:
            return "vectors missing in Milvus"
        return "chunks missing in the docstore"

    def to_dict(self) -> dict[str, object]:
        unenriched = {"enrichedBy": "none", "fields": {}}
        record = camel_case_fields(self, metadata=self.metadata or unenriched)
        return {**record, "health": self.health}


def check_collection_name(name: str) -> str:
    if not _COLLECTION_NAME.match(name):
        raise InputError(
            f"Collection name {name!r} is not allowed; use up to 64 letters, digits, '_' or '-'."
        )
    return name


class Engine:
    def __init__(
        self,
        settings: Settings,
        docstore: DocStore | None = None,
        vectors: VectorIndex | None = None,
        embedder: Embedder | None = None,
        schema: Any | None = None,
        keywords: KeywordIndex | None = None,
    ) -> None:
        """`schema`: the collection's extraction schema (`extraction_schemas.get_schema`), which
        GLiNER's labels and LangExtract's attributes come from; None uses generic labels."""
        self.settings = settings
        settings.storage.storage_dir.mkdir(parents=True, exist_ok=True)
        self.docstore = docstore or open_docstore(settings.storage)
        self.vectors = vectors or open_vector_index(settings.storage)
        self.keywords = keywords or open_keyword_index(settings.storage, self.vectors)
        self.stores = Stores(self.docstore, self.vectors, self.keywords)
        self.embedder = embedder or build_embedder(settings.embedding)
        self.embed_model = LocalEmbedding(self.embedder)
        self.schema = schema
        enricher = build_enricher(settings, schema)
        self._ingestor = Ingestor(settings, self.stores, self.embedder, enricher)
        self._repairer = SplitBrainRepairer(settings, self.stores, self._ingestor.steps)
        self._checked: set[str] = set()
        self._states: dict[str, CollectionState] = {}
        self._model_checked: dict[str, CollectionState] = {}  # snapshot whose model was checked
        self._state_locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()
        self._factory: QueryFactory | None = None

    def check_collection(self, collection: str, force: bool = False) -> list[Repair]:
        """Detect and repair split-brain in `collection`, once per engine unless `force`d."""
        with self._lock:
            if collection in self._checked and not force:
                return []
            self._checked.add(collection)
        repairs = self._repairer.check(collection)
        if repairs:
            self._forget_state(collection)
        return repairs

    def collection_state(self, collection: str) -> CollectionState:
        """The collection's state, first brought in line with the docstore by delta: what
        another process added or removed since is loaded or dropped, document by document."""
        self.check_collection(collection)
        with self._lock:
            lock = self._state_locks.setdefault(collection, threading.Lock())
        with lock:
            state = self._states.get(collection)
            fresh = refresh_state(
                state, self.docstore, self.keywords, collection, self.settings.retrieval.vocabulary
            )
            with self._lock:
                self._states[collection] = fresh
            return fresh

    def _forget_state(self, collection: str) -> None:
        with self._lock:
            self._states.pop(collection, None)

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        check_collection_name(collection)
        self.check_collection(collection)
        check_model(self.docstore, collection, self.embedder, "ingest into")
        outcome = self._ingestor.ingest(path, collection, progress)
        if outcome.status != "skipped":  # a skipped file embedded nothing (no model loaded)
            record_model(self.docstore, collection, self.embedder)
        return outcome

    def prepare(self, path: Path) -> None:
        """Parse `path` in the background while the current file is ingested (a shelf)."""
        self._ingestor.prepare(path)

    @property
    def factory(self) -> QueryFactory:
        """What every question shares, built on the first question (models load once)."""
        with self._lock:
            if self._factory is None:
                self._factory = QueryFactory(
                    self.settings, self.docstore, self.vectors, self.embed_model, self.embedder
                )
            return self._factory

    def query_engine(
        self,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
    ) -> CitedQueryEngine:
        """A LlamaIndex query engine over one collection (its `Response` keeps the sources)."""
        state = self.searchable_state(collection)
        return self.factory.query_engine(state, top_k=top_k, filters=filters)

    def subquestion_engine(
        self,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
        filter_scopes: Mapping[str, FilterScope | str] | None = None,
    ) -> CitedSubQuestionQueryEngine:
        """The sub-question engine over one collection: facts, pages, summary, sections.
        `filter_scopes` overrides where years and entities filter (`tools.facts`)."""
        state = self.searchable_state(collection)
        scopes = {name: FilterScope(scope) for name, scope in (filter_scopes or {}).items()}
        context = ToolContext(self.factory, state, self.docstore, top_k, filters, scopes)
        generator = build_question_generator(self.factory.answerer)
        return CitedSubQuestionQueryEngine(build_tools(context), generator, context)

    def query(
        self,
        question: str,
        collection: str,
        top_k: int | None = None,
        page_range: PageRange | None = None,
        filters: MetadataFilters | None = None,
        plan: bool = True,
        where: Mapping[str, str] | None = None,
    ) -> AnswerResult:
        """`plan`: sub-questions routed to tools (a plain question is one `facts` call);
        False: one retrieval over the whole question. `where`: only the documents whose cards
        match (`company=3M`, `year=2018`: `citerag.retrieve.routing.WHERE_KEYS`)."""
        if page_range is not None:
            pages = [r.pages for r in self.docstore.list_documents(collection)]
            check_pages_exist(page_range, collection, pages)
            filters = page_filters(page_range.first, page_range.last)
        if where:
            filters = self._documents_filter(collection, where, filters)
        engine: BaseQueryEngine = (
            self.subquestion_engine(collection, top_k, filters)
            if plan
            else self.query_engine(collection, top_k=top_k, filters=filters)
        )
        response = engine.query(QueryBundle(checked_question(question)))
        return with_number_check(question, answer_from_response(response))  # type: ignore[arg-type]

    def _documents_filter(
        self, collection: str, where: Mapping[str, str], filters: MetadataFilters | None
    ) -> MetadataFilters:
        """`filters` and the documents whose cards match `where`, or an InputError sentence
        when none does."""
        wanted = checked_where(where)
        doc_ids = self.searchable_state(collection).router.documents_where(wanted)
        if not doc_ids:
            shown = ", ".join(f"{k}={v}" for k, v in wanted.items())
            raise InputError(
                f"No document in collection {collection!r} matches {shown}; "
                "see the cards with `python main.py list --json`."
            )
        documents = MetadataFilter(key=DOC_ID, value=doc_ids, operator=FilterOperator.IN)
        items = [*(filters.filters if filters else []), documents]
        return MetadataFilters(filters=items)

    @property
    def answerer(self) -> LLMAnswerer | None:
        """The configured LLM's answerer (None: extractive answers)."""
        return self.factory.answerer

    def tree_answer(
        self, question: str, collection: str, top_k_files: int = TOP_K_FILES
    ) -> AnswerResult:
        """Tree mode (seed 003): files ranked by the hybrid retriever, `top_k_files` of them,
        five sections each from their stored trees, one cited answer."""
        question = checked_question(question)
        context = ToolContext(self.factory, self.searchable_state(collection), self.docstore)
        return tree_answer(context, question, top_k_files)

    def retrieve(
        self,
        question: str,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
    ) -> list[NodeWithScore]:
        """The reranked nodes a question's answer would cite, without highlights or answer."""
        state = self.searchable_state(collection)
        factory = self.factory
        query = QueryBundle(question)
        nodes = factory.retriever(state, filters).retrieve(query)
        reranker = factory.postprocessors(collection, top_k).reranker
        return reranker.postprocess_nodes(nodes, query_bundle=query)

    def searchable_state(self, collection: str) -> CollectionState:
        """The collection's loaded state for answering questions; an InputError that says how
        to add a document when the name is invalid or the collection holds none."""
        check_collection_name(collection)
        state = self.collection_state(collection)
        # The record only changes with the documents, so once per snapshot, not per question.
        if self._model_checked.get(collection) is not state:
            check_model(self.docstore, collection, self.embedder, "ask")
            self._model_checked[collection] = state
        if state.is_empty:
            raise InputError(
                f"Collection {collection!r} does not exist or has no documents; add one with "
                f"`python main.py ingest PATH --collection {collection}`."
            )
        return state

    def list_documents(self, collections: Sequence[str] | None = None) -> list[DocumentSummary]:
        names = list(collections) if collections else self.docstore.collections()
        summaries = []
        for collection in names:
            self.check_collection(collection)
            has_vectors = self.vectors.has_collection(collection)
            records = self.docstore.list_documents(collection)
            cards = self._cards(collection, records)
            for record in records:
                summaries.append(
                    DocumentSummary(
                        collection=collection,
                        name=record.name,
                        doc_id=record.doc_id,
                        pages=record.pages,
                        parser=record.parser,
                        chunks_in_milvus=(
                            self.vectors.count(collection, record.doc_id) if has_vectors else 0
                        ),
                        chunks_in_docstore=self.docstore.count_chunks(collection, record.doc_id),
                        metadata=enrichment_summary(
                            self.docstore.chunks_of(collection, record.doc_id)
                        ),
                        card=cards.get(record.doc_id),
                    )
                )
        return summaries

    def _cards(
        self, collection: str, records: Sequence[DocumentRecord]
    ) -> dict[str, dict[str, Any]]:
        """Each ready document's card (`records`): stored at ingest, or read now from the first
        pages of a document stored before cards were made."""
        stored = self.docstore.get_cards(collection)
        if all(r.doc_id in stored for r in records):
            return {d: dict(card) for d, card in stored.items()}
        docs = self.collection_state(collection).docs
        return {d: doc.card.to_dict() for d, doc in docs.items()}

    def delete(self, name: str, collection: str) -> int:
        """Remove every document of that name from the collection; returns how many."""
        records = self.docstore.find_by_name(collection, name)
        for record in records:
            self._ingestor.remove(collection, record.doc_id)
        return len(records)

    def close(self) -> None:
        self._ingestor.close()
        self.stores.close()
