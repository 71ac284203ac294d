"""MinerU's middle JSON maps to typed blocks in PDF points; MinerU runs only when installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from helpers import DEMO_PDF, PROJECT_DIR

from citerag.errors import ConfigError, ModelUnavailable
from citerag.testing.parser import ParserContract
from mineru_wrapper import MineruParser, middle_json_to_document, mineru_available

MINERU_ENV = PROJECT_DIR / ".mineru_env"


def _text(content: str) -> list[dict[str, Any]]:
    return [{"type": "text", "content": content}]


SAMPLE: dict[str, Any] = {
    "extensions": {
        "docvortex_layout": {"pages": [{"page_idx": 0, "width_pt": 600, "height_pt": 800}]}
    },
    "pages": [
        {
            "page_idx": 0,
            "blocks": [
                {
                    "type": "header",
                    "bbox": [0.1, 0.01, 0.5, 0.03],
                    "content": _text("Running head"),
                },
                {
                    "type": "doc_title",
                    "bbox": [0.1, 0.05, 0.9, 0.1],
                    "content": _text("Report"),
                    "level": 1,
                },
                {
                    "type": "paragraph_title",
                    "bbox": [0.1, 0.12, 0.4, 0.15],
                    "content": _text("2.1 Costs"),
                    "level": 2,
                },
                {
                    "type": "text",
                    "bbox": [0.1, 0.2, 0.9, 0.3],
                    "content": [
                        {"type": "text", "content": "Energy is"},
                        {"type": "equation_inline", "content": "E=mc^2"},
                    ],
                },
                {
                    "type": "table",
                    "bbox": [0.1, 0.35, 0.9, 0.5],
                    "content": [
                        {
                            "type": "table_body",
                            "content": "<table><tr><td>Item</td><td>2021</td></tr>"
                            "<tr><td>Revenue</td><td>$</td><td>1,200</td></tr></table>",
                        },
                        {"type": "table_caption", "content": _text("Table 4: Revenue by year")},
                    ],
                },
                {
                    "type": "image",
                    "bbox": [0.1, 0.55, 0.9, 0.8],
                    "content": [
                        {"type": "image_body", "content": ""},
                        {"type": "image_caption", "content": _text("Figure 3: Growth over time")},
                    ],
                },
                {
                    "type": "equation",
                    "bbox": [0.3, 0.82, 0.7, 0.86],
                    "content": "a^2+b^2=c^2 \\tag{5}",
                },
                {"type": "equation", "bbox": [0.3, 0.87, 0.7, 0.9], "content": ""},
                {"type": "page_number", "bbox": [0.5, 0.95, 0.52, 0.97], "content": _text("7")},
            ],
        }
    ],
}


def test_middle_json_maps_to_typed_blocks() -> None:
    document = middle_json_to_document(SAMPLE, doc_id="d", name="r.pdf")
    [page] = document.pages
    assert page.number == 1 and (page.width, page.height) == (600.0, 800.0)
    kinds = [(b.kind, b.level, b.label) for b in page.blocks]
    assert kinds == [
        ("title", 1, None),
        ("title", 2, None),
        ("text", None, None),
        ("table", None, "4"),
        ("figure", None, "3"),
        ("equation", None, "5"),
    ]
    text, table, figure = page.blocks[2], page.blocks[3], page.blocks[4]
    assert text.text == "Energy is $E=mc^2$"
    assert table.text.startswith("Table 4: Revenue by year\n\n")
    assert "|Revenue|$1,200|" in table.text
    assert figure.text == "Figure 3: Growth over time"


def test_bboxes_are_converted_to_points_inside_the_page() -> None:
    page = middle_json_to_document(SAMPLE, doc_id="d", name="r.pdf").pages[0]
    title = page.blocks[0].bbox
    assert (title.x0, title.y0, title.x1, title.y1) == pytest.approx((60, 40, 540, 80))
    for block in page.blocks:
        assert 0 <= block.bbox.x0 <= block.bbox.x1 <= 600
        assert 0 <= block.bbox.y0 <= block.bbox.y1 <= 800


def test_unknown_tier_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="flash"):
        MineruParser(tier="turbo")


def test_missing_environment_is_reported(tmp_path: Path) -> None:
    assert not mineru_available(tmp_path)
    with pytest.raises(ModelUnavailable, match="not installed"):
        MineruParser(env_dir=tmp_path).parse(DEMO_PDF, "demo")


def _require_mineru() -> None:
    if not mineru_available(MINERU_ENV):
        pytest.skip(f"{MINERU_ENV} is absent: create MinerU's environment with setup.sh")


@pytest.mark.slow
def test_flash_tier_parses_the_demo_pdf() -> None:
    _require_mineru()
    document = MineruParser(env_dir=MINERU_ENV).parse(DEMO_PDF, "demo")
    assert document.parser == "mineru" and len(document.pages) == 3
    titles = [b.text for p in document.pages for b in p.blocks if b.kind == "title"]
    assert "3 Retrieval" in titles
    [table] = [b for p in document.pages for b in p.blocks if b.kind == "table"]
    assert "|PyMuPDF|0.97|41|35.0|" in table.text


@pytest.mark.slow
def test_model_tier_without_weights_fails_fast() -> None:
    _require_mineru()
    with pytest.raises(ModelUnavailable, match="flash"):
        MineruParser(tier="basic", env_dir=MINERU_ENV, timeout_s=60).parse(DEMO_PDF, "demo")


@pytest.mark.slow  # a MinerU run in its own environment: seconds per parse
class TestMineruParserContract(ParserContract):
    @pytest.fixture
    def parser(self) -> MineruParser:
        _require_mineru()
        return MineruParser(env_dir=MINERU_ENV)
