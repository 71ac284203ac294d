"""The tools' work on one engine: blocking calls that return the tools' models, or raise the
`RagError` whose one sentence the CLI prints for the same mistake.

Answers come from `Engine.answer` with the `AnswerRequest` that `main.py query` and
`POST /api/rag/query` build for the same options; search is that answer's retrieval
(`Engine.query_engine(...).retrieve`: fused ranking, rerank, highlights) without the answer
step.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from llama_index.core.schema import NodeWithScore, QueryBundle

from citerag.answer.contract import AnswerResult, SourceRecord, sources_from_nodes
from citerag.engine import check_collection_name
from citerag.errors import InputError
from citerag.mcp_server.labels import PageLabels
from citerag.mcp_server.models import Answer, Document, Documents, Page, Pages, Source, Sources
from citerag.plan.limits import checked_question, checked_top_k
from citerag.query.request import AnswerRequest
from citerag.retrieve.page_evidence import page_texts
from citerag.settings import Settings
from citerag.store.base import DocStore, parse_page_range
from citerag.types import DocumentRecord

MAX_PAGES = 20  # pages one read_pages call returns: a whole book would flood the context


class Retrieves(Protocol):
    def retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]: ...


class LibraryEngine(Protocol):
    """The part of `citerag.engine.Engine` the tools use."""

    settings: Settings
    docstore: DocStore

    def answer(self, request: AnswerRequest) -> AnswerResult: ...

    def searchable_state(self, collection: str) -> object: ...

    def query_engine(self, collection: str, top_k: int | None = None) -> Retrieves: ...


class Library:
    def __init__(self, engine: LibraryEngine, default_collection: str) -> None:
        self._engine = engine
        self._default = default_collection
        self._labels = PageLabels(engine.settings)

    def collection(self, name: str | None) -> str:
        """The collection asked (default: the server's), once it holds documents."""
        collection = check_collection_name(name or self._default)
        self._engine.searchable_state(collection)  # the CLI's sentence when it holds none
        return collection

    def request(
        self,
        question: str,
        collection: str | None,
        *,
        top_k: int | None = None,
        pages: str | None = None,
        mode: str = "hybrid",
    ) -> AnswerRequest:
        """The `answer` tool's arguments as the request `main.py query` builds for the same
        options (the collection checked to hold documents first)."""
        question = checked_question(question)
        checked_top_k(top_k)
        within = parse_page_range(pages) if pages and pages.strip() else None
        name = self.collection(collection)
        return AnswerRequest.of(question, name, mode=mode, top_k=top_k, pages=within)

    def answer(self, request: AnswerRequest) -> Answer:
        result = self._engine.answer(request).to_dict()
        return Answer(
            answer=result["answer"],
            sources=self._sources(request.collection, result["sources"]),
            metadata=dict(result["metadata"]),
        )

    def search(self, query: str, collection: str | None, top_k: int | None) -> Sources:
        query = checked_question(query)
        checked_top_k(top_k)
        name = self.collection(collection)
        nodes = self._engine.query_engine(name, top_k=top_k).retrieve(QueryBundle(query))
        records = [source.to_dict() for source in sources_from_nodes(nodes)]
        return Sources(sources=self._sources(name, records))

    def collections(self) -> list[str]:
        """The collections that hold ready documents."""
        return self._engine.docstore.collections()

    def documents(self, collection: str | None) -> Documents:
        docstore = self._engine.docstore
        names = [self.collection(collection)] if collection else docstore.collections()
        return Documents(
            documents=[
                Document(
                    collection=name,
                    name=record.name,
                    pages=record.pages,
                    docId=record.doc_id,
                    source=record.source,
                )
                for name in names
                for record in docstore.list_documents(name)
            ]
        )

    def read_pages(self, document: str, pages: str, collection: str | None) -> Pages:
        wanted = parse_page_range(pages)
        name = self.collection(collection)
        record = self._document(name, document)
        if wanted.first > record.pages:
            raise InputError(
                f"Page {wanted.first} is past the end of {record.name}, which has pages "
                f"1-{record.pages}; ask within those."
            )
        last = min(wanted.last, record.pages)
        if last - wanted.first + 1 > MAX_PAGES:
            raise InputError(
                f"Pages {wanted.first}-{last} are {last - wanted.first + 1} pages; ask for at "
                f"most {MAX_PAGES} at a time."
            )
        keys, texts = page_texts(self._engine.docstore.chunks_of(name, record.doc_id))
        text_of = {key.page: text for key, text in zip(keys, texts, strict=True)}
        labels = self._labels.of(record)
        return Pages(
            collection=name,
            document=record.name,
            pageCount=record.pages,
            pages=[
                Page(number=n, label=labels.get(n), text=text_of.get(n, ""))
                for n in range(wanted.first, last + 1)
            ],
        )

    def _document(self, collection: str, name: str) -> DocumentRecord:
        records = self._engine.docstore.find_by_name(collection, name)
        ready = [r for r in records if r.status == "ready"]
        if not ready:
            raise InputError(
                f"No document named {name!r} in collection {collection!r}; see "
                "`python main.py list` (or the list_documents tool)."
            )
        return ready[-1]

    def _sources(self, collection: str, records: Sequence[SourceRecord]) -> list[Source]:
        labels: dict[str, Mapping[int, str]] = {}
        sources = []
        for record in records:
            name = record["documentName"]
            if name not in labels:
                labels[name] = self._labels_by_name(collection, name)
            data: dict[str, Any] = {**record, "pageLabel": labels[name].get(record["pageNumber"])}
            sources.append(Source.model_validate(data))
        return sources

    def _labels_by_name(self, collection: str, name: str) -> Mapping[int, str]:
        records = self._engine.docstore.find_by_name(collection, name)
        return self._labels.of(records[-1]) if records else {}
