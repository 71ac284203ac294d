"""Keeps a process's keyword index in line with the docstore, one document at a time.

The docstore is the truth: a ready document the keyword index lacks (written through another
process, or kept in files this process does not share) gets its entries from the docstore's
chunks; a document the docstore no longer records is removed from the keyword index. Which
documents those are comes from the docstore's change record, or, on a cold open, one listing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from citerag.retrieve.page_evidence import keyword_entries
from citerag.store.base import DocStore
from citerag.store.keywords import KeywordIndex

log = logging.getLogger(__name__)


def index_from_docstore(
    docstore: DocStore, keywords: KeywordIndex, collection: str, doc_id: str
) -> None:
    """(Re)write one document's keyword entries from the chunks the docstore holds."""
    chunks = docstore.chunks_of(collection, doc_id)
    if chunks:
        keywords.add_document(collection, doc_id, keyword_entries(chunks))
    else:
        keywords.remove_document(collection, doc_id)


def sync_keywords(
    docstore: DocStore,
    keywords: KeywordIndex,
    collection: str,
    appeared: Iterable[str],
    gone: Iterable[str] | None,
) -> None:
    """Index the `appeared` documents the keyword index lacks, and drop the `gone` ones (the
    docstore no longer records them: its change record says so; removing one the index lacks
    does nothing, so the index is not asked about them). With `gone` None (a cold open), every
    indexed document the docstore does not record at all is dropped, from one listing (a
    pending one belongs to the ingest or delete under way)."""
    appeared = list(appeared)
    # A change asks the keyword index about its own documents only (on the Milvus backend a
    # whole listing reads every row of the keyword collection).
    if gone is None:
        indexed = keywords.doc_ids(collection)
    else:
        indexed = keywords.doc_ids_among(collection, appeared) if appeared else set()
    for doc_id in appeared:
        if doc_id not in indexed:
            log.info("%s: indexing %s's keywords from the docstore", collection, doc_id[:16])
            index_from_docstore(docstore, keywords, collection, doc_id)
    if gone is None:
        known = {r.doc_id for r in docstore.list_documents(collection, include_pending=True)}
        if not known:
            return  # a docstore that knows nothing of the collection may be the wrong one
        gone = indexed - known
    for doc_id in gone:
        keywords.remove_document(collection, doc_id)
