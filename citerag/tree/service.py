"""The tree features on top of an `Engine`: a document's stored tree, and tree-mode answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from llama_index.core.schema import QueryBundle

from citerag.answer.contract import AnswerResult
from citerag.answer.number_check import with_number_check
from citerag.errors import InputError
from citerag.nodes import doc_id_of, doc_name_of, page_of
from citerag.query.engine import checked_question
from citerag.tree.imported import IMPORTED, ImportedTree, import_pageindex, read_pageindex_file
from citerag.tree.ingest import summarizer_for
from citerag.tree.model import DocumentTree
from citerag.tree.pipeline import TOP_K_FILES, FileHits, run_pipeline
from citerag.tree.schema import tree_errors
from citerag.tree.summaries import SummaryReport

NO_TREE = "This document has no section tree stored; ingest it again to build one."


def stored_tree(engine: Any, collection: str, name: str) -> DocumentTree:
    """The tree of the document called `name` in `collection`, or a one-sentence InputError."""
    return load_tree(engine, collection, _ready_record(engine, collection, name).doc_id)


def import_tree(engine: Any, collection: str, name: str, tree_file: Path) -> ImportedTree:
    """PageIndex's JSON in `tree_file`, checked against the stored document `name` (its pages,
    its chunks) and stored as its tree, which tree mode then uses."""
    data = read_pageindex_file(tree_file)
    record = _ready_record(engine, collection, name)
    chunks = engine.docstore.chunks_of(collection, record.doc_id)
    imported = import_pageindex(data, record.name, record.doc_id, record.pages, chunks)
    engine.docstore.put_tree(collection, record.doc_id, imported.tree.to_record())
    return imported


def _ready_record(engine: Any, collection: str, name: str) -> Any:
    records = [r for r in engine.docstore.find_by_name(collection, name) if r.status == "ready"]
    if not records:
        raise InputError(
            f"No document named {name!r} in collection {collection!r}; see `python main.py list`."
        )
    return records[-1]


def resummarize(engine: Any, collection: str, name: str) -> tuple[DocumentTree, SummaryReport]:
    """Ask the configured LLM for the summaries of a stored tree (cached ones cost no call) and
    store the tree again: for a document ingested before an LLM was configured."""
    summarize = summarizer_for(engine.settings)
    if summarize is None:
        raise InputError(
            "--summarize needs an LLM: set LLM_PROVIDER (and its model and key) in config.py "
            "or the environment, then run it again."
        )
    tree = stored_tree(engine, collection, name)
    report = summarize(tree)
    if report.failed and not report.asked and not report.cached:
        raise InputError(
            f"The LLM wrote no summary for {name} ({report.failed} calls failed); the stored "
            "summaries are unchanged. Check the LLM settings and run it again."
        )
    engine.docstore.put_tree(collection, tree.doc_id, tree.to_record())
    return tree, report


def load_tree(engine: Any, collection: str, doc_id: str) -> DocumentTree:
    tree = find_tree(engine, collection, doc_id)
    if tree is None:
        raise InputError(NO_TREE)
    return tree


def find_tree(engine: Any, collection: str, doc_id: str) -> DocumentTree | None:
    """The document's stored tree, None when it has none, an InputError when it is malformed."""
    data = engine.docstore.get_tree(collection, doc_id)
    if data is None:
        return None
    tree = DocumentTree.from_record(data)
    problems = tree_errors(tree.to_pageindex(with_text=True), tree.source != IMPORTED)
    if problems:
        raise InputError(f"The stored section tree is malformed ({problems[0]}); ingest again.")
    return tree


def tree_answer(
    engine: Any, question: str, collection: str, top_k_files: int = TOP_K_FILES
) -> AnswerResult:
    """Seed 003's pipeline over a collection: files ranked by the hybrid retriever's chunks."""
    question = checked_question(question)
    state = engine.searchable_state(collection)
    factory = engine.factory
    answerer = factory.answerer
    chat = _CountingChat(answerer) if answerer is not None else None
    answer = answerer.answer if answerer is not None else None
    result = run_pipeline(
        question,
        file_hits(engine, state, question),
        lambda doc_id: load_tree(engine, collection, doc_id),
        chat=chat,
        answer=answer,
        top_k_files=top_k_files,
    )
    if chat is not None:  # the node selections' tokens count too, not only the answer's
        result.metadata.tokens_used += chat.tokens
    return with_number_check(question, result)


class _CountingChat:
    """The answerer's chat, adding up the tokens its replies report."""

    def __init__(self, answerer: Any) -> None:
        self._answerer = answerer
        self.tokens = 0

    def __call__(self, messages: list[tuple[str, str]]) -> str:
        text, tokens = self._answerer.chat_with_usage(messages)
        self.tokens += int(tokens)
        return str(text)


def file_hits(engine: Any, state: Any, question: str) -> list[FileHits]:
    """Each file's fused chunk scores; a file is relevant when one of its chunks shares a
    term with the question (a keyword hit), not only a nearest neighbour by meaning."""
    ranking = engine.factory.retriever(state).rank(QueryBundle(question))
    keyword_hits = set(ranking.keyword)
    scores = dict(ranking.fused)
    files: dict[str, FileHits] = {}
    for chunk in engine.docstore.get_chunks(state.name, list(scores)):
        doc_id = doc_id_of(chunk)
        hits = files.setdefault(doc_id, FileHits(doc_id, doc_name_of(chunk), {}, relevant=False))
        hits.chunk_scores[chunk.node_id] = float(scores[chunk.node_id])
        hits.chunk_pages[chunk.node_id] = page_of(chunk)
        hits.relevant = hits.relevant or chunk.node_id in keyword_hits
    return list(files.values())
