"""A PageIndex tree made elsewhere, read as PageIndex writes it and fitted to a stored document.

PageIndex's JSON (`{"doc_name", "structure": [node, ...]}`, or the bare list) is accepted as its
tools and the seeds show it: nodes without `node_id` get the free ids in depth-first order
(given ids are kept), a node's pages come from `start_index`/`end_index` or a single
`page_index` (or `physical_index`), `text` is the node's own text when given, a node without a
title or pages takes a placeholder title or its children's/parent's pages. Spans that run
backwards are turned round and parents are widened to hold their children, each such fix
reported. A page outside the PDF is an InputError: the tree belongs to another document.
Nodes without `text` take the stored page text of the pages no child covers, and every node
lists the chunks on those pages, so tree mode searches and cites it like a built tree.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

from citerag.errors import InputError
from citerag.nodes import page_of
from citerag.retrieve.page_evidence import merged_text
from citerag.text.bounded import load_json, read_bounded
from citerag.tree.heading_text import extractive_summary
from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.schema import tree_errors

IMPORTED = "pageindex"  # DocumentTree.source of a tree imported from PageIndex's JSON
UNTITLED = "Untitled section"
# What a tree file may hold. PageIndex's trees are a few levels deep with a node per section;
# past these a file is not a document's outline (and would cost minutes and GBs to read).
MAX_TREE_FILE_BYTES = 64 * 2**20  # a 5,000-page document's tree with every node's text fits
MAX_TREE_LEVELS = 64
MAX_TREE_NODES = 20_000
MAX_TITLE_CHARS = 1_000
MAX_PAGE_NUMBER = 10**6  # more pages than any PDF this engine reads (and never a 5,000-digit one)
# A node nests two JSON levels below its parent (`nodes`, then itself), under the file's object
# and `structure` list; its own `nodes` (empty at the last level) or `chunk_ids` is one more.
MAX_TREE_JSON_DEPTH = 2 * MAX_TREE_LEVELS + 2
_ID = re.compile(r"^\d{4,12}$")
_PHYSICAL = re.compile(r"(\d+)")


@dataclass
class _Draft:
    """One node as read, before ids and pages are settled."""

    path: str  # where it sits in the JSON, for messages: "structure[2].nodes[1]"
    node_id: str
    title: str
    start: int | None
    end: int | None
    summary: str
    text: str | None
    children: list[_Draft] = field(default_factory=list)

    def walk(self) -> Iterator[_Draft]:
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass
class ImportedTree:
    tree: DocumentTree
    fixes: list[str]  # what was repaired, one sentence each


def read_pageindex_file(path: Path) -> Any:
    """The JSON of `path` (at most MAX_TREE_FILE_BYTES, nested at most MAX_TREE_JSON_DEPTH),
    or a one-sentence InputError."""
    data = read_bounded(path, MAX_TREE_FILE_BYTES, "Tree file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise InputError(f"{path} is not JSON ({error}); give PageIndex's JSON output.") from None
    return load_json(
        text, MAX_TREE_JSON_DEPTH, f"Tree file {path}", f"a tree of {MAX_TREE_LEVELS} levels"
    )


def import_pageindex(
    data: Any,
    doc_name: str,
    doc_id: str,
    page_count: int,
    chunks: Sequence[TextNode],
) -> ImportedTree:
    """PageIndex's JSON fitted to a stored document of `page_count` pages and its `chunks`."""
    structure = data.get("structure") if isinstance(data, dict) else data
    if not isinstance(structure, list) or not structure:
        raise InputError(
            "The tree file has no 'structure' list of nodes; give PageIndex's JSON output "
            '({"doc_name": ..., "structure": [...]}).'
        )
    budget = _Budget()
    drafts = [_read_node(node, f"structure[{i}]", 1, budget) for i, node in enumerate(structure)]
    fixes: list[str] = []
    _assign_ids(drafts, fixes)
    _check_pages(drafts, page_count, doc_name)
    for draft in drafts:
        _settle_pages(draft, None, fixes)
    texts = _page_texts(chunks)
    nodes = [_tree_node(draft, 1, texts, _chunks_by_page(chunks)) for draft in drafts]
    tree = DocumentTree(doc_name, doc_id, nodes, IMPORTED)
    problems = tree_errors(tree.to_pageindex(with_text=True), ordered_ids=False)
    if problems:
        raise InputError(f"The imported tree is malformed ({problems[0]}); fix the JSON.")
    return ImportedTree(tree, fixes)


class _Budget:
    """Counts the nodes read, refusing the tree once it holds more than MAX_TREE_NODES."""

    def __init__(self) -> None:
        self.nodes = 0

    def take(self) -> None:
        self.nodes += 1
        if self.nodes > MAX_TREE_NODES:
            raise InputError(
                f"The tree has more than {MAX_TREE_NODES:,} nodes, more than a document's "
                "outline holds; give PageIndex's tree of the document's sections."
            )


def _read_node(data: Any, path: str, level: int, budget: _Budget) -> _Draft:
    if not isinstance(data, dict):
        raise InputError(f"{path} is not a JSON object; every tree node must be one.")
    budget.take()
    children = data.get("nodes") or []
    if not isinstance(children, list):
        raise InputError(f"{path}.nodes is not a list; give the node's children as a list.")
    if children and level >= MAX_TREE_LEVELS:
        raise InputError(
            f"{path} has children below level {MAX_TREE_LEVELS}, the deepest a tree may go; "
            "give a flatter tree."
        )
    title = str(data.get("title") or "").strip()
    if len(title) > MAX_TITLE_CHARS:
        raise InputError(
            f"{path}.title is {len(title):,} characters long; a section title may have at most "
            f"{MAX_TITLE_CHARS:,}."
        )
    start = _page_number(data, "start_index", path)
    end = _page_number(data, "end_index", path)
    single = _page_number(data, "page_index", path) or _page_number(data, "physical_index", path)
    text = data.get("text")
    return _Draft(
        path=path,
        node_id=_node_id(data.get("node_id"), path),
        title=title,
        start=start if start is not None else single,
        end=end if end is not None else single,
        summary=str(data.get("summary") or ""),
        text=str(text) if isinstance(text, str) else None,
        children=[
            _read_node(child, f"{path}.nodes[{i}]", level + 1, budget)
            for i, child in enumerate(children)
        ],
    )


def _page_number(data: Mapping[str, Any], key: str, path: str) -> int | None:
    """A page number: an integer, a digit string or PageIndex's "<physical_index_5>"."""
    value = data.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, str) and (found := _PHYSICAL.search(value)):
        digits = found.group(1).lstrip("0") or "0"
        value = int(digits) if len(digits) <= len(str(MAX_PAGE_NUMBER)) else MAX_PAGE_NUMBER + 1
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_PAGE_NUMBER:
        raise InputError(
            f"{path}.{key} is larger than any page number (over {MAX_PAGE_NUMBER:,}); give the "
            "node's page in the PDF."
        )
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise InputError(f"{path}.{key} is {_shown(value)}; a page number must be 1 or more.")
    return value


def _shown(value: Any, limit: int = 40) -> str:
    text = repr(value) if not isinstance(value, int) or abs(value) < 10**limit else "a huge number"
    return text if len(text) <= limit else f"{text[:limit]}…"


def _node_id(value: Any, path: str) -> str:
    if value is None or value == "":
        return ""
    if isinstance(value, int) and not isinstance(value, bool):
        text = f"{value:04d}" if 0 <= value < 10**12 else ""  # str() of 5,000 digits fails
    else:
        text = str(value)
    if not _ID.match(text):
        raise InputError(
            f"{path}.node_id is {_shown(value)}; PageIndex ids are digits such as '0007'."
        )
    return text


def _assign_ids(drafts: list[_Draft], fixes: list[str]) -> None:
    """Given ids kept (each once); missing ones get the lowest free ids, depth first."""
    every = [draft for root in drafts for draft in root.walk()]
    taken: set[str] = set()
    for draft in every:
        if draft.node_id in taken:
            raise InputError(f"node_id {draft.node_id!r} appears twice; node ids must be unique.")
        if draft.node_id:
            taken.add(draft.node_id)
    free = (f"{n:04d}" for n in range(len(every) + len(taken) + 1) if f"{n:04d}" not in taken)
    missing = [draft for draft in every if not draft.node_id]
    for draft in missing:
        draft.node_id = next(free)
    if missing:
        shown = ", ".join(d.node_id for d in missing)
        fixes.append(f"{len(missing)} node(s) had no node_id and got {shown} (depth first).")
    for draft in every:
        if not draft.title:
            draft.title = f"{UNTITLED} {draft.node_id}"
            fixes.append(f"node {draft.node_id} had no title and is called {draft.title!r}.")


def _settle_pages(draft: _Draft, parent: tuple[int, int] | None, fixes: list[str]) -> None:
    """Every node gets a forward span; a node without pages takes its parent's, then its
    children's are settled and its own span widened to hold them."""
    if draft.start is None and draft.end is None and parent is not None:
        draft.start, draft.end = parent
    draft.start = draft.start if draft.start is not None else draft.end
    draft.end = draft.end if draft.end is not None else draft.start
    if draft.start is not None and draft.end is not None and draft.end < draft.start:
        fixes.append(
            f"node {draft.node_id} ran backwards (pages {draft.start}-{draft.end}); "
            f"it now covers {draft.end}-{draft.start}."
        )
        draft.start, draft.end = draft.end, draft.start
    own = (draft.start, draft.end) if draft.start is not None and draft.end is not None else None
    for child in draft.children:
        _settle_pages(child, own, fixes)
    spans = [(c.start, c.end) for c in draft.children if c.start is not None and c.end is not None]
    if own is None and not spans:
        raise InputError(
            f"{draft.path} ({draft.title!r}) has no pages; give start_index and end_index."
        )
    low = min([s for s, _ in spans] + ([own[0]] if own else []))
    high = max([e for _, e in spans] + ([own[1]] if own else []))
    if own is not None and (low, high) != own:
        fixes.append(
            f"node {draft.node_id} covered pages {own[0]}-{own[1]} but its sections reach "
            f"{low}-{high}; it now covers {low}-{high}."
        )
    draft.start, draft.end = low, high


def _check_pages(drafts: list[_Draft], page_count: int, doc_name: str) -> None:
    """Every page a node names (as given, before any repair) exists in the PDF."""
    for draft in (d for root in drafts for d in root.walk()):
        pages = [p for p in (draft.start, draft.end) if p is not None]
        if pages and max(pages) > page_count:
            shown = "-".join(str(p) for p in dict.fromkeys(pages))
            raise InputError(
                f"Node {draft.node_id} ({draft.title!r}) names pages {shown} but {doc_name} has "
                f"{page_count}; this tree belongs to another document."
            )


def _page_texts(chunks: Sequence[TextNode]) -> dict[int, str]:
    by_page: dict[int, list[TextNode]] = {}
    for chunk in chunks:
        by_page.setdefault(page_of(chunk), []).append(chunk)
    return {page: merged_text(nodes) for page, nodes in by_page.items()}


def _chunks_by_page(chunks: Sequence[TextNode]) -> dict[int, list[str]]:
    found: dict[int, list[str]] = {}
    for chunk in chunks:
        found.setdefault(page_of(chunk), []).append(chunk.node_id)
    return found


def _tree_node(
    draft: _Draft, level: int, texts: dict[int, str], chunk_ids: dict[int, list[str]]
) -> TreeNode:
    assert draft.start is not None and draft.end is not None  # settled by _settle_pages
    covered = {p for c in draft.children for p in range(c.start or 0, (c.end or -1) + 1)}
    own_pages = [p for p in range(draft.start, draft.end + 1) if p not in covered]
    if draft.text is not None:
        text, starts = draft.text, [(draft.start, 0)]
    else:
        text, starts = _joined(own_pages, texts)
    node = TreeNode(
        node_id=draft.node_id,
        title=draft.title,
        start_index=draft.start,
        end_index=draft.end,
        level=level,
        summary=draft.summary or extractive_summary(draft.title, text),
        text=text,
        chunk_ids=[c for page in own_pages for c in chunk_ids.get(page, [])],
        page_starts=starts,
    )
    node.nodes = [_tree_node(child, level + 1, texts, chunk_ids) for child in draft.children]
    return node


def _joined(pages: list[int], texts: dict[int, str]) -> tuple[str, list[tuple[int, int]]]:
    """The pages' stored text joined by a blank line, with where each page starts."""
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    cursor = 0
    for page in pages:
        page_text = texts.get(page, "")
        if not page_text:
            continue
        starts.append((page, cursor))
        parts.append(page_text)
        cursor += len(page_text) + 2
    return "\n\n".join(parts), starts
