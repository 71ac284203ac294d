"""A document's retrieval state as the docstore keeps it, so a new process opens a collection
without reading every chunk.

Loading a document's state reads every chunk's metadata and, for each page holding a table,
its first chunk's text to find the domain's key pages: at 100k chunks (2,843 documents) that was
16 s of a serving process's cold open, 7 of them the key pages. What it derives depends only on
the document's stored chunks (one version of them: the record's `created_at`), the domain
vocabulary's key page titles and this module's format, so it is kept in the docstore
(`DocStore.put_doc_states`) under those, written by the first process that loads the document
and read by every later one, its places' columns as packed integers (`DocPlaces.parts`: no
Python object per chunk is made to read them). Writing any chunk of a document drops its kept
state (a repair that restores lost chunks keeps the record's `created_at`). A kept state whose
version, vocabulary or format differs, or that cannot be read, is loaded again from the chunks
and replaced: it is a cache, never the truth.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from typing import cast

from citerag.domain import LINES_SEARCHED, DomainVocabulary
from citerag.retrieve.doc_places import DocPlaces
from citerag.retrieve.doc_state import DocState, load_doc_state, places_state
from citerag.retrieve.place import shared_text
from citerag.store.base import DocStore
from citerag.types import DocumentCard, DocumentRecord, JSONObject

log = logging.getLogger(__name__)
# Raised to 2 when what a state holds, or how it is written, changes: older ones are reloaded.
FORMAT = 2
BATCH = 256  # documents whose kept states are read at once (about 0.5 MB of JSON at 35 chunks)


def vocabulary_key(vocabulary: DomainVocabulary) -> str:
    """What the key pages found depend on, as a short digest."""
    titles = [vocabulary.key_page_titles, vocabulary.key_page_kinds, LINES_SEARCHED]
    return hashlib.sha256(json.dumps(titles).encode()).hexdigest()[:16]


def load_doc_states(
    docstore: DocStore,
    collection: str,
    records: Sequence[DocumentRecord],
    vocabulary: DomainVocabulary,
    cards: Mapping[str, DocumentCard],
) -> list[DocState]:
    """The states of `records`' documents: the docstore's kept ones where they are of the
    record's version and this vocabulary, the others loaded from their chunks and kept. Read
    and kept a batch of documents at a time, so a cold open holds the kept JSON of one batch
    (not of the whole collection) beside the states it made."""
    key = vocabulary_key(vocabulary)
    states: list[DocState] = []
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        kept = docstore.get_doc_states(collection, [r.doc_id for r in batch])
        made: dict[str, JSONObject] = {}
        for record in batch:
            card = cards.get(record.doc_id)
            state = decoded(kept.get(record.doc_id), record, key, card)
            if state is None:
                state = load_doc_state(
                    docstore, collection, record.doc_id, record.created_at, vocabulary, card,
                    record.pages,
                )  # fmt: skip
                made[record.doc_id] = encoded(state, key, with_card=card is None)
            states.append(state)
        if made:
            _keep(docstore, collection, made)
    return states


def _keep(docstore: DocStore, collection: str, made: dict[str, JSONObject]) -> None:
    # Not keeping them costs the next process a slower open, nothing else: a store that refuses
    # the write (read-only file, a server's permissions) must not fail the question.
    try:
        docstore.put_doc_states(collection, made)
    except Exception as error:  # each backend raises its own (sqlite3, pymongo)
        log.warning("%s: document states not kept (%s)", collection, error)


def encoded(doc: DocState, vocabulary: str, with_card: bool = False) -> JSONObject:
    """`doc` as JSON: its places' columns (`DocPlaces.parts`), its key pages and counted values;
    its card only when it was read from the document's first pages (a stored card is read from
    the docstore, where it may change)."""
    if not isinstance(doc.places, DocPlaces):
        raise TypeError("only a state loaded from the docstore is kept")
    state: JSONObject = {
        "format": FORMAT,
        "version": doc.version,
        "vocabulary": vocabulary,
        "places": cast(JSONObject, doc.places.parts()),
        "key_pages": [[page_id, kind] for page_id, kind in doc.statement_kinds.items()],
        "values": [[name, list(found)] for name, found in doc.values.items()],
    }
    if with_card:
        state["card"] = doc.card.to_dict()
    return state


def decoded(
    state: JSONObject | None, record: DocumentRecord, vocabulary: str, card: DocumentCard | None
) -> DocState | None:
    """The document state `state` keeps, or None when it is of another version, vocabulary or
    format, or cannot be read (then the document is loaded from its chunks)."""
    if state is None or state.get("format") != FORMAT or state.get("vocabulary") != vocabulary:
        return None
    if state.get("version") != record.created_at or (card is None and "card" not in state):
        return None
    try:
        return _state(state, record, card)
    except (KeyError, IndexError, TypeError, ValueError) as error:
        log.warning("%s: its kept state cannot be read (%r); loading it again", record.name, error)
        return None


def _state(state: JSONObject, record: DocumentRecord, card: DocumentCard | None) -> DocState:
    places = DocPlaces.from_parts(record.doc_id, cast(JSONObject, state["places"]))
    kinds = {str(p): str(k) for p, k in cast(list[list[str]], state["key_pages"])}
    values = {
        str(name): tuple(shared_text(str(v)) for v in found)
        for name, found in cast(list[list[list[object]]], state["values"])
    }
    if card is None:
        card = DocumentCard.from_dict(cast(JSONObject, state["card"]))
    return places_state(record.doc_id, places, record.created_at, kinds, card, record.pages, values)
