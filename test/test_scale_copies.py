"""The scale benchmark's library generator: every copy renames the source's names and shifts its
years in every stored part (text, metadata lists, card, tree, document name) without moving a
character offset, perturbs every vector to a normalised neighbour, and the source documents go
in first exactly as they are."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from benchmarks.datasets.realistic_copies import CopyPlan, perturbed, renamable_words, year_offset
from benchmarks.datasets.scaled_library import SourceDocument, copies, source_words, write_batch
from citerag.nodes import chunk_node, page_vector_key
from citerag.store.base import Stores
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.sqlite_docstore import SQLiteDocStore
from citerag.types import DocumentRecord

DIM = 384
TEXTS = [
    "Netflix reported revenue of $25 billion in 2020. Reed Hastings leads Netflix.",
    "In fiscal 2021 the company grew; see NETFLIX filings for 2019.",
    "The company compares 2020 with 2019 and the 1990s. Hastings signed it.",
]


def unit_rows(rng: np.random.Generator, count: int) -> np.ndarray:
    rows = rng.standard_normal((count, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def source_document() -> SourceDocument:
    rng = np.random.default_rng(7)
    doc_id = "a" * 64
    chunks = []
    for index, text in enumerate(TEXTS):
        node = chunk_node(
            node_id=f"{doc_id[:16]}-{index:05d}",
            doc_id=doc_id,
            doc_name="NETFLIX_2020_10K.pdf",
            page=index + 1,
            chunk_index=index,
            text=text,
            start=0,
            sentences=[(0, text.index(".") + 1)],
            table_context="Netflix, Inc. Consolidated Statements of Operations 2020",
        )
        node.metadata["entities"] = ["Netflix", "Reed Hastings"]
        node.metadata["years"] = re.findall(r"(?<!\d)(?:19|20)\d\d(?![\ds])", text)
        chunks.append(node)
    sentences = {c.node_id: unit_rows(rng, 2) for c in chunks}
    sentences |= {page_vector_key(doc_id, p): unit_rows(rng, 1) for p in (1, 2, 3)}
    return SourceDocument(
        record=DocumentRecord(doc_id, "NETFLIX_2020_10K.pdf", "library", 3, "pymupdf", "ready", 0),
        chunks=chunks,
        sentences=sentences,
        vectors=unit_rows(rng, len(chunks)),
        card={"organisation": "Netflix, Inc.", "authors": ["Reed Hastings"], "fiscal_year": 2020},
        tree={"title": "Netflix 2020", "node_id": "a2020", "nodes": [{"title": "Hastings"}]},
    )


def test_only_names_written_capitalized_are_renamable() -> None:
    names = ["Netflix", "Reed Hastings", "The Company", "June 30"]
    words = renamable_words([*TEXTS, "On June 30."], names)
    assert {"netflix", "hastings", "reed"} <= words
    assert "company" not in words and "the" not in words and "june" not in words
    assert "netflix" not in renamable_words([*TEXTS, "netflix.com"], ["Netflix"])  # 1 in 4


def test_a_renamed_word_keeps_the_case_it_is_written_in() -> None:
    plan = CopyPlan.of(3, frozenset({"netflix"}))
    renamed = plan.text("Netflix")
    assert len(renamed) == 7 and renamed != "Netflix"
    assert plan.text("netflix.com NETFLIX Netflixes") == (
        f"{renamed.lower()}.com {renamed.upper()} Netflixes"
    )


def test_a_copy_renames_and_shifts_in_text_metadata_card_tree_and_name() -> None:
    source = source_document()
    copied = list(copies([source], "big", min_chunks=2 * len(TEXTS)))
    assert len(copied) == 2
    copy = copied[1]
    offset = year_offset(1)
    assert offset != 0
    for old, new in zip(source.chunks, copy.chunks, strict=True):
        assert len(new.text) == len(old.text)  # offsets stay exact
        assert "netflix" not in new.text.casefold() and "hastings" not in new.text.casefold()
        assert new.metadata["sentences"] == old.metadata["sentences"]
        assert new.metadata["years"] == [str(int(y) + offset) for y in old.metadata["years"]]
        assert "Netflix" not in new.metadata["table_context"]
        assert not {"Netflix", "Reed Hastings"} & set(new.metadata["entities"])
        assert new.node_id != old.node_id and new.metadata["doc_id"] == copy.record.doc_id
    first = copy.chunks[0].text
    renamed = first.split()[0]
    assert renamed[0].isupper() and renamed[1:].islower()
    assert f"in {2020 + offset}." in first
    assert "1990s" in copy.chunks[2].text  # decades are not years
    assert copy.chunks[1].text.count(renamed.upper()) == 1  # NETFLIX keeps its case
    assert copy.record.name == f"{renamed.upper()}_{2020 + offset}_10K.pdf"
    assert copy.card is not None and copy.card["fiscal_year"] == 2020 + offset
    assert copy.card["organisation"] == f"{renamed}, Inc."
    assert copy.tree is not None and copy.tree["node_id"] == "a2020"  # ids are references
    assert copy.tree["title"] == f"{renamed} {2020 + offset}"
    assert "Hastings" not in copy.tree["nodes"][0]["title"]


def test_each_copy_has_its_own_names_and_years() -> None:
    source = source_document()
    names = [c.record.name for c in copies([source], "big", min_chunks=5 * len(TEXTS))]
    assert len(set(names)) == 5
    offsets = [year_offset(k) for k in range(1, 60)]
    assert 0 not in offsets and max(map(abs, offsets)) == 25
    words = source_words([source])
    assert CopyPlan.of(1, words).text("Netflix") != CopyPlan.of(2, words).text("Netflix")


def test_the_source_documents_go_in_untouched() -> None:
    source = source_document()
    first = next(copies([source], "big", min_chunks=1))
    assert first.record.doc_id == source.record.doc_id
    assert first.record.name == source.record.name and first.record.collection == "big"
    assert [c.text for c in first.chunks] == TEXTS
    assert [c.metadata for c in first.chunks] == [c.metadata for c in source.chunks]
    assert first.vectors is source.vectors and first.sentences is source.sentences
    assert first.card == source.card and first.tree == source.tree


def test_copied_vectors_are_normalised_neighbours_never_duplicates() -> None:
    source = source_document()
    copy = list(copies([source], "big", min_chunks=2 * len(TEXTS)))[1]
    pairs = [(source.vectors, copy.vectors)]
    for old in source.chunks:
        new_id = copy.chunks[source.chunks.index(old)].node_id
        pairs.append((source.sentences[old.node_id], copy.sentences[new_id]))
    heads = [k for k in copy.sentences if "-page" in k]
    assert len(heads) == 3 and all(k.startswith(copy.record.doc_id[:16]) for k in heads)
    for before, after in pairs:
        assert after.shape == before.shape
        np.testing.assert_allclose(np.linalg.norm(after, axis=1), 1.0, atol=1e-5)
        cosines = np.sum(before * after, axis=1)
        assert np.all(cosines > 0.8) and np.all(cosines < 0.97)


def test_perturbation_averages_a_cosine_of_about_0_9() -> None:
    rng = np.random.default_rng(1)
    rows = unit_rows(rng, 2000) * 3.0  # any norm: the noise follows it
    moved = perturbed(rows, rng)
    cosines = np.sum(rows / 3.0 * moved, axis=1)
    assert cosines.mean() == pytest.approx(0.90, abs=0.01)
    assert np.all(perturbed(np.zeros((2, DIM), np.float32), rng) == 0)


@pytest.mark.slow  # Milvus Lite: over a second
def test_the_bulk_writer_writes_each_copy_s_page_rows(tmp_path: Path) -> None:
    stores = Stores(
        SQLiteDocStore(tmp_path / "docstore.sqlite"),
        MilvusIndex(str(tmp_path / "milvus.db")),
        BM25FilesIndex(tmp_path / "keywords"),
    )
    try:
        batch = list(copies([source_document()], "library", 9))
        write_batch(stores, "library", batch)
        pages = stores.vectors.pages
        assert pages.doc_ids("library") == {d.record.doc_id for d in batch}
        copy = batch[-1]
        head = copy.sentences[page_vector_key(copy.record.doc_id, 2)][0]
        assert pages.search("library", head, 1, None)[0][0] == page_vector_key(
            copy.record.doc_id, 2
        )
    finally:
        stores.close()
