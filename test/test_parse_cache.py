"""Parsed documents are cached by content hash and parser; a cache hit skips parsing."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from helpers import DEMO_PDF

from citerag.errors import ConfigError, ModelUnavailable, RagError
from citerag.parse import select
from citerag.parse.cache import (
    PARSE_FORMAT,
    cache_path,
    cached_entries,
    load_cached,
    save_cached,
)
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.types import BBox, Block, Page, ParsedDocument


def _document(parser: str = "pymupdf") -> ParsedDocument:
    blocks = [
        Block(kind="title", text="1 Intro", bbox=BBox(1, 2, 3, 4), level=1),
        Block(kind="figure", text="Figure 2: A plot", bbox=BBox(5, 6, 7, 8), label="2"),
    ]
    page = Page(number=1, width=595.0, height=842.0, blocks=blocks)
    return ParsedDocument(doc_id="abc", name="x.pdf", parser=parser, pages=[page])


def test_round_trip_preserves_every_field(tmp_path: Path) -> None:
    document = _document()
    save_cached(tmp_path, document)
    assert load_cached(tmp_path, "abc", "pymupdf") == document


def test_entries_are_separate_per_parser_and_tier(tmp_path: Path) -> None:
    save_cached(tmp_path, _document("mineru"), tier="flash")
    assert load_cached(tmp_path, "abc", "mineru", "flash") is not None
    assert load_cached(tmp_path, "abc", "mineru", "basic") is None
    assert load_cached(tmp_path, "abc", "pymupdf") is None


def test_write_leaves_no_temporary_files(tmp_path: Path) -> None:
    save_cached(tmp_path, _document())
    assert [p.name for p in tmp_path.iterdir()] == [f"abc.pymupdf.v{PARSE_FORMAT}.json"]


def test_a_parse_cached_by_an_older_parser_format_is_made_again(tmp_path: Path) -> None:
    save_cached(tmp_path, _document())
    (tmp_path / f"abc.pymupdf.v{PARSE_FORMAT}.json").rename(tmp_path / "abc.pymupdf.json")
    assert load_cached(tmp_path, "abc", "pymupdf") is None


def test_damaged_entry_is_treated_as_a_miss(tmp_path: Path) -> None:
    path = cache_path(tmp_path, "abc", "pymupdf")
    path.write_text('{"doc_id": "abc", "pages": [', encoding="utf-8")
    assert load_cached(tmp_path, "abc", "pymupdf") is None


def test_second_parse_is_served_from_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = select.parse_document(DEMO_PDF, "demo", "pymupdf", tmp_path)

    def fail(*_: object) -> ParsedDocument:
        raise AssertionError("parsed again despite a cache entry")

    monkeypatch.setattr(PyMuPDFParser, "parse", fail)
    assert select.parse_document(DEMO_PDF, "demo", "pymupdf", tmp_path) == first


def test_mineru_missing_falls_back_to_pymupdf_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    empty_env = tmp_path / "no_mineru"
    empty_env.mkdir()
    with caplog.at_level(logging.WARNING):
        document = select.parse_document(
            DEMO_PDF, "demo", "mineru", tmp_path / "cache", mineru_env=empty_env
        )
    assert document.parser == "pymupdf"
    assert any(
        "MinerU is not installed" in r.message and "PyMuPDF" in r.message for r in caplog.records
    )


def test_unknown_parser_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pymupdf"):
        select.parse_document(DEMO_PDF, "demo", "tesseract", tmp_path)


def test_a_tier_mineru_does_not_have_is_a_config_error_not_a_fallback(tmp_path: Path) -> None:
    empty_env = tmp_path / "no_mineru"
    empty_env.mkdir()
    with pytest.raises(ConfigError, match="mineru_tier is 'pipeline'") as caught:
        select.parse_document(
            DEMO_PDF, "demo", "mineru", tmp_path / "cache", "pipeline", mineru_env=empty_env
        )
    assert "flash" in str(caught.value) and "advanced" in str(caught.value)
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def _mineru_that_raises(monkeypatch: pytest.MonkeyPatch, error: Exception) -> None:
    import citerag.parse.mineru as mineru_wrapper

    def parse(self: object, path: Path, doc_id: str) -> ParsedDocument:
        raise error

    monkeypatch.setattr(mineru_wrapper, "mineru_available", lambda env=None: True)
    monkeypatch.setattr(mineru_wrapper.MineruParser, "parse", parse)


def test_a_model_tier_without_weights_raises_instead_of_falling_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _mineru_that_raises(monkeypatch, ModelUnavailable("MinerU tier 'basic' needs weights."))
    with pytest.raises(ModelUnavailable, match="tier 'basic'"):
        select.parse_document(DEMO_PDF, "demo", "mineru", tmp_path, "basic", mineru_env=tmp_path)
    assert load_cached(tmp_path, "demo", "pymupdf") is None, "no PyMuPDF parse behind its back"


def test_a_failed_mineru_run_still_falls_back_to_pymupdf_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    _mineru_that_raises(monkeypatch, RagError("MinerU failed on x.pdf (boom); use pymupdf."))
    with caplog.at_level(logging.WARNING):
        document = select.parse_document(
            DEMO_PDF, "demo", "mineru", tmp_path, "flash", mineru_env=tmp_path
        )
    assert document.parser == "pymupdf"
    assert any("MinerU failed" in r.message and "PyMuPDF" in r.message for r in caplog.records)


def test_cached_entries_name_hash_parser_and_tier_of_the_current_format(tmp_path: Path) -> None:
    save_cached(tmp_path, _document("mineru"), tier="flash")
    save_cached(tmp_path, _document())
    (tmp_path / "old.pymupdf.json").write_text("{}", encoding="utf-8")  # an older format's entry
    assert list(cached_entries(tmp_path)) == [("abc", "mineru", "flash"), ("abc", "pymupdf", "")]
