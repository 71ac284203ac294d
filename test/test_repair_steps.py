"""Split-brain repair reruns ingest's own steps: whatever a document lost, every kind of node it
was stored with (text, table, figure and equation chunks, figure descriptions), its page heads
and its section tree come back exactly as ingest wrote them."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from fake_openai_server import ScriptedReply, running_server
from helpers import DEMO_PDF

from citerag.embed.embedder import Embedder
from citerag.engine import Engine
from citerag.enrich.figure_descriptions import FIGURE_DESCRIPTION
from citerag.ingest.pipeline import STAGES, STEP_TYPES, Ingestor, ingest_key
from citerag.ingest.steps import document_key
from citerag.nodes import page_vector_prefix
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.store.sqlite_docstore import SQLiteDocStore

DESCRIPTION = "A table of parsers with their fidelity, the headings found and the pages read."


@dataclass
class Stored:
    settings: Settings
    collection: str
    doc_id: str
    chunks: dict[str, dict[str, Any]]  # chunk id -> TextNode.to_dict(), as ingest wrote them
    vectors: dict[str, np.ndarray]  # sentence vectors and page heads
    tree: dict[str, Any] | None


def _reply(body: dict[str, Any]) -> ScriptedReply:
    """Figures get a description; every other LLM call (cards, tree summaries) gets nothing."""
    described = isinstance(body["messages"][-1]["content"], list)
    return ScriptedReply(DESCRIPTION if described else "")


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


@pytest.fixture
def stored(tmp_path: Path, embedder: Embedder) -> Iterator[Stored]:
    """The demo PDF ingested in small chunks, its figure described by a (scripted) vision model."""
    with running_server(respond=_reply) as server:
        settings = Settings(
            storage_dir=tmp_path / "storage",
            chunk_size=96,
            chunk_overlap=16,
            llm_provider="openai_like",
            llm_model="text-model",
            llm_base_url=server.base_url,
            vision_model="vision-model",
        )
        collection = f"rs_{uuid.uuid4().hex[:8]}"
        engine = Engine(settings, embedder=embedder)
        try:
            doc_id = engine.ingest(DEMO_PDF, collection).doc_id
            chunks = {c.node_id: c.to_dict() for c in engine.docstore.chunks_of(collection, doc_id)}
            keys = [*chunks, *(f"{page_vector_prefix(doc_id)}{page:05d}" for page in (1, 2, 3))]
            vectors = engine.docstore.get_sentence_vectors(collection, keys)
            tree = engine.docstore.get_tree(collection, doc_id)
        finally:
            engine.close()
        yield Stored(settings, collection, doc_id, chunks, vectors, tree)


def _kinds(stored: Stored) -> dict[str, str]:
    """Each stored chunk's kind (its block type) by id."""
    return {i: chunk["metadata"]["block_type"] for i, chunk in stored.chunks.items()}


def _drop_rows(stored: Stored, embedder: Embedder) -> None:
    engine = Engine(stored.settings, embedder=embedder)
    engine.vectors.delete_document(stored.collection, stored.doc_id)
    engine.close()


def _delete_from_docstore(stored: Stored, sql: str, rows: list[tuple[str, ...]]) -> None:
    docstore = SQLiteDocStore(stored.settings.storage.sqlite_path)
    with docstore._transaction() as conn:
        conn.executemany(sql, rows)
    docstore.close()


def _assert_whole_again(stored: Stored, embedder: Embedder) -> str:
    """Reopen the engine (which repairs the collection) and compare with what ingest wrote."""
    engine = Engine(stored.settings, embedder=embedder)
    try:
        repairs = engine.check_collection(stored.collection)
        collection, doc_id = stored.collection, stored.doc_id
        restored = {c.node_id: c.to_dict() for c in engine.docstore.chunks_of(collection, doc_id)}
        assert restored == stored.chunks
        assert engine.vectors.ids_of(collection, doc_id) == sorted(stored.chunks)
        vectors = engine.docstore.get_sentence_vectors(collection, list(stored.vectors))
        assert vectors.keys() == stored.vectors.keys()
        for key, matrix in stored.vectors.items():
            np.testing.assert_allclose(vectors[key], matrix, atol=2e-3)
        assert engine.docstore.get_tree(collection, doc_id) == stored.tree
        assert engine.stores.is_whole(collection, doc_id)
        assert engine.check_collection(collection, force=True) == []  # nothing left to repair
    finally:
        engine.close()
    return "; ".join(action for repair in repairs for action in repair.actions)


@pytest.mark.slow
def test_every_kind_of_node_comes_back_after_its_milvus_rows_are_lost(
    stored: Stored, embedder: Embedder
) -> None:
    kinds = set(_kinds(stored).values())
    assert {"text", "table", "figure", "equation", FIGURE_DESCRIPTION} <= kinds
    _drop_rows(stored, embedder)
    done = _assert_whole_again(stored, embedder)
    assert f"restored {len(stored.chunks)} Milvus rows from the docstore" in done
    assert "deleted" not in done and "embedded" not in done  # nothing recomputed but the rows


@pytest.mark.slow
def test_repair_rebuilds_from_the_parse_cache_what_ingest_wrote(
    stored: Stored, embedder: Embedder
) -> None:
    """Every chunk read from the PDF loses its docstore text, and every row goes: the steps rerun
    from the parse cache make the same nodes, ids, metadata and section links as ingest, and
    the figure descriptions (which need the PDF) are kept from the docstore."""
    from_pdf = [i for i, kind in _kinds(stored).items() if kind != FIGURE_DESCRIPTION]
    sql = "DELETE FROM chunks WHERE collection = ? AND id = ?"
    _delete_from_docstore(stored, sql, [(stored.collection, i) for i in from_pdf])
    _drop_rows(stored, embedder)
    done = _assert_whole_again(stored, embedder)
    assert f"restored {len(from_pdf)} docstore chunks from the parse cache" in done


@pytest.mark.slow
def test_without_a_parse_cache_the_docstore_chunks_rebuild_the_rows(
    stored: Stored, embedder: Embedder
) -> None:
    """The embed and store steps run on the docstore's chunks, figure descriptions included."""
    for cached in stored.settings.storage.parse_cache_dir.glob("*.json"):
        cached.unlink()
    _drop_rows(stored, embedder)
    done = _assert_whole_again(stored, embedder)
    assert f"restored {len(stored.chunks)} Milvus rows from the docstore" in done


@pytest.mark.slow
def test_a_lost_docstore_comes_back_but_for_figure_descriptions_which_are_reported_lost(
    stored: Stored, embedder: Embedder, caplog: pytest.LogCaptureFixture
) -> None:
    """Describing a figure needs the PDF, which repair does not have: with the docstore's copy
    gone, its row goes too and the log says so at error level; the rest comes back whole."""
    for table in ("documents", "chunks", "cards"):
        sql = f"DELETE FROM {table} WHERE collection = ? AND doc_id = ?"
        _delete_from_docstore(stored, sql, [(stored.collection, stored.doc_id)])
    figures = {i for i, kind in _kinds(stored).items() if kind == FIGURE_DESCRIPTION}
    kept = {i: c for i, c in stored.chunks.items() if i not in figures}
    engine = Engine(stored.settings, embedder=embedder)
    try:
        with caplog.at_level(logging.WARNING, logger="citerag.ingest.repair"):
            [repair] = engine.check_collection(stored.collection)
        restored = engine.docstore.chunks_of(stored.collection, stored.doc_id)
        # The same chunks and texts; entities read across the document may differ without
        # the description's text among them.
        assert {c.node_id: c.text for c in restored} == {i: c["text"] for i, c in kept.items()}
        assert engine.vectors.ids_of(stored.collection, stored.doc_id) == sorted(kept)
        assert engine.stores.is_whole(stored.collection, stored.doc_id)
    finally:
        engine.close()
    assert repair.lost and f"lost {len(figures)} figure descriptions" in caplog.text
    assert any(r.levelno == logging.ERROR for r in caplog.records)
    assert "restored the document record" in repair.actions


def test_the_document_key_is_the_hash_of_the_declared_steps_fingerprints(tmp_path: Path) -> None:
    settings = Settings(storage_dir=tmp_path, vision_model="v", llm_provider="openai")
    stores = Stores(None, None, None)  # type: ignore[arg-type]  # built, never run
    steps = Ingestor(settings, stores, Embedder()).steps
    assert tuple(type(step) for step in steps.steps) == STEP_TYPES
    assert steps.names == STAGES
    assert STAGES == ("parse", "chunk", "describe", "enrich", "tree", "embed", "store")
    sha = "ab" * 32
    assert steps.key(sha) == ingest_key(sha, settings)
    fingerprints = [step.fingerprint(settings) for step in STEP_TYPES]
    assert steps.key(sha) == document_key(sha, fingerprints)
    assert ingest_key(sha, settings.with_overrides(vision_model="w")) != steps.key(sha)
    with pytest.raises(ValueError, match="chunk_size"):
        document_key(sha, [{"chunk_size": 1}, {"chunk_size": 2}])
