"""The one engine object behind the CLI, the HTTP API, the benchmarks and the tests: it wires
the stores, the embedder, ingest and the question side (`citerag.query.answering`) together;
the collections' upkeep (loaded states, split-brain repair, the model check, document health)
lives in `citerag.collection`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar

from llama_index.core.schema import NodeWithScore
from llama_index.core.vector_stores.types import MetadataFilters

from citerag.answer.contract import AnswerResult
from citerag.answer.llm_answer import LLMAnswerer
from citerag.collection.health import DocumentHealth, DocumentSummary
from citerag.collection.model_check import ModelCheck
from citerag.collection.names import check_collection_name
from citerag.collection.repairs import RepairOnce
from citerag.collection.states import CollectionStates
from citerag.embed.embedder import Embedder
from citerag.embed.llama import LocalEmbedding
from citerag.embed.providers import build_embedder
from citerag.enrich.step import build_enricher
from citerag.errors import InputError
from citerag.ingest.pipeline import Ingestor, IngestOutcome, Progress
from citerag.ingest.repair import Repair, SplitBrainRepairer
from citerag.query.answering import Answering
from citerag.query.cited_query_engine import CitedQueryEngine
from citerag.query.modes import answer_by_mode
from citerag.query.query_factory import QueryFactory
from citerag.query.request import AnswerRequest, Mode
from citerag.query.subquestions import CitedSubQuestionQueryEngine
from citerag.retrieve.collection_state import CollectionState
from citerag.settings import Settings
from citerag.store.base import DocStore, PageRange, Stores, VectorIndex
from citerag.store.factory import open_docstore, open_keyword_index, open_vector_index
from citerag.store.keywords import KeywordIndex
from citerag.tools.retriever import FilterScope
from citerag.tools.tree_mode import TOP_K_FILES

log = logging.getLogger(__name__)
T = TypeVar("T")
__all__ = ["AnswerRequest", "DocumentSummary", "Engine", "Mode", "check_collection_name"]


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
        repairer = SplitBrainRepairer(settings, self.stores, self._ingestor.steps)
        self._states = CollectionStates(
            self.docstore,
            self.keywords,
            settings.retrieval.vocabulary,
            self.check_collection,
            self.vectors.note_change,
            self.vectors.pages,
        )
        self._repairs = RepairOnce(repairer, on_repaired=self._states.forget)
        self._models = ModelCheck(self.docstore, self.embedder)
        self._health = DocumentHealth(self.docstore, self.vectors, self.collection_state)
        self._factory = _Lazy(
            lambda: QueryFactory(
                self.settings, self.docstore, self.vectors, self.embed_model, self.embedder
            )
        )
        self._answering = Answering(self._factory.get, self.docstore, self.searchable_state)

    def check_collection(self, collection: str, force: bool = False) -> list[Repair]:
        """Detect and repair split-brain in `collection`, once per engine unless `force`d."""
        return self._repairs.check(collection, force)

    def reindex(self, collection: str) -> list[Repair]:
        """The collection's vector rows written again from the docstore in the current schema
        (a collection made before the list-field columns gets them): its Milvus collection is
        dropped and split-brain repair rebuilds every document from its stored chunks and
        sentence vectors (or its cached parse). Searches find fewer rows until it is done; one
        cut short is finished by the repair on the next open."""
        check_collection_name(collection)
        if not self.docstore.list_documents(collection):
            raise InputError(
                f"No collection {collection!r} holds documents; see `python main.py list`."
            )
        self.vectors.drop_collection(collection)
        self._states.forget(collection)
        return self.check_collection(collection, force=True)

    def collection_state(self, collection: str) -> CollectionState:
        """The collection's state, first brought in line with the docstore by delta."""
        return self._states.current(collection)

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        check_collection_name(collection)
        self.check_collection(collection)
        self._models.before_ingest(collection)
        outcome = self._ingestor.ingest(path, collection, progress)
        if outcome.status != "skipped":  # a skipped file embedded nothing (no model loaded)
            self._models.after_ingest(collection)
        return outcome

    def prepare(self, path: Path) -> None:
        """Parse `path` in the background while the current file is ingested (a shelf)."""
        self._ingestor.prepare(path)

    @property
    def factory(self) -> QueryFactory:
        """What every question shares, built on the first question (models load once)."""
        return self._factory.get()

    def query_engine(
        self,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
    ) -> CitedQueryEngine:
        """A LlamaIndex query engine over one collection (its `Response` keeps the sources)."""
        return self._answering.query_engine(collection, top_k, filters)

    def subquestion_engine(
        self,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
        filter_scopes: Mapping[str, FilterScope | str] | None = None,
    ) -> CitedSubQuestionQueryEngine:
        """The sub-question engine over one collection: facts, pages, summary, sections.
        `filter_scopes` overrides where years and entities filter (`tools.facts`)."""
        return self._answering.subquestion_engine(collection, top_k, filters, filter_scopes)

    def answer(self, request: AnswerRequest) -> AnswerResult:
        """The answer contract for `request`, the way its mode answers it
        (`citerag.query.modes`): the one entry the CLI, the API and the MCP tools use."""
        return answer_by_mode(self._answering, request)

    def query(
        self,
        question: str,
        collection: str,
        *,
        top_k: int | None = None,
        page_range: PageRange | None = None,
        filters: MetadataFilters | None = None,
        plan: bool = True,
        where: Mapping[str, str] | None = None,
    ) -> AnswerResult:
        """`answer` for library callers: `plan` True is the hybrid mode (sub-questions routed
        to tools), False the single mode (one retrieval over the whole question)."""
        mode = Mode.HYBRID if plan else Mode.SINGLE
        request = AnswerRequest.of(
            question,
            collection,
            mode=mode,
            top_k=top_k,
            pages=page_range,
            filters=filters,
            where=where,
        )
        return self.answer(request)

    def tree_answer(
        self, question: str, collection: str, *, top_k_files: int = TOP_K_FILES
    ) -> AnswerResult:
        """`answer` in tree mode for library callers: the best sections of `top_k_files` files."""
        request = AnswerRequest.of(question, collection, mode=Mode.TREE, top_k_files=top_k_files)
        return self.answer(request)

    @property
    def answerer(self) -> LLMAnswerer | None:
        """The configured LLM's answerer (None: extractive answers)."""
        return self.factory.answerer

    def retrieve(
        self,
        question: str,
        collection: str,
        top_k: int | None = None,
        filters: MetadataFilters | None = None,
    ) -> list[NodeWithScore]:
        """The reranked nodes a question's answer would cite, without highlights or answer."""
        return self._answering.retrieve(question, collection, top_k, filters)

    def searchable_state(self, collection: str) -> CollectionState:
        """The collection's loaded state for answering questions; an InputError that says how
        to add a document when the name is invalid or the collection holds none."""
        check_collection_name(collection)
        state = self.collection_state(collection)
        self._models.before_asking(collection, state)
        if state.is_empty:
            raise InputError(
                f"Collection {collection!r} does not exist or has no documents; add one with "
                f"`python main.py ingest PATH --collection {collection}`."
            )
        return state

    def list_documents(self, collections: Sequence[str] | None = None) -> list[DocumentSummary]:
        names = list(collections) if collections else self.docstore.collections()
        summaries: list[DocumentSummary] = []
        for collection in names:
            self.check_collection(collection)
            summaries += self._health.summaries(collection)
        return summaries

    def delete(self, name: str, collection: str) -> int:
        """Remove every document of that name from the collection; returns how many."""
        records = self.docstore.find_by_name(collection, name)
        for record in records:
            self._ingestor.remove(collection, record.doc_id)
        return len(records)

    def close(self) -> None:
        self._ingestor.close()
        self.stores.close()


class _Lazy(Generic[T]):
    """A value built on first use, once, however many threads ask at the same time."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: T | None = None
        self._lock = threading.Lock()

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._build()
            return self._value
