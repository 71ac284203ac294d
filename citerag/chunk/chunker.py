"""Page-bounded, sentence-aligned chunks with offsets into the page text.

A chunk never crosses a page, never holds more than the chunk size in tokens (a sentence or
table row longer than that is cut at word boundaries, offsets still exact), and carries the
section in effect where it starts. A chunk of table rows also carries the table's context (the
page's titles, the period line above the table and the header row), so that a row far down a
financial statement still says which statement and which years its numbers belong to.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from llama_index.core.schema import TextNode

from citerag.nodes import CHUNK_INDEX, chunk_key, chunk_node, link_neighbours
from citerag.text.sentences import append_trimmed, sentence_spans
from citerag.types import BBox, Block, Page, ParsedDocument

TokenCounter = Callable[[str], int]
# A unit longer than this many characters per token of the bound is sliced before it is counted,
# so a megabyte without a sentence end costs one pass of the tokenizer, not one per halving.
LONG_UNIT_CHARS_PER_TOKEN = 8
SLICE_CHARS_PER_TOKEN = 2


@dataclass(frozen=True)
class _Unit:
    """A sentence (or table row) of the page text: the smallest piece a chunk is built from."""

    start: int
    end: int
    tokens: int
    block_index: int


def default_token_counter() -> TokenCounter:
    """LlamaIndex's tokenizer, so that chunk_size means what it means in LlamaIndex."""
    from llama_index.core.utils import get_tokenizer

    tokenize = get_tokenizer()
    return lambda text: len(tokenize(text))


def chunk_document(
    doc: ParsedDocument,
    chunk_size: int,
    chunk_overlap: int,
    count_tokens: TokenCounter | None = None,
) -> list[TextNode]:
    counter = count_tokens or default_token_counter()
    chunks: list[TextNode] = []
    section = ""
    for page in doc.pages:
        page_chunks, section = _chunk_page(doc, page, section, chunk_size, chunk_overlap, counter)
        for chunk in page_chunks:
            chunk.metadata[CHUNK_INDEX] = len(chunks)
            chunk.id_ = chunk_key(doc.doc_id, len(chunks))
            chunks.append(chunk)
    link_neighbours(chunks)
    return chunks


def _chunk_page(
    doc: ParsedDocument,
    page: Page,
    section: str,
    chunk_size: int,
    chunk_overlap: int,
    counter: TokenCounter,
) -> tuple[list[TextNode], str]:
    text, block_spans = page.text_and_spans()
    units = _units(page.blocks, text, block_spans, counter, chunk_size)
    sections = _section_at_block(page.blocks, section)
    contexts = _table_contexts(page.blocks)
    chunks = []
    for first, last in _windows([u.tokens for u in units], chunk_size, chunk_overlap):
        window = units[first : last + 1]
        blocks = sorted({u.block_index for u in window})
        context = " | ".join(dict.fromkeys(contexts[i] for i in blocks if contexts[i]))
        chunks.append(_make_chunk(doc, page, text, window, blocks, sections[blocks[0]], context))
    return chunks, sections[-1] if sections else section


def _units(
    blocks: Sequence[Block],
    text: str,
    spans: Sequence[tuple[int, int]],
    counter: TokenCounter,
    max_tokens: int,
) -> list[_Unit]:
    units = []
    for index, (block, (start, end)) in enumerate(zip(blocks, spans, strict=True)):
        pieces = _table_rows(text, start, end) if block.kind == "table" else None
        for a, b in pieces or sentence_spans(text, start, end):
            for piece_start, piece_end, tokens in _bounded(text, a, b, counter, max_tokens):
                units.append(_Unit(piece_start, piece_end, tokens, index))
    return units


def _bounded(
    text: str, a: int, b: int, counter: TokenCounter, max_tokens: int
) -> list[tuple[int, int, int]]:
    """`text[a:b]` as (start, end, tokens) pieces of at most `max_tokens` tokens each, cut at
    whitespace (mid-word only inside a word longer than the bound)."""
    if b - a > LONG_UNIT_CHARS_PER_TOKEN * max_tokens:  # a runaway "sentence": slice it first
        slices = _slices(text, a, b, SLICE_CHARS_PER_TOKEN * max_tokens)
        return [piece for lo, hi in slices for piece in _bounded(text, lo, hi, counter, max_tokens)]
    tokens = max(1, counter(text[a:b]))
    if tokens <= max_tokens or b - a < 2:
        return [(a, b, tokens)]
    return [
        piece
        for lo, hi in _halves(text, a, b)
        for piece in _bounded(text, lo, hi, counter, max_tokens)
    ]


def _slices(text: str, a: int, b: int, width: int) -> list[tuple[int, int]]:
    """Consecutive trimmed slices of about `width` characters, each ending at whitespace."""
    slices: list[tuple[int, int]] = []
    start = a
    while start < b:
        stop = min(start + width, b)
        if stop < b:
            space = text.rfind(" ", start + 1, stop)
            stop = space if space > start else stop
        append_trimmed(text, start, stop, slices)
        start = stop
    return slices


def _halves(text: str, a: int, b: int) -> list[tuple[int, int]]:
    middle = (a + b) // 2
    left = text.rfind(" ", a + 1, middle + 1)
    right = text.find(" ", middle, b - 1)
    candidates = [c for c in (left, right) if c > a]
    cut = min(candidates, key=lambda c: abs(c - middle)) if candidates else middle
    halves: list[tuple[int, int]] = []
    for lo, hi in ((a, cut), (cut, b)):
        append_trimmed(text, lo, hi, halves)
    return halves


def _table_rows(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Each Markdown row is a unit, so a table splits between rows, never inside one."""
    rows = []
    cursor = start
    for line in text[start:end].split("\n"):
        if line.strip():
            rows.append((cursor, cursor + len(line)))
        cursor += len(line) + 1
    return rows


def _windows(tokens: Sequence[int], size: int, overlap: int) -> list[tuple[int, int]]:
    """Inclusive unit ranges: greedy packing up to `size`, next window repeats up to `overlap`."""
    windows: list[tuple[int, int]] = []
    first = 0
    while first < len(tokens):
        last, total = first, tokens[first]
        while last + 1 < len(tokens) and total + tokens[last + 1] <= size:
            last += 1
            total += tokens[last]
        windows.append((first, last))
        if last + 1 >= len(tokens):
            break
        first = _overlap_start(tokens, first, last, overlap)
    return windows


def _overlap_start(tokens: Sequence[int], first: int, last: int, overlap: int) -> int:
    start, carried = last + 1, 0
    while start - 1 > first and carried + tokens[start - 1] <= overlap:
        start -= 1
        carried += tokens[start]
    return start


def _section_at_block(blocks: Sequence[Block], current: str) -> list[str]:
    """The section title in effect at each block (a title block starts its own section)."""
    result = []
    for block in blocks:
        if block.kind == "title":
            current = " ".join(block.text.split())
        result.append(current)
    return result


def _make_chunk(
    doc: ParsedDocument,
    page: Page,
    page_text: str,
    units: Sequence[_Unit],
    block_indexes: Sequence[int],
    section: str,
    table_context: str,
) -> TextNode:
    """`units` are the sentences/table rows of the chunk; they become its highlight spans."""
    blocks = [page.blocks[i] for i in block_indexes]
    start, end = units[0].start, units[-1].end
    return chunk_node(
        node_id="",
        doc_id=doc.doc_id,
        doc_name=doc.name,
        page=page.number,
        chunk_index=0,
        text=page_text[start:end],
        start=start,
        section=section,
        block_type=_dominant_kind(blocks),
        label=next((b.label for b in blocks if b.label), "") or "",
        boxes=[_rounded(b.bbox) for b in blocks],
        sentences=[(u.start - start, u.end - start) for u in units],
        table_context=table_context,
        page_label=page.label or "",
        ocr_confidence=_ocr_confidence(blocks),
    )


def _ocr_confidence(blocks: Sequence[Block]) -> float | None:
    """The mean confidence of the OCR'd blocks (weighted by their text), None when none is."""
    read = [(b.ocr_confidence, len(b.text)) for b in blocks if b.ocr_confidence is not None]
    if not read:
        return None
    return round(sum(c * n for c, n in read) / max(sum(n for _c, n in read), 1), 1)


MAX_CONTEXT_LINE = 160


def _table_contexts(blocks: Sequence[Block]) -> list[str]:
    """For each table block, what a reader sees above it: the page's titles, the short lines
    just above the table (period, unit) and the table's header row; empty for other blocks."""
    titles = [_one_line(b.text) for b in blocks if b.kind == "title"][:4]
    contexts = []
    for index, block in enumerate(blocks):
        if block.kind != "table":
            contexts.append("")
            continue
        above: list[str] = []
        for previous in reversed(blocks[:index]):
            line = _one_line(previous.text)
            if previous.kind not in ("text", "title") or len(line) > MAX_CONTEXT_LINE:
                break
            above.insert(0, line)
            if len(above) == 2:
                break
        header = _one_line(block.text.split("\n", 1)[0].replace("|", " "))
        parts = dict.fromkeys(p for p in (*titles, *above, header) if p)
        contexts.append(" | ".join(parts))
    return contexts


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _dominant_kind(blocks: Sequence[Block]) -> str:
    kinds = {b.kind for b in blocks}
    for kind in ("table", "equation", "figure"):
        if kind in kinds:
            return kind
    return "text" if "text" in kinds else blocks[0].kind


def _rounded(box: BBox) -> BBox:
    return BBox(round(box.x0, 1), round(box.y0, 1), round(box.x1, 1), round(box.y1, 1))
