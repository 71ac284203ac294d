"""Ingest as a declared list of steps, each with a name, a fingerprint and one `run`.

A step's fingerprint is the settings that shape what it stores; a document's key (its id) is the
hash of its file's bytes and of every step's fingerprint, so a change of any of them ingests it
again. The same list runs in two ways on a `DocumentRun`:

- a fresh ingest (`stored` is None): the steps read the PDF and the store step writes the whole
  document, all or nothing;
- a rerun from the parse cache (`stored` is what the stores still hold, `pdf` is None): steps that
  need the PDF (figure descriptions, the section tree) keep what the stores hold, vectors the
  docstore keeps are not computed again, and the store step writes only what differs.
"""

from __future__ import annotations

import hashlib
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np
from llama_index.core.schema import TextNode

from citerag.ingest.vectors import Vectors
from citerag.settings import Settings
from citerag.store.base import Stores
from citerag.types import DocumentCard, DocumentRecord, JSONObject, JSONValue, ParsedDocument

Fingerprint = dict[str, JSONValue]
Progress = Callable[[str], None]


class MissingParse(LookupError):
    """A rerun found no readable parse of the document in the cache."""


@dataclass
class StoredDocument:
    """What the stores hold of a document that is rerun (its chunks, rows, tree and record)."""

    stores: Stores
    collection: str
    doc_id: str
    record: DocumentRecord | None
    chunks: list[TextNode]
    row_ids: set[str]  # the chunk ids of its vector-index rows
    tree: JSONObject | None

    @classmethod
    def load(cls, stores: Stores, collection: str, doc_id: str) -> StoredDocument:
        docstore = stores.docstore
        return cls(
            stores,
            collection,
            doc_id,
            docstore.get_document(collection, doc_id),
            docstore.chunks_of(collection, doc_id),
            set(stores.vectors.ids_of(collection, doc_id)),
            docstore.get_tree(collection, doc_id),
        )

    def sentence_vectors(self, keys: Sequence[str]) -> Vectors:
        """The sentence (or page head) vectors the docstore keeps under `keys`."""
        return self.stores.docstore.get_sentence_vectors(self.collection, list(keys))


@dataclass
class DocumentRun:
    """One document on its way through the steps: what each step reads and what it adds."""

    collection: str
    name: str
    sha256: str
    doc_id: str
    pdf: Path | None = None  # None when rerun from the parse cache
    stored: StoredDocument | None = None  # None on a fresh ingest
    progress: Progress | None = None
    parsed: ParsedDocument | None = None
    chunks: list[TextNode] = field(default_factory=list)
    card: DocumentCard | None = None
    tree: JSONObject | None = None
    sentences: Vectors = field(default_factory=dict)  # by chunk id: every chunk's
    heads: Vectors = field(default_factory=dict)  # by page key: the heads to write
    unstored: set[str] = field(default_factory=set)  # sentence keys the docstore lacks
    rows: list[TextNode] = field(default_factory=list)  # chunks whose index rows are written
    row_vectors: np.ndarray | None = None  # aligned with `rows`
    actions: list[str] = field(default_factory=list)  # what a rerun wrote, for its report

    @property
    def document(self) -> ParsedDocument:
        if self.parsed is None:
            raise MissingParse(f"{self.name}: no parse to work from")
        return self.parsed

    @property
    def rerun(self) -> bool:
        return self.stored is not None

    def note(self, action: str) -> None:
        self.actions.append(action)


class IngestStep(ABC):
    """One step of ingest. Its fingerprint depends on settings alone, so that a document's key
    can be known without building the step (`ingest_key`)."""

    name: ClassVar[str]

    @classmethod
    @abstractmethod
    def fingerprint(cls, settings: Settings) -> Fingerprint:
        """The settings that shape what this step stores (empty when none do)."""

    @abstractmethod
    def run(self, document: DocumentRun) -> None:
        """Read what earlier steps left on `document` and add this step's part."""


def document_key(file_sha256: str, fingerprints: Iterable[Fingerprint]) -> str:
    """The hash of the file's bytes and of the steps' fingerprints, merged into one mapping: a
    mapping rather than a list so that moving a setting between steps leaves every stored
    document's id (and so its chunk ids) as it was."""
    shaping: Fingerprint = {"file": file_sha256}
    for fingerprint in fingerprints:
        shared = shaping.keys() & fingerprint.keys()
        if shared:
            raise ValueError(f"two ingest steps fingerprint {sorted(shared)}")
        shaping.update(fingerprint)
    return hashlib.sha256(json.dumps(shaping, sort_keys=True).encode()).hexdigest()


class IngestSteps:
    """The declared steps in order, run one after another on a document."""

    def __init__(self, settings: Settings, steps: Sequence[IngestStep]) -> None:
        self.settings = settings
        self.steps = tuple(steps)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(step.name for step in self.steps)

    def key(self, file_sha256: str) -> str:
        return document_key(file_sha256, (s.fingerprint(self.settings) for s in self.steps))

    def run(
        self, document: DocumentRun, starting: Callable[[str], None] | None = None, start: str = ""
    ) -> DocumentRun:
        """Run the steps (from the one named `start`, when given), telling `starting` each
        step's name as it begins."""
        first = self.names.index(start) if start else 0
        for step in self.steps[first:]:
            if starting is not None:
                starting(step.name)
            step.run(document)
        return document
