"""A document's stored section tree: read and checked, imported from PageIndex, summarized
again by the configured LLM."""

from __future__ import annotations

from pathlib import Path

from citerag.errors import InputError
from citerag.settings import Settings
from citerag.store.base import DocStore
from citerag.tree.imported import IMPORTED, ImportedTree, import_pageindex, read_pageindex_file
from citerag.tree.ingest_step import summarizer_for
from citerag.tree.model import DocumentTree
from citerag.tree.schema import tree_errors
from citerag.tree.summaries import SummaryReport
from citerag.types import DocumentRecord

NO_TREE = "This document has no section tree stored; ingest it again to build one."


def stored_tree(docstore: DocStore, collection: str, name: str) -> DocumentTree:
    """The tree of the document called `name` in `collection`, or a one-sentence InputError."""
    return load_tree(docstore, collection, _ready_record(docstore, collection, name).doc_id)


def import_tree(docstore: DocStore, collection: str, name: str, tree_file: Path) -> ImportedTree:
    """PageIndex's JSON in `tree_file`, checked against the stored document `name` (its pages,
    its chunks) and stored as its tree, which tree mode then uses."""
    data = read_pageindex_file(tree_file)
    record = _ready_record(docstore, collection, name)
    chunks = docstore.chunks_of(collection, record.doc_id)
    imported = import_pageindex(data, record.name, record.doc_id, record.pages, chunks)
    docstore.put_tree(collection, record.doc_id, imported.tree.to_record())
    return imported


def _ready_record(docstore: DocStore, collection: str, name: str) -> DocumentRecord:
    records = [r for r in docstore.find_by_name(collection, name) if r.status == "ready"]
    if not records:
        raise InputError(
            f"No document named {name!r} in collection {collection!r}; see `python main.py list`."
        )
    return records[-1]


def resummarize(
    docstore: DocStore, settings: Settings, collection: str, name: str
) -> tuple[DocumentTree, SummaryReport]:
    """Ask the configured LLM for the summaries of a stored tree (cached ones cost no call) and
    store the tree again: for a document ingested before an LLM was configured."""
    summarize = summarizer_for(settings)
    if summarize is None:
        raise InputError(
            "--summarize needs an LLM: set LLM_PROVIDER (and its model and key) in config.py "
            "or the environment, then run it again."
        )
    tree = stored_tree(docstore, collection, name)
    report = summarize(tree)
    if report.failed and not report.asked and not report.cached:
        raise InputError(
            f"The LLM wrote no summary for {name} ({report.failed} calls failed); the stored "
            "summaries are unchanged. Check the LLM settings and run it again."
        )
    docstore.put_tree(collection, tree.doc_id, tree.to_record())
    return tree, report


def load_tree(docstore: DocStore, collection: str, doc_id: str) -> DocumentTree:
    tree = find_tree(docstore, collection, doc_id)
    if tree is None:
        raise InputError(NO_TREE)
    return tree


def find_tree(docstore: DocStore, collection: str, doc_id: str) -> DocumentTree | None:
    """The document's stored tree, None when it has none, an InputError when it is malformed."""
    data = docstore.get_tree(collection, doc_id)
    if data is None:
        return None
    tree = DocumentTree.from_record(data)
    problems = tree_errors(tree.to_pageindex(with_text=True), tree.source != IMPORTED)
    if problems:
        raise InputError(f"The stored section tree is malformed ({problems[0]}); ingest again.")
    return tree
