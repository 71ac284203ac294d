"""A fake engine for the HTTP layer's tests: canned answers, recorded calls, no models."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf
from fastapi.testclient import TestClient

from citerag.answer.contract import AnswerMetadata, AnswerResult, Source
from citerag.engine import DocumentSummary
from citerag.ingest.pipeline import IngestOutcome, Progress
from citerag.parse.validate import inspect_pdf
from citerag.query.modes import answer_by_mode
from citerag.query.request import AnswerRequest
from citerag.serve import create_app
from citerag.settings import Settings
from citerag.store.base import PageRange
from citerag.tree.model import DocumentTree, TreeNode
from citerag.types import DocumentRecord, Highlight

KEY = "s3cret"
ANSWER = "Retrieval fuses BM25 and vectors [1]. Pages come second [2]."


def text_pdf(path: Path, text: str = "Hybrid retrieval fuses BM25 and vectors.") -> Path:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), text)
    doc.save(path)
    return path


def small_tree(name: str) -> DocumentTree:
    """A two-level section tree, as ingest stores it (doc_id is the name in these fakes)."""
    child = TreeNode("0001", "Scoring", 2, 2, level=2, text="Scores are fused.")
    root = TreeNode("0000", "Method", 1, 2, text="How retrieval works.", nodes=[child])
    return DocumentTree(name, name, [root])


@dataclass
class FakeDocStore:
    documents: dict[str, list[str]]
    trees: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def get_tree(self, collection: str, doc_id: str) -> dict[str, Any] | None:
        return self.trees.get((collection, doc_id))

    def collections(self) -> list[str]:
        return sorted(self.documents)

    def find_by_name(self, collection: str, name: str) -> list[DocumentRecord]:
        names = self.documents.get(collection, [])
        return [DocumentRecord(name, name, collection, 1, "pymupdf", "ready")] * names.count(name)


@dataclass
class FakeEngine:
    settings: Settings
    docstore: FakeDocStore = field(default_factory=lambda: FakeDocStore({"demo": ["a.pdf"]}))
    ingested: list[tuple[str, str]] = field(default_factory=list)
    asked: list[tuple[str, str, int | None, PageRange | None]] = field(default_factory=list)
    plans: list[bool] = field(default_factory=list)
    wheres: list[Any] = field(default_factory=list)  # each question's card conditions
    sub_questions: list[dict[str, Any]] = field(default_factory=list)
    failure: Exception | None = None
    model: str = "extractive"
    tokens: int = 0
    unsupported_numbers: list[dict[str, object]] = field(default_factory=list)
    tree_asked: list[tuple[str, str, int]] = field(default_factory=list)
    answerer: Any = None  # no LLM: conversations condense offline
    requests: list[AnswerRequest] = field(default_factory=list)  # as `Engine.answer` got them

    def answer(self, request: AnswerRequest) -> AnswerResult:
        """The engine's one entry: the request recorded, then the modes' own dispatch (and
        condensing) over the canned steps below."""
        self.requests.append(request)
        return answer_by_mode(self, request)

    def searchable_state(self, collection: str) -> object:
        return self.docstore.documents[collection]

    def sections_answer(self, request: AnswerRequest) -> AnswerResult:
        self.tree_asked.append((request.question, request.collection, request.top_k_files))
        return AnswerResult("From the sections [1].", [], AnswerMetadata(retrieval_method="tree"))

    def retrieval_answer(self, request: AnswerRequest) -> AnswerResult:
        self.asked.append((request.question, request.collection, request.top_k, request.pages))
        self.plans.append(request.plan)
        self.wheres.append(dict(request.where) or None)
        if self.failure is not None:
            raise self.failure
        content = "Retrieval fuses BM25 and vectors. Pages come second."
        sources = [
            Source("n1", "a.pdf", 1, "Intro", content, 0.9, 1, [Highlight(content[:33], 0, 33)]),
            Source("n2", "a.pdf", 2, "Pages", content, 0.5, 2, []),
        ]
        metadata = AnswerMetadata(
            model=self.model,
            tokens_used=self.tokens,
            sub_questions=list(self.sub_questions) if request.plan else [],
            unsupported_numbers=list(self.unsupported_numbers),
        )
        return AnswerResult(ANSWER, sources, metadata)

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        info = inspect_pdf(path)
        if progress:
            progress("parse")
        self.ingested.append((collection, path.name))
        self.docstore.documents.setdefault(collection, []).append(path.name)
        return IngestOutcome(path.name, "id", "ingested", info.page_count, 1, 0.01)

    def list_documents(self, collections: Sequence[str] | None = None) -> list[DocumentSummary]:
        names = collections or self.docstore.collections()
        return [
            DocumentSummary(c, n, n, 1, "pymupdf", 1, 1)
            for c in names
            for n in self.docstore.documents.get(c, [])
        ]

    def delete(self, name: str, collection: str) -> int:
        before = self.docstore.documents.get(collection, [])
        self.docstore.documents[collection] = [n for n in before if n != name]
        return len(before) - len(self.docstore.documents[collection])


def make_client(tmp_path: Path, **settings: Any) -> tuple[TestClient, FakeEngine]:
    engine = FakeEngine(Settings(storage_dir=tmp_path / "storage", **settings))
    return TestClient(create_app(engine)), engine
