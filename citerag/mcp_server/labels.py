"""Printed page labels ('iv', 'A-3') of a stored document, read from the PDF it was ingested
from where the docstore recorded that file (`DocumentRecord.source`, kept by `ingest`'s folder
sync) and it still holds the same bytes; none otherwise. Labels are not stored with the chunks,
so they are read once per file version and kept."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from pathlib import Path

import pymupdf

from citerag.ingest.pipeline import ingest_key
from citerag.ingest.sync import file_sha256
from citerag.settings import Settings
from citerag.types import DocumentRecord

log = logging.getLogger(__name__)
FileVersion = tuple[str, str, int, int]  # doc id, path, size, mtime in nanoseconds


class PageLabels:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._known: dict[FileVersion, dict[int, str]] = {}
        self._lock = threading.Lock()

    def of(self, record: DocumentRecord) -> Mapping[int, str]:
        """Page number -> label, for the pages that have one."""
        if not record.source:
            return {}
        path = Path(record.source)
        try:
            stat = path.stat()
        except OSError:
            return {}
        version = (record.doc_id, str(path), stat.st_size, stat.st_mtime_ns)
        with self._lock:
            if version in self._known:
                return self._known[version]
        labels = self._read(path, record.doc_id)
        with self._lock:
            self._known[version] = labels
        return labels

    def _read(self, path: Path, doc_id: str) -> dict[int, str]:
        try:
            if ingest_key(file_sha256(path), self._settings) != doc_id:
                return {}  # the file changed since it was ingested: its labels may not match
            with pymupdf.open(path) as pdf:
                if not pdf.get_page_labels():
                    return {}
                labels = {page.number + 1: page.get_label() for page in pdf}
        except (OSError, RuntimeError, ValueError) as error:
            log.debug("no page labels from %s: %s", path, error)
            return {}
        return {number: label for number, label in labels.items() if label}
