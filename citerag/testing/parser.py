"""The contract of `DocumentParser` (citerag.parse.parser): PyMuPDF and MinerU keep it.

Subclass `ParserContract` and give the class a `parser` fixture. The mixin writes its own
two-page PDF (a heading and a sentence per page) with PyMuPDF, so every parser reads the same.
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf
import pytest

from citerag.parse.parser import DocumentParser
from citerag.types import ParsedDocument

PAGES = [
    ("1 Introduction", "Netflix streaming revenue grew strongly in 2020."),
    ("2 Results", "Operating income rose by twenty four percent."),
]


def write_sample_pdf(path: Path) -> Path:
    with pymupdf.open() as document:
        for heading, sentence in PAGES:
            page = document.new_page()
            page.insert_text((72, 90), heading, fontsize=18, fontname="helv")
            page.insert_text((72, 140), sentence, fontsize=11, fontname="helv")
        document.save(path)
    return path


def words(text: str) -> str:
    return " ".join(text.split())


class ParserContract:
    @pytest.fixture
    def parsed(self, parser: DocumentParser, tmp_path: Path) -> ParsedDocument:
        return parser.parse(write_sample_pdf(tmp_path / "sample.pdf"), doc_id="doc-1")

    def test_pages_are_one_based_and_named_after_the_file(
        self, parser: DocumentParser, parsed: ParsedDocument
    ) -> None:
        assert [page.number for page in parsed.pages] == [1, 2]
        assert (parsed.doc_id, parsed.name, parsed.parser) == ("doc-1", "sample.pdf", parser.name)

    def test_each_page_holds_its_own_text(self, parsed: ParsedDocument) -> None:
        for page, (heading, sentence) in zip(parsed.pages, PAGES, strict=True):
            text = words(page.text_and_spans()[0])
            assert heading in text and sentence in text
        assert PAGES[1][1] not in words(parsed.pages[0].text_and_spans()[0])

    def test_blocks_lie_inside_their_page(self, parsed: ParsedDocument) -> None:
        for page in parsed.pages:
            assert page.blocks and page.width > 0 and page.height > 0
            for block in page.blocks:
                box = block.bbox
                assert 0 <= box.x0 <= box.x1 <= page.width
                assert 0 <= box.y0 <= box.y1 <= page.height

    def test_spans_point_at_each_blocks_text(self, parsed: ParsedDocument) -> None:
        for page in parsed.pages:
            text, spans = page.text_and_spans()
            assert [text[start:end] for start, end in spans] == [b.text for b in page.blocks]

    def test_the_parse_survives_the_cache_round_trip(self, parsed: ParsedDocument) -> None:
        assert ParsedDocument.from_dict(json.loads(json.dumps(parsed.to_dict()))) == parsed
