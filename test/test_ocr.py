"""Scanned PDFs and scanned pages are read by OCR: ingested, cited, highlighted and boxed like
text pages; without an engine, one sentence says what to install."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, cast

import pymupdf
import pytest
from scan_helpers import needs_tesseract, scanned_copy, text_pdf

from citerag.engine import Engine
from citerag.errors import InputError
from citerag.parse import ocr, scanned
from citerag.parse.select import parse_document
from citerag.serve.page_images import PageSource
from citerag.serve.uploads import FileStore
from citerag.settings import Settings

COLLECTION = "scans"
PAGES = (
    (
        "Harbor report. The harbor authority opened two new berths for container ships "
        "this spring, and the channel was deepened to fourteen meters.",
        "Dredging removed silt from the eastern basin over the winter months.",
    ),
    (
        "The lighthouse keeper recorded seventeen storms in March. Each storm was logged "
        "with its wind speed and the height of the waves at the pier.",
        "The keeper also repaired the foghorn after the third storm.",
    ),
    (
        "Budget. The authority spent most of its budget on the new berths and on "
        "maintenance of the cranes along the northern quay.",
    ),
)
STORM_QUESTION = "How many storms did the lighthouse keeper record in March?"


def no_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tesseract absent: the engine is looked up on PATH, and nothing is found."""
    monkeypatch.setattr(ocr.shutil, "which", lambda _name: None)


def first_source(engine: Engine, question: str) -> dict[str, Any]:
    result = engine.query(question, COLLECTION, top_k=3).to_dict()
    assert result["sources"], result
    return cast(dict[str, Any], result["sources"][0])


def round_trips(source: dict[str, Any]) -> bool:
    content = source["content"]
    return all(
        content[h["startOffset"] : h["endOffset"]] == h["text"] for h in source["highlights"]
    )


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ocr")


@pytest.fixture(scope="module")
def original(folder: Path) -> Path:
    return text_pdf(folder / "harbor_text.pdf", PAGES)


@pytest.fixture(scope="module")
def scan(folder: Path, original: Path) -> Path:
    return scanned_copy(original, folder / "harbor_scan.pdf")


@pytest.fixture(scope="module")
def engine(folder: Path, scan: Path, original: Path) -> Any:
    settings = Settings(storage_dir=folder / "storage", reranker="none")
    engine = Engine(settings)
    mixed = scanned_copy(original, folder / "harbor_mixed.pdf", scanned={2})
    try:
        assert engine.ingest(scan, COLLECTION).status == "ingested"
        assert engine.ingest(mixed, "mixed").status == "ingested"
        yield engine
    finally:
        engine.close()


@needs_tesseract
@pytest.mark.slow
def test_a_scanned_pdf_is_ingested_and_its_page_cited_with_exact_highlights(
    engine: Engine, scan: Path
) -> None:
    with pymupdf.open(scan) as doc:
        assert not any(page.get_text().strip() for page in doc)  # truly no text layer
    source = first_source(engine, STORM_QUESTION)
    assert (source["documentName"], source["pageNumber"]) == ("harbor_scan.pdf", 2)
    assert "seventeen storms" in source["content"]
    assert source["highlights"] and round_trips(source)
    assert source["metadata"]["ocr"] is True
    assert 50 <= source["metadata"]["ocrConfidence"] <= 100
    assert source["pageLabel"] == "2"


@needs_tesseract
@pytest.mark.slow
def test_highlight_boxes_of_a_scanned_page_lie_inside_it_and_over_the_words(
    engine: Engine, scan: Path, original: Path, folder: Path
) -> None:
    source = first_source(engine, STORM_QUESTION)
    texts = [h["text"] for h in source["highlights"]]
    pages = PageSource(Settings(storage_dir=folder / "storage"), cast(FileStore, None), [])
    found = pages.boxes(scan, 2, texts)
    width, height = found["width"], found["height"]
    with pymupdf.open(original) as doc:
        printed = doc[1]
        for highlight in found["highlights"]:
            box = highlight["box"]
            assert box is not None, highlight["text"]
            assert 0 <= box["x0"] < box["x1"] <= width and 0 <= box["y0"] < box["y1"] <= height
            words = pymupdf.Rect()
            for rect in printed.search_for(" ".join(highlight["text"].split()[:4])):
                words |= rect
            drawn = pymupdf.Rect(box["x0"], box["y0"], box["x1"], box["y1"])
            assert not words.is_empty and drawn.intersects(words), highlight["text"]
    for box in source["boxes"]:
        assert 0 <= box["x0"] < box["x1"] <= width and 0 <= box["y0"] < box["y1"] <= height


@needs_tesseract
@pytest.mark.slow
def test_the_scanned_page_of_a_mixed_pdf_is_found(engine: Engine) -> None:
    result = engine.query(STORM_QUESTION, "mixed", top_k=3).to_dict()
    first = result["sources"][0]
    assert (first["documentName"], first["pageNumber"]) == ("harbor_mixed.pdf", 2)
    assert first["metadata"]["ocr"] is True and round_trips(first)
    text_page = engine.query("Which basin did dredging clear of silt?", "mixed", top_k=3)
    cited = text_page.to_dict()["sources"][0]
    assert cited["pageNumber"] == 1 and "metadata" not in cited  # a text page stays text


@needs_tesseract
def test_a_second_parse_of_the_same_bytes_reads_nothing_again(
    scan: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = parse_document(scan, "scan", "pymupdf", tmp_path)
    assert first.ocr_languages == "eng" and "seventeen" in first.pages[1].text

    def no_more_ocr(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("OCR ran again on a cached parse")

    monkeypatch.setattr(scanned, "read_all", no_more_ocr)
    assert parse_document(scan, "scan", "pymupdf", tmp_path) == first


def test_without_an_engine_a_scanned_pdf_is_refused_in_one_sentence(
    folder: Path, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scan = scanned_copy(original, folder / "refused.pdf")
    no_engine(monkeypatch)
    engine = Engine(Settings(storage_dir=folder / "refused_storage", reranker="none"))
    try:
        with pytest.raises(InputError) as refused:
            engine.ingest(scan, COLLECTION)
    finally:
        engine.close()
    message = str(refused.value)
    assert "no text layer" in message and "install Tesseract" in message
    assert "apt-get install tesseract-ocr tesseract-ocr-eng" in message
    assert message.endswith(".") and ". " not in message and "\n" not in message


def test_without_an_engine_a_scanned_page_gets_one_sentence_and_the_rest_is_kept(
    folder: Path,
    original: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    mixed = scanned_copy(original, folder / "unread.pdf", scanned={2})
    no_engine(monkeypatch)
    settings = Settings(storage_dir=folder / "unread_storage", reranker="none")
    engine = Engine(settings)
    try:
        with caplog.at_level(logging.WARNING):
            outcome = engine.ingest(mixed, COLLECTION)
    finally:
        engine.close()
    assert outcome.status == "ingested" and outcome.pages == 3
    warned = [r.getMessage() for r in caplog.records if "scanned" in r.getMessage()]
    assert warned == [
        "unread.pdf: page 2 looks scanned and was left unread because no OCR engine "
        "(Tesseract) is installed; install Tesseract (`sudo apt-get install tesseract-ocr "
        "tesseract-ocr-eng`, or `brew install tesseract tesseract-lang` on macOS; `bash "
        "setup.sh` does it) and ingest it again."
    ]


def test_missing_language_data_is_named() -> None:
    if ocr.shutil.which("tesseract") is None:
        pytest.skip("Tesseract is not installed (bash setup.sh installs it)")
    assert ocr.missing_engine("eng+zzz") == "Tesseract has no data for the OCR language zzz"


def test_a_page_with_a_text_layer_is_never_read_by_ocr(original: Path) -> None:
    with pymupdf.open(original) as doc:
        page = doc[0]
        assert not ocr.needs_ocr(page, len("".join(page.get_text().split())))


def test_a_blank_page_needs_no_ocr(tmp_path: Path) -> None:
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.draw_rect(pymupdf.Rect(0, 0, 50, 50), color=(1, 1, 1), fill=(1, 1, 1))
        assert not ocr.needs_ocr(page, 0)


@needs_tesseract
@pytest.mark.slow
def test_pages_left_unread_are_read_when_the_file_is_ingested_again_with_an_engine(
    folder: Path, original: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mixed = scanned_copy(original, folder / "later.pdf", scanned={2})
    settings = Settings(storage_dir=folder / "later_storage", reranker="none")
    no_engine(monkeypatch)
    engine = Engine(settings)
    try:
        assert engine.ingest(mixed, COLLECTION).status == "ingested"
    finally:
        engine.close()
    monkeypatch.undo()
    engine = Engine(settings)
    try:
        assert engine.ingest(mixed, COLLECTION).status == "replaced"
        source = engine.query(STORM_QUESTION, COLLECTION, top_k=3).to_dict()["sources"][0]
        assert source["pageNumber"] == 2 and "seventeen" in source["content"]
        assert engine.ingest(mixed, COLLECTION).status == "skipped"
    finally:
        engine.close()


def picture_pdf(path: Path) -> Path:
    """A text page with a chart pasted in as a picture (its words only in pixels), captioned."""
    with pymupdf.open() as drawing:
        canvas = drawing.new_page(width=300, height=150)
        canvas.insert_textbox(
            pymupdf.Rect(10, 10, 290, 140),
            "Ferry passengers\nNorth pier 4210\nSouth pier 1785",
            fontsize=16,
        )
        chart = canvas.get_pixmap(dpi=150, colorspace=pymupdf.csGRAY, alpha=False)
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_textbox(
            pymupdf.Rect(72, 72, 540, 160),
            "The harbor served more travellers this year than ever before.",
            fontsize=12,
        )
        page.insert_image(pymupdf.Rect(72, 180, 372, 330), pixmap=chart)
        page.insert_text((72, 350), "Figure 1: Passengers by pier.", fontsize=11)
        doc.save(path)
    return path


@needs_tesseract
def test_words_inside_a_picture_are_read_into_its_figure_only_when_asked(tmp_path: Path) -> None:
    from citerag.parse.ocr import OcrOptions
    from citerag.parse.pymupdf_parser import PyMuPDFParser

    pdf = picture_pdf(tmp_path / "pictures.pdf")
    plain = PyMuPDFParser().parse(pdf, "p")
    assert "4210" not in plain.pages[0].text and plain.picture_ocr == ""
    read = PyMuPDFParser(OcrOptions(pictures=True)).parse(pdf, "p")
    figures = [b for b in read.pages[0].blocks if b.ocr_confidence is not None]
    assert len(figures) == 1 and figures[0].kind == "figure" and figures[0].label == "1"
    assert "North pier 4210" in figures[0].text
    body = [b for b in read.pages[0].blocks if b.ocr_confidence is None]
    assert [b.text for b in body] == [b.text for b in plain.pages[0].blocks]  # body untouched
    assert read.picture_ocr == "eng"


@needs_tesseract
@pytest.mark.slow
def test_the_background_parse_tells_which_page_ocr_reads(tmp_path: Path) -> None:
    from citerag.ingest.prefetch import ParsePrefetcher
    from citerag.parse.cache import load_cached
    from citerag.parse.validate import inspect_pdf

    # Twelve scanned pages: OCR takes seconds, so the half-second polls see it under way (three
    # pages could be read between two polls).
    scan = scanned_copy(text_pdf(tmp_path / "long.pdf", PAGES * 4), tmp_path / "long_scan.pdf")
    settings = Settings(storage_dir=tmp_path / "storage")
    told: list[tuple[int, int, int]] = []
    prefetch = ParsePrefetcher(settings)
    try:
        prefetch.start(scan)
        prefetch.wait(scan, lambda page, read, total: told.append((page, read, total)))
    finally:
        prefetch.close()
    assert told and all(1 <= page <= 12 and total == 12 for page, _read, total in told)
    parsed = load_cached(settings.storage.parse_cache_dir, inspect_pdf(scan).sha256, "pymupdf")
    assert parsed is not None and parsed.ocr_languages == "eng"
    assert not list(settings.storage.parse_cache_dir.glob("*progress*"))  # nothing left behind


def test_ocr_languages_come_from_the_environment_and_are_checked() -> None:
    import config
    from citerag.errors import ConfigError
    from citerag.settings import settings_from_config

    assert settings_from_config(config, environ={}).parse.ocr_languages == "eng"
    chosen = settings_from_config(config, environ={"OCR_LANGUAGES": "eng+deu"})
    assert chosen.parse.ocr_languages == "eng+deu" and not chosen.parse.ocr_pictures
    assert settings_from_config(config, environ={"RAG_OCR_PICTURES": "true"}).parse.ocr_pictures
    with pytest.raises(ConfigError, match="Tesseract language codes joined by"):
        settings_from_config(config, environ={"OCR_LANGUAGES": "eng; rm -rf /"})
