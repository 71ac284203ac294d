"""Statement pages are found by their printed title, and a question in statement words ranks them
above prose that repeats the same words: the finance profile's words, which an article chooses
(a collection without a profile knows no statement pages)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from llama_index.core.embeddings import MockEmbedding
from llama_index.core.schema import QueryBundle

from citerag.domain import GENERIC, DomainVocabulary
from citerag.nodes import chunk_node, page_of
from citerag.retrieve.collection_state import refresh_state
from citerag.retrieve.hybrid import HybridRetriever, RetrievalSettings
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord
from extraction_schemas import FINANCIAL_VOCABULARY

has_statement_title = FINANCIAL_VOCABULARY.is_key_page


@pytest.mark.parametrize(
    "head",
    [
        "NETFLIX, INC.\n\nCONSOLIDATED STATEMENTS OF CASH FLOWS\n\n(in thousands)",
        "ITEM 8. FINANCIAL STATEMENTS AND SUPPLEMENTARY DATA\n\nINCOME STATEMENTS\n\n(In millions)",
        "BALANCE SHEETS\n\n(In millions)\n\n|June 30,|2021|2020|",
        "CASH FLOWS STATEMENTS\n(In millions)",
        "STOCKHOLDERS’ EQUITY STATEMENTS",
        "Consolidated Statement of Financial Position",
        "Consolidated Statements of Changes in Shareholders' Equity",
    ],
)
def test_statement_titles_are_recognised(head: str) -> None:
    assert has_statement_title(head + "\n|Net income|61,271|44,281|")


@pytest.mark.parametrize(
    "head",
    [
        "5.\n\nBalance Sheet Components\n\nContent Assets, Net",
        "Gains (losses) on derivative instruments recognized in our consolidated income statements",
        "INDEX TO FINANCIAL STATEMENTS\n\n|Consolidated Statements of Operations|43|",
        "Risk factors\n\nOur results may vary.\n\nMore text.\n\nEven more.\n\nBALANCE SHEETS",
        "We describe the statements of operations in Note 2 and the balance sheets in Note 3.",
    ],
)
def test_mentions_indexes_and_notes_are_not_statement_pages(head: str) -> None:
    assert not has_statement_title(head)


class NoVectors:
    """A vector index with no hits: the test looks at the keyword and page levels only."""

    def search(self, *args: object, **kwargs: object) -> list[list[tuple[str, float]]]:
        return [[]]


PROSE = (
    "Capital expenditures rose as we expanded datacenters. We expect capital expenditures "
    "for property and equipment to grow, and capital expenditures remain our priority. "
    "Property and equipment additions were discussed with the board."
)
STATEMENT = (
    "CONSOLIDATED STATEMENTS OF CASH FLOWS\n(In millions)\n"
    "|Year Ended June 30,|2021|2020|\n|---|---|---|\n|Net income|61,271|44,281|\n"
    "|Additions to property and equipment|(20,622)|(15,441)|\n"
    "|Net cash from operations|76,740|60,675|"
)
OTHER = "Our employees work in many countries. We value diversity and inclusion in our teams."


@pytest.fixture
def docstore(tmp_path: Path) -> Iterator[SQLiteDocStore]:
    store = SQLiteDocStore(tmp_path / "docstore.sqlite")
    store.put_document(DocumentRecord("d1", "filing.pdf", "c", 3, "pymupdf"))
    pages = [(1, PROSE, "text"), (2, OTHER, "text"), (3, STATEMENT, "table")]
    store.put_chunks(
        "c",
        [
            chunk_node(
                node_id=f"d1-{page}",
                doc_id="d1",
                doc_name="filing.pdf",
                page=page,
                chunk_index=page,
                text=text,
                start=0,
                block_type=kind,
            )
            for page, text, kind in pages
        ],
    )
    store.mark_ready("c", "d1")
    try:
        yield store
    finally:
        store.close()


def ranked_pages(
    docstore: SQLiteDocStore,
    tmp_path: Path,
    question: str,
    words: DomainVocabulary = FINANCIAL_VOCABULARY,
) -> list[int]:
    state = refresh_state(None, docstore, BM25FilesIndex(tmp_path / "keywords"), "c", words)
    retriever = HybridRetriever(
        NoVectors(),  # type: ignore[arg-type]
        docstore,
        state,
        MockEmbedding(embed_dim=8),
        RetrievalSettings(vocabulary=words),
    )
    return [page_of(hit.node) for hit in retriever.retrieve(QueryBundle(question))]


def test_only_the_titled_table_page_is_a_statement_page(
    docstore: SQLiteDocStore, tmp_path: Path
) -> None:
    keywords = BM25FilesIndex(tmp_path / "keywords")
    state = refresh_state(None, docstore, keywords, "c", FINANCIAL_VOCABULARY)
    statements = [state.page_key(p).page for p in state.key_pages]
    assert statements == [3]
    assert dict(refresh_state(None, docstore, keywords, "c").key_pages) == {}


def test_a_capex_question_ranks_the_cash_flow_statement_above_prose_that_repeats_it(
    docstore: SQLiteDocStore, tmp_path: Path
) -> None:
    question = "What were Microsoft's capital expenditures in fiscal 2021?"
    assert ranked_pages(docstore, tmp_path, question)[0] == 3


def test_without_statement_words_the_prose_page_stays_first(
    docstore: SQLiteDocStore, tmp_path: Path
) -> None:
    question = "Why did spending on datacenters rise?"
    assert ranked_pages(docstore, tmp_path, question)[0] == 1


def test_the_profile_is_what_ranks_the_statement_first(
    docstore: SQLiteDocStore, tmp_path: Path
) -> None:
    """With no domain profile the retriever knows no filing words: the prose that repeats the
    question's words wins; the finance profile puts the statement first."""
    question = "What were Microsoft's capital expenditures in fiscal 2021?"
    assert ranked_pages(docstore, tmp_path / "finance", question)[0] == 3
    assert ranked_pages(docstore, tmp_path / "generic", question, GENERIC)[0] == 1
