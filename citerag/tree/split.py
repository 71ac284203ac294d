"""Long sections split into page groups, so that a node's text fits in what a source shows.

A node whose own text is longer than MAX_NODE_CHARS over several pages keeps its first pages;
the rest becomes child nodes of whole pages, each at least GROUP_CHARS long (the last at least
MIN_LAST_CHARS, else it joins the one before), titled "<title> (p. 5-6)" and at level 0: they
are not headings, and the outline evaluation leaves them out. They come before the node's
heading children, as their text does in reading order. A document with no headings at all (the
essay) so offers its pages as sections to choose from, instead of one node whose text is cut
after its first pages.
"""

from __future__ import annotations

from citerag.tree.heading_text import Cut
from citerag.tree.model import MAX_NODE_CHARS, DocumentTree, TreeNode

GROUP_CHARS = 4000
MIN_LAST_CHARS = 1000
PAGE_GROUP_LEVEL = 0  # not a heading
MAX_TITLE_CHARS = 80


def split_long_nodes(tree: DocumentTree) -> list[tuple[Cut, TreeNode]]:
    """Split every long node in place; where each new node starts, for linking chunks."""
    starts: list[tuple[Cut, TreeNode]] = []
    for node in list(tree.walk()):
        bounds = _group_bounds(node)
        if len(bounds) < 2:
            continue
        groups = [_group_node(node, a, b) for a, b in bounds[1:]]
        node.text, node.page_starts = _slice(node, *bounds[0])
        node.nodes[:0] = groups
        starts += [(Cut(group.start_index, 0), group) for group in groups]
    return starts


def _group_bounds(node: TreeNode) -> list[tuple[int, int]]:
    """Offsets in the node's text where its page groups begin and end; one group when the
    text is short, on one page, or has no later page inside the node's span to start from."""
    if len(node.text) <= MAX_NODE_CHARS or len(node.page_starts) < 2:
        return [(0, len(node.text))]
    bounds: list[tuple[int, int]] = []
    begin = 0
    for page, at in node.page_starts[1:]:
        if page <= node.end_index and at - begin >= GROUP_CHARS:
            bounds.append((begin, at))
            begin = at
    if bounds and len(node.text) - begin < MIN_LAST_CHARS:
        bounds[-1] = (bounds[-1][0], len(node.text))  # a short tail joins the group before it
    else:
        bounds.append((begin, len(node.text)))
    return bounds


def _slice(node: TreeNode, begin: int, end: int) -> tuple[str, list[tuple[int, int]]]:
    """The node's text from `begin` to `end` (trailing blank lines dropped), its page starts
    shifted to match."""
    text = node.text[begin:end].rstrip()
    starts = [
        (page, at - begin) for page, at in node.page_starts if begin <= at < begin + len(text)
    ]
    return text, starts


def _group_node(node: TreeNode, begin: int, end: int) -> TreeNode:
    text, starts = _slice(node, begin, end)
    first = starts[0][0]
    last = min(starts[-1][0], node.end_index)
    pages = f"p. {first}" if first == last else f"p. {first}-{last}"
    base = node.title if len(node.title) <= MAX_TITLE_CHARS - 12 else node.title[:60] + "…"
    return TreeNode(
        "", f"{base} ({pages})", first, last, PAGE_GROUP_LEVEL, text=text, page_starts=starts
    )
