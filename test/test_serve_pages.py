"""Pages for the viewer: the PDF behind a stored document, its rendering and highlight boxes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pymupdf
import pytest
from helpers import huge_page_pdf

from citerag.ingest.pipeline import ingest_key
from citerag.serve.api_errors import ApiError
from citerag.serve.page_images import PageSource
from citerag.serve.uploads import FileStore
from citerag.settings import Settings

SENTENCE = "Hybrid retrieval fuses keyword and vector hits before reranking them"


def two_line_pdf(path: Path) -> Path:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Hybrid retrieval fuses keyword and vector hits")
    page.insert_text((72, 86), "before reranking them. Nothing else is said here.")
    doc.new_page().insert_text((72, 72), "Second page.")
    doc.save(path)
    return path


def doc_id(path: Path, settings: Settings) -> str:
    return ingest_key(hashlib.sha256(path.read_bytes()).hexdigest(), settings)


@pytest.fixture
def setup(tmp_path: Path) -> tuple[PageSource, Settings, Path]:
    settings = Settings(storage_dir=tmp_path / "storage")
    folder = tmp_path / "articles"
    folder.mkdir()
    pdf = two_line_pdf(folder / "note.pdf")
    files = FileStore(tmp_path / "storage" / "uploads")
    return PageSource(settings, files, [folder]), settings, pdf


def test_a_pdf_in_a_configured_folder_is_found_only_while_unchanged(
    setup: tuple[PageSource, Settings, Path],
) -> None:
    pages, settings, pdf = setup
    stored_id = doc_id(pdf, settings)
    assert pages.locate("c", "note.pdf", stored_id) == pdf
    pdf.write_bytes(pdf.read_bytes() + b"\n% edited after it was ingested\n")
    with pytest.raises(ApiError) as missing:
        pages.locate("c", "note.pdf", stored_id)
    assert missing.value.status == 404 and "upload it" in missing.value.message


def test_a_page_renders_as_png_and_a_missing_page_is_404(
    setup: tuple[PageSource, Settings, Path],
) -> None:
    pages, _, pdf = setup
    png = pages.png(pdf, 2, 1.0)
    assert png.startswith(b"\x89PNG")
    with pytest.raises(ApiError) as missing:
        pages.png(pdf, 3, 1.0)
    assert missing.value.status == 404 and "has 2" in missing.value.message


def test_a_highlight_across_two_lines_gets_one_box_around_both(
    setup: tuple[PageSource, Settings, Path],
) -> None:
    pages, _, pdf = setup
    found = pages.boxes(pdf, 1, [SENTENCE, "words that are not on the page"])
    assert (found["width"], found["height"]) == (595.0, 842.0)
    first, absent = found["highlights"]
    assert len(first["rects"]) == 2
    box = first["box"]
    assert box["x0"] == pytest.approx(72, abs=2) and box["y0"] < 72 < 86 < box["y1"]
    assert absent["box"] is None and absent["rects"] == []


def test_a_page_past_the_pixel_cap_is_422_with_the_zoom_that_fits(
    setup: tuple[PageSource, Settings, Path], tmp_path: Path
) -> None:
    pages, _, _ = setup
    poster = huge_page_pdf(tmp_path / "poster.pdf", side=3_000)
    with pytest.raises(ApiError) as refused:
        pages.png(poster, 1, 1.5)
    assert refused.value.status == 422
    assert "megapixel" in refused.value.message and "zoom 1.36 or less" in refused.value.message
    assert pages.png(poster, 1, 1.3).startswith(b"\x89PNG")


def test_a_page_too_large_at_any_zoom_is_refused_quickly_not_rendered(
    setup: tuple[PageSource, Settings, Path], tmp_path: Path
) -> None:
    pages, _, _ = setup
    giant = huge_page_pdf(tmp_path / "giant.pdf")
    for zoom in (0.5, 1.2, 1.5):
        with pytest.raises(ApiError) as refused:
            pages.png(giant, 1, zoom)
        assert refused.value.status == 422
        assert "desktop viewer" in refused.value.message


def test_renders_beyond_the_slots_wait_then_get_503_not_a_worker(
    setup: tuple[PageSource, Settings, Path],
) -> None:
    from citerag.serve import page_images as pages_module

    source, _, pdf = setup
    source.render_wait_s = 0.05
    held = [source._render_slots.acquire() for _ in range(pages_module.RENDER_SLOTS)]
    try:
        with pytest.raises(ApiError) as busy:
            source.png(pdf, 1, 1.0)
        assert busy.value.status == 503
    finally:
        for _ in held:
            source._render_slots.release()
    assert source.png(pdf, 1, 1.0).startswith(b"\x89PNG")


def test_a_table_row_highlight_is_boxed_on_the_line_of_its_cells(tmp_path: Path) -> None:
    """The row label also appears in prose above; the box is the row with its numbers."""
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_text((72, 72), "Revenues grew in every region this year.")
    for y, (label, first, second) in (
        (120, ("Revenues", "$ 24,996,056", "$ 20,156,447")),
        (140, ("Net income", "2,761,395", "1,866,916")),
    ):
        page.insert_text((72, y), label)
        page.insert_text((300, y), first)
        page.insert_text((420, y), second)
    pdf = tmp_path / "statement.pdf"
    doc.save(pdf)
    settings = Settings(storage_dir=tmp_path / "storage")
    pages = PageSource(settings, FileStore(tmp_path / "uploads"), [tmp_path])
    found = pages.boxes(pdf, 1, ["|Revenues|$24,996,056|$20,156,447|"])
    box = found["highlights"][0]["box"]
    assert box is not None
    # the row, not the prose above nor the next row
    assert box["y0"] < 120 < box["y1"] and box["y1"] < 135
    assert box["x0"] == pytest.approx(72, abs=2) and box["x1"] > 420
