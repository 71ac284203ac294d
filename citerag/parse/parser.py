"""The parser seam: a PDF's pages as typed, located blocks. PyMuPDF (in process) and MinerU
(in its own environment) implement it; `select.parse_document` chooses one and caches its parse.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from citerag.types import ParsedDocument


class DocumentParser(Protocol):
    """`parse` gives 1-based pages whose blocks lie inside them, named `path.name`, with
    `parser` set to the parser's `name` (what the parse cache and the ingest key record)."""

    name: str

    def parse(self, path: Path, doc_id: str) -> ParsedDocument: ...
