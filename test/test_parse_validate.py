"""A bad input is refused with one clear sentence before anything is parsed or written."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pymupdf
import pytest
from helpers import text_pdf

from citerag.errors import InputError
from citerag.parse import ocr
from citerag.parse.validate import inspect_pdf


def test_valid_pdf_gives_hash_and_page_count(tmp_path: Path) -> None:
    path = text_pdf(tmp_path / "ok.pdf", pages=3)
    info = inspect_pdf(path)
    assert info.page_count == 3
    assert info.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()


def test_missing_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        inspect_pdf(tmp_path / "nowhere.pdf")


def test_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a file"):
        inspect_pdf(tmp_path)


@pytest.mark.parametrize("content", [b"", b"this is not a pdf at all", b"%PDF-1.7\n garbage"])
def test_corrupt_file_is_refused(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "broken.pdf"
    path.write_bytes(content)
    with pytest.raises(InputError, match="PDF"):
        inspect_pdf(path)


def test_encrypted_pdf_is_refused(tmp_path: Path) -> None:
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret")
    path = tmp_path / "locked.pdf"
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="u", owner_pw="o")
    with pytest.raises(InputError, match="encrypted"):
        inspect_pdf(path)


def test_scanned_pdf_without_an_ocr_engine_is_refused_with_ocr_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_image(
        page.rect, pixmap=pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 40, 40), 0)
    )
    path = tmp_path / "scan.pdf"
    doc.save(path)
    monkeypatch.setattr(ocr.shutil, "which", lambda _name: None)  # no Tesseract on PATH
    with pytest.raises(InputError, match="ocrmypdf") as raised:
        inspect_pdf(path)
    assert "install Tesseract" in str(raised.value)
    assert str(raised.value).count(". ") == 0  # one sentence
    monkeypatch.undo()
    if ocr.missing_engine("eng") is None:  # with an engine the page is read, not refused
        assert inspect_pdf(path).scanned_pages == (1,)


def test_a_page_larger_than_fifty_letter_pages_is_refused_in_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "giant.pdf"
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "A normal first page.")
    doc.new_page(width=14_400, height=14_400).insert_text((72, 72), "One enormous page.")
    doc.save(path)
    with pytest.raises(InputError) as refused:
        inspect_pdf(path)
    message = str(refused.value)
    assert "14400 x 14400 pt (page 2)" in message and message.count(".") <= 2


@pytest.mark.parametrize("target", ["loop.pdf", "missing.pdf"])
def test_a_symlink_loop_or_dangling_link_is_named_as_a_link(tmp_path: Path, target: str) -> None:
    link = tmp_path / "loop.pdf"
    link.symlink_to(tmp_path / target)
    with pytest.raises(InputError) as refused:
        inspect_pdf(link)
    assert "symbolic link that leads nowhere" in str(refused.value)
