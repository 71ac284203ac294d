"""Builds a document's section tree at ingest, without an LLM.

Headings come from the PDF outline when it has one that checks out against the pages, else from
layout (`headings.detect_headings`). Each heading becomes a node covering the pages up to the
next heading of the same or a higher level; its own text runs to the next heading of any level.
Chunks are linked to the node their first character falls in (metadata and a LlamaIndex PARENT
relationship), and each node lists its chunks.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

from citerag.nodes import page_of, start_of
from citerag.tree.heading_text import (
    Cut,
    at_page_top,
    extractive_summary,
    heading_offset,
    text_between,
)
from citerag.tree.headings import detect_headings
from citerag.tree.layout import read_outline, read_runs
from citerag.tree.levels import Heading
from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.split import split_long_nodes
from citerag.types import ParsedDocument

log = logging.getLogger(__name__)
TREE_NODE = "tree_node"  # chunk metadata: the node_id of the section the chunk starts in
OUTLINE_MATCH_SHARE = 0.6  # share of outline titles found on their pages for it to be trusted
MAX_TITLE_CHARS = 80
PREFACE_LEVEL = 0  # the text before the first heading: a node, not a heading
_WORDS = re.compile(r"\w")


@dataclass
class _Placed:
    heading: Heading
    cut: Cut  # where the heading starts in the page text
    node: TreeNode
    at_top: bool  # nothing but a little text above it on its page


def tree_section_id(doc_id: str, node_id: str) -> str:
    """The LlamaIndex id a section node has (the PARENT of its chunks)."""
    return f"{doc_id[:16]}-tree-{node_id}"


def build_tree(path: Path, parsed: ParsedDocument, chunks: Sequence[TextNode] = ()) -> DocumentTree:
    headings, source, cover_title = find_headings(path, parsed)
    placed = _place(headings, parsed)
    _fill_text(placed, parsed)
    structure = _nest(placed, len(parsed.pages))
    preface = _preface(placed, parsed, cover_title)
    if preface is not None:
        structure.insert(0, preface)
    tree = DocumentTree(parsed.name, parsed.doc_id, structure, source)
    owners = [(item.cut, item.node) for item in placed]
    if preface is not None:
        owners.insert(0, (Cut(1, 0), preface))
    owners += split_long_nodes(tree)
    _number(tree)
    for node in tree.walk():
        node.summary = extractive_summary(node.title, node.text) or _children_summary(node)
    link_chunks(tree, owners, chunks)
    return tree


def find_headings(path: Path, parsed: ParsedDocument) -> tuple[list[Heading], str, str]:
    """The outline's headings when they check out against the pages, else layout's; and the
    document's title as its first page shows it (the largest text there)."""
    runs, _pages = read_runs(path)
    first_page = [r for r in runs if r.page == 1 and not r.running and len(r.text) > 2]
    cover = max(first_page, key=lambda r: r.style.size).text if first_page else ""
    cover_title = _short(cover) if cover else _preface_title(parsed)
    outline = _outline_headings(path, parsed)
    if outline:
        return outline, "outline", cover_title
    return detect_headings(runs), "layout", cover_title


def _outline_headings(path: Path, parsed: ParsedDocument) -> list[Heading]:
    entries = read_outline(path)
    pages = len(parsed.pages)
    valid = [(lvl, title, page) for lvl, title, page in entries if 1 <= page <= pages]
    if len(valid) < 2 or len(valid) < len(entries):
        return []
    found = sum(
        heading_offset(parsed.pages[page - 1].text, title) is not None
        for _lvl, title, page in valid
    )
    if found < OUTLINE_MATCH_SHARE * len(valid):
        log.info("%s: its outline does not match its pages; using layout", parsed.name)
        return []
    return [Heading(title.strip(), page, lvl, kind="outline") for lvl, title, page in valid]


def _place(headings: list[Heading], parsed: ParsedDocument) -> list[_Placed]:
    placed: list[_Placed] = []
    for heading, offset in zip(headings, _offsets(headings, parsed), strict=True):
        cut = Cut(heading.page, offset)
        if placed and (cut.page, cut.offset) < (placed[-1].cut.page, placed[-1].cut.offset):
            cut = placed[-1].cut  # keep reading order when a title is found earlier on its page
        node = TreeNode("", _short(heading.title), heading.page, heading.page, heading.level)
        at_top = at_page_top(parsed.pages[cut.page - 1].text, cut.offset)
        if at_top and (not placed or placed[-1].cut.page < cut.page):
            cut = Cut(cut.page, 0)  # a page header above it opens its page, as its span does
        placed.append(_Placed(heading, cut, node, at_top))
    return placed


def _offsets(headings: list[Heading], parsed: ParsedDocument) -> list[int]:
    """Where each heading starts in its page's text. A heading comes before the next heading on
    its page: where its title is found only after that one (its words recur in the text, the
    line itself was dropped as a running header), or not at all, it starts where that one does
    (else at the top of its page)."""
    found = [heading_offset(parsed.pages[h.page - 1].text, h.title) for h in headings]
    offsets = [0] * len(headings)
    following: tuple[int, int] | None = None  # (page, offset) of the next heading placed
    for index in range(len(headings) - 1, -1, -1):
        page, offset = headings[index].page, found[index]
        ahead = following is not None and following[0] == page
        if following is not None and ahead and (offset is None or offset > following[1]):
            offset = following[1]
        offsets[index] = offset if offset is not None else 0
        following = (page, offsets[index])
    return offsets


def _short(title: str) -> str:
    title = " ".join(title.split())
    return title if len(title) <= MAX_TITLE_CHARS else title[: MAX_TITLE_CHARS - 1] + "…"


def _nest(placed: list[_Placed], last_page: int) -> list[TreeNode]:
    """Nodes nested by level, each ending where the next node of its level or above begins."""
    roots: list[TreeNode] = []
    stack: list[TreeNode] = []
    for index, item in enumerate(placed):
        item.node.end_index = _end_page(placed, index, last_page)
        while stack and stack[-1].level >= item.node.level:
            stack.pop()
        (stack[-1].nodes if stack else roots).append(item.node)
        stack.append(item.node)
    return roots


def _preface(placed: list[_Placed], parsed: ParsedDocument, cover_title: str) -> TreeNode | None:
    """The text before the first heading (a cover page, or a title line above the first
    heading on page 1) as a node of its own, titled by the cover; with no heading at all, the
    whole document under its title. None when nothing but blanks precedes the first heading."""
    first = placed[0].cut if placed else None
    text, page_starts = text_between(parsed, Cut(1, 0), first)
    if not _WORDS.search(text):
        return None
    if first is None:
        end, level = len(parsed.pages), 1
    else:
        end, level = max(page_starts[-1][0], first.page - 1, 1), PREFACE_LEVEL
    return TreeNode("", cover_title, 1, end, level, text=text, page_starts=page_starts)


def _end_page(placed: list[_Placed], index: int, last_page: int) -> int:
    level = placed[index].node.level
    start = placed[index].cut.page
    for later in placed[index + 1 :]:
        if later.node.level <= level:
            end = later.cut.page - 1 if later.at_top else later.cut.page
            return max(start, end)
    return last_page


def _preface_title(parsed: ParsedDocument) -> str:
    """The first page's first title block, else its first short line, else the file name."""
    first = parsed.pages[0].blocks if parsed.pages else []
    titles = [b.text for b in first if b.kind == "title"]
    lines = [
        b.text for b in first if 0 < len(b.text) <= MAX_TITLE_CHARS and b.text[-1] not in ".,;"
    ]
    return _short((titles or lines or [parsed.name])[0])


def _number(tree: DocumentTree) -> None:
    for index, node in enumerate(tree.walk()):
        node.node_id = f"{index:04d}"


def _fill_text(placed: list[_Placed], parsed: ParsedDocument) -> None:
    """Each heading's own text: from its position to the next heading's."""
    for index, item in enumerate(placed):
        end = placed[index + 1].cut if index + 1 < len(placed) else None
        item.node.text, item.node.page_starts = text_between(parsed, item.cut, end)


def _children_summary(node: TreeNode) -> str:
    titles = [child.title for child in node.nodes]
    return f"Sections: {'; '.join(titles)}." if titles else ""


def link_chunks(
    tree: DocumentTree, owners: Sequence[tuple[Cut, TreeNode]], chunks: Sequence[TextNode]
) -> None:
    """Each chunk to the node whose text its first character is in; `owners` are the nodes
    with where their text starts."""
    ordered = sorted(owners, key=lambda owner: (owner[0].page, owner[0].offset))
    for chunk in chunks:
        position = (page_of(chunk), start_of(chunk))
        owner = ordered[0][1] if ordered else None
        for cut, node in ordered:
            if (cut.page, cut.offset) > position:
                break
            owner = node
        if owner is not None:
            _link(tree, owner, chunk)


def _link(tree: DocumentTree, owner: TreeNode, chunk: TextNode) -> None:
    owner.chunk_ids.append(chunk.node_id)
    point_chunk_to_node(tree, owner, chunk)


def point_chunk_to_node(tree: DocumentTree, owner: TreeNode, chunk: TextNode) -> None:
    """The chunk's side of the link: `tree_node` metadata (kept out of embed and LLM text) and
    a PARENT relationship to the section."""
    chunk.metadata[TREE_NODE] = owner.node_id
    for keys in (chunk.excluded_embed_metadata_keys, chunk.excluded_llm_metadata_keys):
        if TREE_NODE not in keys:
            keys.append(TREE_NODE)
    chunk.relationships[NodeRelationship.PARENT] = RelatedNodeInfo(
        node_id=tree_section_id(tree.doc_id, owner.node_id), metadata={"title": owner.title}
    )
