"""Chooses the parser, uses the parse cache, and falls back to PyMuPDF when MinerU cannot run.

The fallback (with a warning) covers a MinerU that is not installed or whose run fails. A
configuration MinerU can never honour is an error instead: an unknown `mineru_tier`, or a model
tier whose weights are not on this machine (`ModelUnavailable`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

from citerag.errors import ConfigError, ModelUnavailable, RagError
from citerag.parse.cache import load_cached, save_cached
from citerag.parse.ocr import OcrOptions, PageProgress, missing_engine
from citerag.parse.parser import DocumentParser
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.settings import PARSERS, require_choice
from citerag.types import ParsedDocument

logger = logging.getLogger(__name__)


def parse_document(
    path: Path,
    doc_id: str,
    parser: str,
    cache_dir: Path,
    mineru_tier: str = "flash",
    mineru_env: Path | None = None,
    ocr: OcrOptions | None = None,
    progress: PageProgress | None = None,
) -> ParsedDocument:
    """The parsed document from the cache, else from the named parser (cached afterwards).

    The cache is keyed by the file's bytes, so a cached parse may carry the name the same bytes
    had before (another collection, a deleted draft): the document is always named `path.name`.
    A PyMuPDF parse is read by OCR under `ocr` (default: English, no pictures), and `progress`
    hears of each page OCR reads.
    """
    reading = _Reading(ocr or OcrOptions(), progress)
    parsed = _parse(path, doc_id, parser, cache_dir, mineru_tier, mineru_env, reading)
    return replace(parsed, name=path.name)


class _Reading:
    """How a PyMuPDF parse reads scanned pages and pictures, and whether a cached one did so."""

    def __init__(self, options: OcrOptions, progress: PageProgress | None) -> None:
        self.options = options
        self.progress = progress

    def parser(self) -> DocumentParser:
        return PyMuPDFParser(self.options, self.progress)

    def still_valid(self, cached: ParsedDocument) -> bool:
        """False when the settings or the machine would now read it otherwise: other OCR
        languages, pictures read or not, scanned pages left unread that an engine now reads."""
        languages = self.options.languages
        pictures = languages if self.options.pictures else ""
        if cached.ocr_languages not in ("", languages) or cached.picture_ocr != pictures:
            return False
        return not (cached.unread_pages and missing_engine(languages) is None)


def _parse(
    path: Path,
    doc_id: str,
    parser: str,
    cache_dir: Path,
    mineru_tier: str,
    mineru_env: Path | None,
    reading: _Reading,
) -> ParsedDocument:
    require_choice("parser", parser, PARSERS)
    if parser != "mineru":
        return _parse_with_pymupdf(path, doc_id, cache_dir, reading)
    from citerag.parse.mineru import check_tier

    check_tier(mineru_tier)
    cached = load_cached(cache_dir, doc_id, parser, mineru_tier)
    if cached is not None:
        return cached
    document = _parse_with_mineru(path, doc_id, mineru_tier, mineru_env)
    if document is None:
        return _parse_with_pymupdf(path, doc_id, cache_dir, reading)
    save_cached(cache_dir, document, mineru_tier)
    return document


def _parse_with_pymupdf(
    path: Path, doc_id: str, cache_dir: Path, reading: _Reading
) -> ParsedDocument:
    cached = load_cached(cache_dir, doc_id, PyMuPDFParser.name)
    if cached is not None and reading.still_valid(cached):
        return cached
    document = reading.parser().parse(path, doc_id)
    save_cached(cache_dir, document)
    return document


def _parse_with_mineru(
    path: Path, doc_id: str, tier: str, env_dir: Path | None
) -> ParsedDocument | None:
    """MinerU's parse, or None (with a warning saying why) when it is missing or its run fails.

    A tier whose model weights are absent raises ModelUnavailable: the configured tier cannot
    run on this machine, and a PyMuPDF parse in its place would hide that from the user.
    """
    from citerag.parse.mineru import DEFAULT_ENV_DIR, MineruParser, mineru_available

    env = env_dir or DEFAULT_ENV_DIR
    if not mineru_available(env):
        logger.warning(
            "MinerU is not installed in %s; parsing %s with PyMuPDF instead.", env, path.name
        )
        return None
    try:
        return MineruParser(tier=tier, env_dir=env).parse(path, doc_id)
    except (ConfigError, ModelUnavailable):
        raise
    except RagError as error:
        logger.warning("MinerU failed (%s); parsing %s with PyMuPDF instead.", error, path.name)
        return None
