"""Split-brain detection and repair: Milvus and the docstore must agree chunk for chunk.

A collection is checked when the engine first opens it. The cheap check compares totals (rows in
Milvus, chunks in the docstore, both without documents still being ingested) and looks for
chunks or rows of documents that have no record. When anything is off, each document is compared
and repaired from the side that survived:

- rows missing in Milvus: rebuilt from the docstore's sentence vectors (only table contexts are
  embedded again); rows of chunks the document no longer has are deleted;
- chunks or the record missing in the docstore: the document is parsed again from the parse
  cache (the same chunks, ids and offsets, enriched again), relinked to its stored section tree,
  and only the lost chunks' sentences are embedded;
- a document nothing can restore (Milvus rows alone, no parse cache): its rows are removed and
  the log says to ingest it again.

Documents still `pending` are left alone: their ingest (or a re-run of it) owns them.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from llama_index.core.schema import TextNode

from citerag.chunk.chunker import chunk_document
from citerag.embed.embedder import Embedder
from citerag.enrich.cards import PAGES_READ, read_card
from citerag.enrich.step import Enricher
from citerag.ingest.vectors import chunk_vectors, page_head_vectors, sentence_vectors, vector_rows
from citerag.ingest.writer import DocumentWriter
from citerag.nodes import doc_id_of, doc_name_of, page_of, page_vector_key
from citerag.parse.cache import cached_entries, load_cached
from citerag.retrieve.keyword_sync import index_from_docstore
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.tree.build import point_chunk_to_node
from citerag.tree.model import DocumentTree
from citerag.types import DocumentRecord, ParsedDocument

log = logging.getLogger(__name__)
KeyOf = Callable[[str, Settings], str]


@dataclass
class Repair:
    """What was done to one document."""

    name: str
    doc_id: str
    actions: list[str]

    @property
    def lost(self) -> bool:
        return any(action.startswith("lost") for action in self.actions)


class SplitBrainRepairer(DocumentWriter):
    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        embedder: Embedder,
        ingest_key: KeyOf,
        enricher: Enricher | None = None,
    ) -> None:
        super().__init__(settings, stores, embedder, enricher)
        self._ingest_key = ingest_key

    def check(self, collection: str) -> list[Repair]:
        """Repair where Milvus and the docstore disagree; returns what was done, per document."""
        suspects = self._suspects(collection)
        # A docstore that knows nothing of the collection is more likely the wrong one (another
        # MONGODB_URI or storage folder) than a loss: then rows it cannot rebuild are kept.
        foreign = not self._docstore.list_documents(collection, include_pending=True) and not (
            self._docstore.chunk_stats(collection)
        )
        repairs = [self.repair_document(collection, d, keep_rows=foreign) for d in suspects]
        repairs = [r for r in repairs if r.actions]
        for repair in repairs:
            level = logging.ERROR if repair.lost else logging.WARNING
            log.log(
                level,
                "split-brain in collection %r, %s: %s",
                collection,
                repair.name,
                "; ".join(repair.actions),
            )
        for repair in repairs:  # only the repaired documents' keyword entries are written again
            index_from_docstore(self._docstore, self._keywords, collection, repair.doc_id)
        return repairs

    def _suspects(self, collection: str) -> list[str]:
        """Documents to repair. Totals first: when they agree, every record has chunks and no
        document has a hole in its chunk indexes, nothing is compared one by one."""
        records = self._docstore.list_documents(collection, include_pending=True)
        pending = {r.doc_id for r in records if r.status != "ready"}
        ready = {r.doc_id for r in records} - pending
        stats = self._docstore.chunk_stats(collection)
        holes = {d for d, (count, top) in stats.items() if count != top + 1} - pending
        without_record = set(stats) - ready - pending
        has_vectors = self._vectors.has_collection(collection)
        in_docstore = sum(count for d, (count, _) in stats.items() if d not in pending)
        in_milvus = 0
        if has_vectors:
            in_milvus = self._vectors.count(collection) - sum(
                self._vectors.count(collection, d) for d in pending
            )
        empty = {d for d in ready if d not in stats}
        if not (without_record or holes or empty) and in_docstore == in_milvus:
            return []
        known = sorted(ready | pending | set(stats))
        unknown = set(self._vectors.doc_ids_except(collection, known)) if has_vectors else set()
        agreeing = {
            d
            for d in ready - holes - empty
            if has_vectors and self._vectors.count(collection, d) == stats[d][0]
        }
        return sorted((ready | without_record | unknown) - pending - agreeing)

    def repair_document(self, collection: str, doc_id: str, keep_rows: bool = False) -> Repair:
        stored = self._docstore.chunks_of(collection, doc_id)
        in_milvus = set(self._vectors.ids_of(collection, doc_id))
        parsed, full = self._rebuilt_chunks(collection, doc_id)
        name = parsed.name if parsed else (doc_name_of(stored[0]) if stored else doc_id)
        repair = Repair(name, doc_id, [])
        if full is None:
            full = stored
        record = self._docstore.get_document(collection, doc_id)
        if record is None and not in_milvus and stored:
            self._docstore.delete_document(collection, doc_id)
            repair.actions.append(
                f"removed {len(stored)} docstore chunks left by a delete that was cut short"
            )
            return repair
        if not full and keep_rows:
            repair.actions.append(
                f"lost its text: {len(in_milvus)} Milvus rows, but this docstore holds nothing of "
                "the collection and no parse cache rebuilds it; the rows are kept (search skips "
                "them): check that MONGODB_URI / RAG_STORAGE_DIR are the ones they were ingested "
                "with, or ingest the file again"
            )
            return repair
        if not full:
            if in_milvus or record is not None:
                self._vectors.delete_document(collection, doc_id)
                self._docstore.delete_document(collection, doc_id)
                repair.actions.append(
                    f"lost its text ({len(in_milvus)} Milvus rows, no docstore chunks and no "
                    "parse cache): removed; ingest it again"
                )
            return repair
        if parsed is None and in_milvus - {c.node_id for c in full}:
            lost = len(in_milvus - {c.node_id for c in full})
            repair.actions.append(
                f"lost {lost} chunks whose text is gone (no parse cache): their Milvus rows are "
                "removed; ingest the file again to get them back"
            )
        self._restore_docstore(collection, record, stored, full, parsed, repair)
        self._restore_milvus(collection, in_milvus, full, repair)
        return repair

    def _rebuilt_chunks(
        self, collection: str, doc_id: str
    ) -> tuple[ParsedDocument | None, list[TextNode] | None]:
        """The document's chunks made again from the parse cache, linked to its stored tree."""
        parsed = self._cached_parse(doc_id)
        if parsed is None:
            return None, None
        settings = self._settings
        chunks = chunk_document(parsed, settings.ingest.chunk_size, settings.ingest.chunk_overlap)
        self._enricher.enrich(chunks)  # the same metadata ingest gave them
        tree = self._docstore.get_tree(collection, doc_id)
        if tree is not None:
            relink_to_tree(DocumentTree.from_record(tree), chunks)
        else:
            log.warning(
                "%s: its section tree is lost too (building one needs the PDF): its chunks come "
                "back without section links; ingest the file again for `tree` mode",
                parsed.name,
            )
        return parsed, chunks

    def _cached_parse(self, doc_id: str) -> ParsedDocument | None:
        folder = self._settings.storage.parse_cache_dir
        if not folder.is_dir():
            return None
        for sha256, parser, tier in cached_entries(folder):
            if self._ingest_key(sha256, self._settings) != doc_id:
                continue
            parsed = load_cached(folder, sha256, parser, tier)
            if parsed is not None:
                return replace(parsed, doc_id=doc_id)
        return None

    def _restore_docstore(
        self,
        collection: str,
        record: DocumentRecord | None,
        stored: Sequence[TextNode],
        full: Sequence[TextNode],
        parsed: ParsedDocument | None,
        repair: Repair,
    ) -> None:
        have = {c.node_id for c in stored}
        missing = [c for c in full if c.node_id not in have]
        if missing:
            self._docstore.put_chunks(collection, missing)
            repair.actions.append(f"restored {len(missing)} docstore chunks from the parse cache")
        ids = [c.node_id for c in full]
        with_vectors = set(self._docstore.get_sentence_vectors(collection, ids))
        unembedded = [c for c in full if c.node_id not in with_vectors]
        if unembedded:
            self._docstore.put_sentence_vectors(
                collection,
                sentence_vectors(
                    self._embedder, unembedded, self._settings.embedding.sentence_vectors
                ),
            )
            repair.actions.append(f"embedded the sentences of {len(unembedded)} chunks again")
        if parsed is not None:
            self._restore_page_heads(collection, parsed, repair)
        if record is None:
            restored = _record(collection, full, parsed, self._settings)
            self._docstore.put_document(restored)
            repair.actions.append("restored the document record")
            if parsed is not None:  # the card went with the record; the PDF may be gone
                pages = [page.text for page in parsed.pages[:PAGES_READ]]
                card = read_card(restored.name, pages)
                self._docstore.put_card(collection, restored.doc_id, card.to_dict())

    def _restore_page_heads(self, collection: str, parsed: ParsedDocument, repair: Repair) -> None:
        heads = page_head_vectors_keys(parsed)
        if len(self._docstore.get_sentence_vectors(collection, heads)) == len(heads):
            return
        self._docstore.put_sentence_vectors(
            collection,
            page_head_vectors(self._embedder, parsed, self._settings.embedding.sentence_vectors),
        )
        repair.actions.append("embedded the page heads again")

    def _restore_milvus(
        self, collection: str, in_milvus: set[str], full: Sequence[TextNode], repair: Repair
    ) -> None:
        expected = {c.node_id for c in full}
        orphans = sorted(in_milvus - expected)
        if orphans:
            self._vectors.delete_ids(collection, orphans)
            repair.actions.append(f"deleted {len(orphans)} Milvus rows of no chunk")
        missing = [c for c in full if c.node_id not in in_milvus]
        if not missing:
            return
        sentences = self._docstore.get_sentence_vectors(collection, [c.node_id for c in missing])
        vectors = chunk_vectors(self._embedder, missing, sentences)
        self._vectors.ensure_collection(collection, int(vectors.shape[1]))
        self._vectors.insert(collection, vector_rows(missing, vectors))
        repair.actions.append(f"restored {len(missing)} Milvus rows from the docstore")


def page_head_vectors_keys(parsed: ParsedDocument) -> list[str]:
    return [page_vector_key(parsed.doc_id, p.number) for p in parsed.pages if p.text.strip()]


def relink_to_tree(tree: DocumentTree, chunks: Sequence[TextNode]) -> None:
    """Give chunks rebuilt from a parse the section links that ingest gave them."""
    by_id = {c.node_id: c for c in chunks}
    for node in tree.walk():
        for chunk_id in node.chunk_ids:
            chunk = by_id.get(chunk_id)
            if chunk is not None:
                point_chunk_to_node(tree, node, chunk)


def _record(
    collection: str, chunks: Sequence[TextNode], parsed: ParsedDocument | None, settings: Settings
) -> DocumentRecord:
    first = chunks[0]
    return DocumentRecord(
        doc_id=doc_id_of(first),
        name=parsed.name if parsed else doc_name_of(first),
        collection=collection,
        pages=len(parsed.pages) if parsed else max(page_of(c) for c in chunks),
        parser=parsed.parser if parsed else settings.parse.parser,
        status="ready",
        created_at=time.time(),
    )
