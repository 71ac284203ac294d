"""Runs MinerU in its own environment (`.mineru_env`) and maps its output to a ParsedDocument.

MinerU needs newer libraries than the rest of the engine, so it runs in a subprocess that
writes MinerU's middle JSON (pages of typed blocks with bboxes normalised to 0..1) to a file.
The `flash` tier with `ocr_mode="txt"` needs no model weights; the other tiers do.
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import TypedDict

from citerag.errors import ModelUnavailable, RagError
from citerag.parse.tables import clean_row, rows_to_markdown
from citerag.settings import MINERU_TIERS, require_choice
from citerag.types import (
    BBox,
    Block,
    JSONValue,
    Page,
    ParsedDocument,
    json_float,
    json_int,
    json_list,
)

PROJECT_DIR = Path(__file__).resolve().parents[2]
DEFAULT_ENV_DIR = PROJECT_DIR / ".mineru_env"
TIERS = MINERU_TIERS  # "flash" is model-free; "basic", "standard", "advanced" need weights
MODELS_MISSING_EXIT = 3

# Run by the MinerU interpreter: argv = pdf, tier, output json. Exits 3 when a model tier has
# no weights on this machine, instead of letting MinerU try (and fail) to download them.
RUNNER = """
import json, sys
from pathlib import Path

if __name__ == "__main__":
    pdf, tier, output = sys.argv[1:4]
    if tier != "flash":
        from mineru.config import config
        models = Path(config.model.base_dir).expanduser()
        if not models.is_dir() or not any(models.iterdir()):
            print(models, file=sys.stderr)
            sys.exit(3)
    from mineru import parse
    result = parse(pdf, tier=tier, ocr_mode="txt", image_analysis=False, page_range="all")
    Path(output).write_text(json.dumps(result.to_dict()), encoding="utf-8")
"""

SKIPPED_TYPES = {"header", "footer", "page_number", "aside_text", "page_header", "page_footer"}
TITLE_TYPES = {"doc_title", "paragraph_title", "title"}
TABLE_TYPES = {"table"}
FIGURE_TYPES = {"image", "chart"}
EQUATION_TYPES = {"equation", "interline_equation", "equation_interline"}
CAPTION_LABEL = re.compile(r"^(?:Figure|Fig\.?|Table)\s*(\d+(?:\.\d+)*)\s*[:.]", re.IGNORECASE)
FIGURE_CAPTION = re.compile(r"^(?:Figure|Fig\.?)\s*(\d+(?:\.\d+)*)\s*[:.]", re.IGNORECASE)
LATEX_TAG = re.compile(r"\\tag\{([^}]*)\}|\((\d+(?:\.\d+)*)\)\s*$")


# MinerU's middle JSON, as far as it is read here. A block (an "item") stays free-form JSON: its
# content is a string, a span, or a list of spans and child items.
Item = Mapping[str, JSONValue]


class _MiddlePage(TypedDict, total=False):
    page_idx: int
    blocks: list[Item]


class _LayoutPage(TypedDict):
    page_idx: int
    width_pt: float
    height_pt: float


class _Layout(TypedDict, total=False):
    pages: list[_LayoutPage]


class _Extensions(TypedDict, total=False):
    docvortex_layout: _Layout


class MiddleJSON(TypedDict, total=False):
    pages: list[_MiddlePage]
    extensions: _Extensions


def mineru_available(env_dir: Path = DEFAULT_ENV_DIR) -> bool:
    """True when `env_dir` holds a Python environment with MinerU installed."""
    python = env_dir / "bin" / "python"
    return python.is_file() and any(env_dir.glob("lib/python*/site-packages/mineru/__init__.py"))


def check_tier(tier: str) -> str:
    """The tier, or a one-sentence ConfigError naming MinerU's real tiers."""
    return require_choice("mineru_tier", tier, TIERS)


class MineruParser:
    name = "mineru"

    def __init__(
        self, tier: str = "flash", env_dir: Path = DEFAULT_ENV_DIR, timeout_s: int = 900
    ) -> None:
        check_tier(tier)
        self.tier = tier
        self.env_dir = env_dir
        self.timeout_s = timeout_s

    def parse(self, path: Path, doc_id: str) -> ParsedDocument:
        if not mineru_available(self.env_dir):
            raise ModelUnavailable(
                f"MinerU is not installed in {self.env_dir}; "
                "run setup.sh or set parser to 'pymupdf'."
            )
        middle = self._run(path)
        return middle_json_to_document(middle, doc_id=doc_id, name=path.name)

    def _run(self, path: Path) -> MiddleJSON:
        with tempfile.TemporaryDirectory(prefix="mineru-") as folder:
            output = Path(folder) / "middle.json"
            command = [str(self.env_dir / "bin" / "python"), "-c", RUNNER]
            command += [str(path.resolve()), self.tier, str(output)]
            try:
                done = subprocess.run(
                    command, capture_output=True, text=True, timeout=self.timeout_s, cwd=folder
                )
            except subprocess.TimeoutExpired:
                raise RagError(
                    f"MinerU took longer than {self.timeout_s} s on {path.name}; "
                    "raise the timeout or use the pymupdf parser."
                ) from None
            self._check(done, path)
            data: MiddleJSON = json.loads(output.read_text(encoding="utf-8"))
            return data

    def _check(self, done: subprocess.CompletedProcess[str], path: Path) -> None:
        if done.returncode == MODELS_MISSING_EXIT:
            raise ModelUnavailable(
                f"MinerU tier '{self.tier}' needs model weights that are not in "
                f"{done.stderr.strip()}; download them with `mineru` on a networked machine "
                "or use the 'flash' tier."
            )
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["no error output"])[-1]
            raise RagError(
                f"MinerU failed on {path.name} ({last[:200]}); use the pymupdf parser instead."
            )


def middle_json_to_document(middle: MiddleJSON, doc_id: str, name: str) -> ParsedDocument:
    """Map MinerU's middle JSON to a ParsedDocument (pure: no I/O)."""
    sizes = _page_sizes(middle)
    pages = []
    for raw in sorted(middle.get("pages", []), key=lambda p: p["page_idx"]):
        width, height = sizes.get(raw["page_idx"], (612.0, 792.0))
        blocks = [b for item in raw.get("blocks", []) if (b := _block(item, width, height))]
        pages.append(Page(number=raw["page_idx"] + 1, width=width, height=height, blocks=blocks))
    return ParsedDocument(doc_id=doc_id, name=name, parser=MineruParser.name, pages=pages)


def _page_sizes(middle: MiddleJSON) -> dict[int, tuple[float, float]]:
    layout = middle.get("extensions", {}).get("docvortex_layout", {})
    return {
        p["page_idx"]: (float(p["width_pt"]), float(p["height_pt"]))
        for p in layout.get("pages", [])
    }


def _block(item: Item, width: float, height: float) -> Block | None:
    kind = item.get("type", "")
    bbox = _to_points(json_list(item.get("bbox", [0, 0, 0, 0])), width, height)
    if kind in SKIPPED_TYPES:
        return None
    if kind in TITLE_TYPES:
        text = _plain_text(item.get("content"))
        return (
            Block(kind="title", text=text, bbox=bbox, level=json_int(item.get("level") or 1))
            if text
            else None
        )
    if kind in TABLE_TYPES:
        return _table_block(item, bbox)
    if kind in FIGURE_TYPES:
        return _figure_block(item, bbox)
    if kind in EQUATION_TYPES:
        return _equation_block(item, bbox)
    text = _plain_text(item.get("content"))
    if not text:
        return None
    if figure := FIGURE_CAPTION.match(text):
        return Block(kind="figure", text=text, bbox=bbox, label=figure.group(1))
    return Block(kind="text", text=text, bbox=bbox)


def _table_block(item: Item, bbox: BBox) -> Block | None:
    parts = _children(item)
    caption = " ".join(
        _plain_text(c.get("content")) for c in parts if c.get("type") == "table_caption"
    )
    bodies = [c.get("content") for c in parts if c.get("type") == "table_body"]
    markdown = "\n\n".join(_table_markdown(body) for body in bodies if isinstance(body, str))
    text = "\n\n".join(part for part in (caption.strip(), markdown) if part)
    if not text:
        return None
    label = CAPTION_LABEL.match(caption.strip())
    return Block(kind="table", text=text, bbox=bbox, label=label.group(1) if label else None)


def _figure_block(item: Item, bbox: BBox) -> Block | None:
    captions = [
        _plain_text(c.get("content"))
        for c in _children(item)
        if str(c.get("type", "")).endswith("_caption")
    ]
    caption = " ".join(c for c in captions if c)
    if not caption:
        return None
    label = CAPTION_LABEL.match(caption)
    return Block(kind="figure", text=caption, bbox=bbox, label=label.group(1) if label else None)


def _equation_block(item: Item, bbox: BBox) -> Block | None:
    content = item.get("content")
    latex = content if isinstance(content, str) else _plain_text(content)
    latex = latex.strip()
    if not latex:
        return None  # the flash tier detects display equations but does not transcribe them
    tag = LATEX_TAG.search(latex)
    label = item.get("label") or (tag.group(1) or tag.group(2) if tag else None)
    return Block(kind="equation", text=latex, bbox=bbox, label=str(label) if label else None)


def _children(item: Item) -> list[Item]:
    content = item.get("content")
    return [c for c in content if isinstance(c, dict)] if isinstance(content, list) else []


def _plain_text(content: JSONValue) -> str:
    """Text of a block's content: a string, or spans and child blocks nested in lists."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, dict):
        inner = _plain_text(content.get("content"))
        is_math = content.get("type") in {"equation_inline", "inline_equation"}
        return f"${inner}$" if is_math and inner else inner
    if isinstance(content, list):
        pieces = [_plain_text(part) for part in content]
        joiner = "\n" if any(isinstance(p, dict) and "bbox" in p for p in content) else " "
        return joiner.join(p for p in pieces if p).strip()
    return ""


def _to_points(box: Sequence[JSONValue], width: float, height: float) -> BBox:
    """MinerU's 0..1 page fractions to PDF points, clipped to the page."""
    values = [json_float(v) for v in box]
    scale_x, scale_y = (width, height) if max(values, default=0) <= 1.5 else (1.0, 1.0)
    x0, y0, x1, y1 = values
    return BBox(
        min(max(x0 * scale_x, 0.0), width),
        min(max(y0 * scale_y, 0.0), height),
        min(max(x1 * scale_x, 0.0), width),
        min(max(y1 * scale_y, 0.0), height),
    )


class _TableHtml(HTMLParser):
    """Collects the cell text of each <tr> of an HTML table."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            if not self.rows:
                self.rows.append([])
            self.rows[-1].append(" ".join("".join(self._cell).split()))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def _table_markdown(html: str) -> str:
    if "<t" not in html:
        return html.strip()  # MinerU sometimes gives the table as Markdown already
    reader = _TableHtml()
    reader.feed(html)
    return rows_to_markdown([clean_row(row) for row in reader.rows])
