"""The tree features on top of an `Engine`: a document's stored tree, and tree-mode answers."""

from __future__ import annotations

from typing import Any

from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.schema import QueryBundle

from citerag.answer.contract import AnswerResult
from citerag.errors import InputError
from citerag.nodes import doc_id_of, doc_name_of
from citerag.query.engine import checked_question
from citerag.tree.model import DocumentTree
from citerag.tree.pipeline import TOP_K_FILES, FileHits, run_pipeline
from citerag.tree.schema import tree_errors
from citerag.tree.search import Chat

NO_TREE = "This document has no section tree stored; ingest it again to build one."


def stored_tree(engine: Any, collection: str, name: str) -> DocumentTree:
    """The tree of the document called `name` in `collection`, or a one-sentence InputError."""
    records = [r for r in engine.docstore.find_by_name(collection, name) if r.status == "ready"]
    if not records:
        raise InputError(
            f"No document named {name!r} in collection {collection!r}; see `python main.py list`."
        )
    return load_tree(engine, collection, records[-1].doc_id)


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
    problems = tree_errors(tree.to_pageindex(with_text=True))
    if problems:
        raise InputError(f"The stored section tree is malformed ({problems[0]}); ingest again.")
    return tree


def tree_answer(
    engine: Any, question: str, collection: str, top_k_files: int = TOP_K_FILES
) -> AnswerResult:
    """Seed 003's pipeline over a collection: files ranked by the hybrid retriever's chunks."""
    question = checked_question(question)
    state = engine._non_empty_state(collection)
    retrieved = engine.factory.retriever(state).retrieve(QueryBundle(question))
    files: dict[str, FileHits] = {}
    for scored in retrieved:
        doc_id = doc_id_of(scored.node)
        hits = files.setdefault(doc_id, FileHits(doc_id, doc_name_of(scored.node), {}))
        hits.chunk_scores[scored.node.node_id] = float(scored.score or 0.0)
    factory = engine.factory
    chat = _chat(factory.answerer)
    answer = factory.answerer.answer if factory.answerer is not None else None
    return run_pipeline(
        question,
        list(files.values()),
        lambda doc_id: load_tree(engine, collection, doc_id),
        chat=chat,
        answer=answer,
        top_k_files=top_k_files,
    )


def _chat(answerer: Any) -> Chat | None:
    """The configured LLM as a plain chat function (None without an LLM)."""
    if answerer is None:
        return None

    def chat(messages: list[tuple[str, str]]) -> str:
        roles = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
        chat_messages = [ChatMessage(role=roles[r], content=c) for r, c in messages]
        response = answerer._chat(chat_messages)
        return str(response.message.content or "")

    return chat
