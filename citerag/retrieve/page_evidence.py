"""Pages as evidence: a page's key, its text rebuilt from its chunks, and what keyword search
indexes of a document (each chunk and each page).

A page is evidence in its own right: a financial statement is a page that is almost all table,
and what makes it findable is the page as a whole (its title, period and rows together), which no
single row chunk carries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field

from llama_index.core.schema import TextNode

from citerag.nodes import (
    BLOCK_TYPE,
    doc_id_of,
    keyword_text,
    page_of,
    page_vector_key,
    start_of,
)
from citerag.store.keywords import KeywordEntry


@dataclass(frozen=True, slots=True)
class PageKey:
    doc_id: str
    page: int
    # Made with the key: a collection state keys its lookups by it, page by page.
    id: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "id", page_vector_key(self.doc_id, self.page))


def page_texts(nodes: Sequence[TextNode]) -> tuple[list[PageKey], list[str]]:
    """Each page's text, rebuilt from its chunks' offsets (overlaps merged), in reading order.
    A figure's description node is not page text (the vision model wrote it)."""
    by_page: dict[PageKey, list[TextNode]] = defaultdict(list)
    for node in nodes:
        if node.metadata.get(BLOCK_TYPE) == "figure_description":
            continue
        by_page[PageKey(doc_id_of(node), page_of(node))].append(node)
    keys = list(by_page)
    return keys, [merged_text(by_page[key]) for key in keys]


def merged_text(nodes: Sequence[TextNode]) -> str:
    pieces, covered = [], 0
    for node in sorted(nodes, key=start_of):
        start, text = start_of(node), node.text
        if start + len(text) <= covered:
            continue
        pieces.append(text[max(0, covered - start) :])
        covered = start + len(text)
    return "\n".join(pieces)


def keyword_entries(nodes: Sequence[TextNode]) -> list[KeywordEntry]:
    """What keyword search indexes of a document's chunks: each chunk, then each page."""
    entries = [KeywordEntry(n.node_id, "chunk", keyword_text(n)) for n in nodes]
    keys, texts = page_texts(nodes)
    entries += [KeywordEntry(k.id, "page", t) for k, t in zip(keys, texts, strict=True)]
    return entries
