"""Parsed documents cached as JSON, keyed by file hash and parser (and MinerU tier)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

from citerag.store.atomic_dirs import write_json_atomically
from citerag.types import ParsedDocument

# Bump when a parser's output changes for the same file, so cached parses are made again.
# 2: pages of more vector paths than any table are not searched for tables; 3: a running
# header or footer is kept on the first page that prints it; 4: pages carry their printed
# label, scanned pages are read by OCR (a parse records its OCR languages: `select`)
PARSE_FORMAT = 4


def cache_path(cache_dir: Path, doc_id: str, parser: str, tier: str = "") -> Path:
    variant = f"{parser}-{tier}" if tier else parser
    return cache_dir / f"{doc_id}.{variant}.v{PARSE_FORMAT}.json"


def cached_entries(cache_dir: Path) -> Iterator[tuple[str, str, str]]:
    """(file hash, parser, tier) of each parse cached in the current format, in name order;
    entries of older formats are left out (they are parsed again when next needed)."""
    suffix = f".v{PARSE_FORMAT}.json"
    for path in sorted(cache_dir.glob(f"*{suffix}")):
        sha256, _, variant = path.name[: -len(suffix)].partition(".")
        parser, _, tier = variant.partition("-")
        yield sha256, parser, tier


def load_cached(cache_dir: Path, doc_id: str, parser: str, tier: str = "") -> ParsedDocument | None:
    """The cached parse, or None when absent or unreadable (it is then parsed again)."""
    path = cache_path(cache_dir, doc_id, parser, tier)
    try:
        return ParsedDocument.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def save_cached(cache_dir: Path, document: ParsedDocument, tier: str = "") -> Path:
    """Write atomically: readers see the old file or the complete new one, never a partial one."""
    path = cache_path(cache_dir, document.doc_id, document.parser, tier)
    write_json_atomically(path, document.to_dict())
    return path
