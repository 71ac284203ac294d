"""Split-brain detection and repair: Milvus and the docstore must agree chunk for chunk.

A collection is checked when the engine first opens it. The cheap check compares totals (rows in
Milvus, chunks in the docstore, both without documents still being ingested) and looks for
chunks or rows of documents that have no record. When anything is off, each document is compared
and repaired from the side that survived:

- rows missing in Milvus: rebuilt from the docstore's sentence vectors (only table contexts are
  embedded again); rows of chunks the document no longer has are deleted;
- chunks or the record missing in the docstore: the ingest steps run again from the parse cache
  (the same chunks, ids and offsets, enriched again, figure descriptions kept from the
  docstore), relinked to its stored section tree, and only the lost chunks' sentences are
  embedded; the store step writes only what the stores lack;
- page rows missing in Milvus (a collection made before its page collection, a crash between
  writes): written from the docstore's page head vectors (`page_rows.restore_page_rows`);
- a document nothing can restore (Milvus rows alone, no parse cache): its rows are removed and
  the log says to ingest it again.

Documents still `pending` are left alone: their ingest (or a re-run of it) owns them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from citerag.ingest.page_rows import restore_page_rows
from citerag.ingest.steps import DocumentRun, IngestSteps, MissingParse, StoredDocument
from citerag.nodes import doc_name_of
from citerag.parse.cache import cached_entries
from citerag.retrieve.keyword_sync import index_from_docstore
from citerag.settings import Settings
from citerag.store.base import Stores

log = logging.getLogger(__name__)
CUT_SHORT = "left by a delete that was cut short"


@dataclass
class Repair:
    """What was done to one document."""

    name: str
    doc_id: str
    actions: list[str]

    @property
    def lost(self) -> bool:
        return any(action.startswith("lost") for action in self.actions)


class SplitBrainRepairer:
    """Repairs a document by rerunning `steps` (the ingestor's own) on what survived."""

    def __init__(self, settings: Settings, stores: Stores, steps: IngestSteps) -> None:
        self._settings = settings
        self._stores = stores
        self._docstore = stores.docstore
        self._vectors = stores.vectors
        self._keywords = stores.keywords
        self._steps = steps

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
        restore_page_rows(self._stores, collection)
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
        stored = StoredDocument.load(self._stores, collection, doc_id)
        in_milvus = stored.row_ids
        if stored.record is None and not in_milvus and stored.chunks:
            self._docstore.delete_document(collection, doc_id)
            return Repair(
                doc_name_of(stored.chunks[0]),
                doc_id,
                [f"removed {len(stored.chunks)} docstore chunks {CUT_SHORT}"],
            )
        run = self._rerun(collection, doc_id, stored)
        if run is not None:
            return Repair(run.name, doc_id, run.actions)
        return self._from_stored_chunks(collection, stored, keep_rows)

    def _from_stored_chunks(
        self, collection: str, stored: StoredDocument, keep_rows: bool
    ) -> Repair:
        """With no parse to rerun the steps from, the docstore's chunks are all there is: they
        are embedded and stored again where lost; rows of no stored chunk go."""
        doc_id, in_milvus = stored.doc_id, stored.row_ids
        name = doc_name_of(stored.chunks[0]) if stored.chunks else doc_id
        repair = Repair(name, doc_id, [])
        if not stored.chunks and keep_rows:
            repair.actions.append(
                f"lost its text: {len(in_milvus)} Milvus rows, but this docstore holds nothing of "
                "the collection and no parse cache rebuilds it; the rows are kept (search skips "
                "them): check that MONGODB_URI / RAG_STORAGE_DIR are the ones they were ingested "
                "with, or ingest the file again"
            )
            return repair
        if not stored.chunks:
            if in_milvus or stored.record is not None:
                self._vectors.delete_document(collection, doc_id)
                self._docstore.delete_document(collection, doc_id)
                repair.actions.append(
                    f"lost its text ({len(in_milvus)} Milvus rows, no docstore chunks and no "
                    "parse cache): removed; ingest it again"
                )
            return repair
        lost = len(in_milvus - {c.node_id for c in stored.chunks})
        if lost:
            repair.actions.append(
                f"lost {lost} chunks whose text is gone (no parse cache): their Milvus rows are "
                "removed; ingest the file again to get them back"
            )
        chunks = list(stored.chunks)
        run = DocumentRun(collection, name, "", doc_id, stored=stored, chunks=chunks)
        run.actions = repair.actions
        self._steps.run(run, start="embed")
        return repair

    def _rerun(self, collection: str, doc_id: str, stored: StoredDocument) -> DocumentRun | None:
        """Every step again from the document's cached parse; None when there is none."""
        sha256 = self._cached_file(doc_id)
        if sha256 is None:
            return None
        run = DocumentRun(collection, doc_id, sha256, doc_id, stored=stored)
        try:
            self._steps.run(run)
        except MissingParse:
            return None
        run.name = run.document.name
        return run

    def _cached_file(self, doc_id: str) -> str | None:
        """The hash of the file whose cached parse is this document (the parse step picks
        which of its cached parses to read)."""
        folder = self._settings.storage.parse_cache_dir
        if not folder.is_dir():
            return None
        hashes = dict.fromkeys(sha256 for sha256, _, _ in cached_entries(folder))
        return next((sha256 for sha256 in hashes if self._steps.key(sha256) == doc_id), None)
