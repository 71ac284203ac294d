"""Tree mode's search: rank files, load their trees, choose exactly 5 nodes per file (LLM or
offline) and fetch the nodes' text; the answer is composed above those sections by the same
synthesizer as every other mode (`citerag.answer.synthesizer`).

Sources are sections: they carry `nodeId`, `title`, `summary`, `pageIndex` (first page) and
`endIndex` besides the answer contract's fields, and their highlights are sentences of the
section text (`content[startOffset:endOffset] == text`). `metadata.searchHistory` records each
step.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citerag.answer.contract import AnswerMetadata, AnswerResult
from citerag.answer.synthesizer import Answerer, CitedSynthesizer, answer_from_response
from citerag.errors import RagError
from citerag.nodes import (
    DOC_ID,
    DOC_NAME,
    HIGHLIGHTS,
    PAGE,
    SECTION,
    TREE_SECTION,
    NodeHighlight,
    TreeSectionRecord,
)
from citerag.retrieve.highlights import ScoredHighlight, select_highlights, split_sentences
from citerag.tools.tree_search import (
    Chat,
    Selection,
    fill_selection,
    llm_selection,
    offline_ranking,
    terms,
)
from citerag.tree.model import MAX_NODE_CHARS, DocumentTree, TreeNode
from citerag.types import JSONObject, JSONValue

log = logging.getLogger(__name__)
NO_FILES = "no relevant files found"
TOP_K_FILES = 3
TreeLoader = Callable[[str], DocumentTree]  # doc_id -> its stored tree (or raises)


@dataclass
class FileHits:
    doc_id: str
    name: str
    chunk_scores: dict[str, float]
    relevant: bool = True  # False: its chunks share no term with the question
    chunk_pages: dict[str, int] = field(default_factory=dict)  # chunk id -> its first page

    @property
    def score(self) -> float:
        """The file's best chunk score: one strong passage outranks many weak ones."""
        return max(self.chunk_scores.values(), default=0.0)


def rank_files(hits: Sequence[FileHits], top_k_files: int, question: str = "") -> list[FileHits]:
    """Relevant files, those whose name the question uses first (a question about
    "Microsoft's revenue" is about MICROSOFT_2021_10K.pdf), then by their best chunk."""
    asked = {word for word in terms(question) if not word.isdigit()}
    relevant = [h for h in hits if h.chunk_scores and h.relevant]
    ranked = sorted(relevant, key=lambda h: (not asked & terms(_stem(h.name)), -h.score))
    return ranked[:top_k_files]


def _stem(file_name: str) -> str:
    """A file name's words: "MICROSOFT_2021_10K.pdf" -> "MICROSOFT 2021 10K"."""
    return re.sub(r"[_\W]+", " ", file_name.rsplit(".", 1)[0])


@dataclass
class SectionSearch:
    """The sections tree mode cites, best first, and each step that chose them."""

    nodes: list[NodeWithScore]
    history: list[JSONObject]
    files: list[FileHits]  # the files whose trees were searched


def run_pipeline(
    question: str,
    files: Sequence[FileHits],
    load_tree: TreeLoader,
    chat: Chat | None = None,
    answerer: Answerer | None = None,
    top_k_files: int = TOP_K_FILES,
) -> AnswerResult:
    """`load_tree(doc_id)` gives a DocumentTree (or raises); `chat` selects nodes with an
    LLM; `answerer` writes the answer (None: extractive). The sections found are composed into
    the answer by the synthesizer every mode answers with."""
    started = time.perf_counter()
    found = search_sections(question, files, load_tree, chat, top_k_files)
    if not found.files:
        elapsed = round((time.perf_counter() - started) * 1000)
        metadata = AnswerMetadata(processing_time_ms=elapsed, model="", retrieval_method="tree")
        metadata.search_history = found.history
        return AnswerResult(NO_FILES, [], metadata)
    synthesizer = CitedSynthesizer(answerer)
    # Sections are not chunks: none is counted as retrieved, and no scorer reorders them.
    response = synthesizer.synthesize(
        QueryBundle(question),
        found.nodes,
        retrieved=0,
        started=started,
        reranked=False,
        retrieval_method="tree",
    )
    result = answer_from_response(response)
    result.metadata.search_history = found.history
    return result


def search_sections(
    question: str,
    files: Sequence[FileHits],
    load_tree: TreeLoader,
    chat: Chat | None = None,
    top_k_files: int = TOP_K_FILES,
) -> SectionSearch:
    """The best files' trees searched for the sections that answer `question`: five per file,
    each a node citing one page of its section with highlights on that page."""
    history: list[JSONObject] = []
    chosen = rank_files(files, top_k_files, question)
    found: list[JSONValue] = [[f.name, round(f.score, 4), f.relevant] for f in files]
    history.append({"step": "file_search", "files": found})
    history.append({"step": "files_selected", "files": [f.name for f in chosen]})
    if not chosen:
        return SectionSearch([], history, [])
    nodes: list[NodeWithScore] = []
    for hits, tree in _load_trees(chosen, load_tree, history):
        selection = _select(question, tree, hits, chat)
        history.append(_selection_entry(tree, selection))
        nodes.extend(_section_nodes(question, tree, selection, hits))
    return SectionSearch(nodes, history, chosen)


def _load_trees(
    chosen: Sequence[FileHits],
    load_tree: TreeLoader,
    history: list[JSONObject],
) -> list[tuple[FileHits, DocumentTree]]:
    trees: list[tuple[FileHits, DocumentTree]] = []
    for hits in chosen:
        try:
            tree = load_tree(hits.doc_id)
        except Exception as error:  # noqa: BLE001 - one broken tree must not sink the others
            log.warning("%s: its section tree could not be loaded (%s); skipped", hits.name, error)
            history.append({"step": "tree_load_failed", "file": hits.name, "error": str(error)})
            continue
        trees.append((hits, tree))
        history.append({"step": "tree_loaded", "file": hits.name, "nodes": len(tree.node_ids())})
    if not trees:
        names = ", ".join(h.name for h in chosen)
        raise RagError(
            f"No section tree could be loaded for {names}; ingest the documents again to "
            "build their trees."
        )
    return trees


def _select(question: str, tree: DocumentTree, hits: FileHits, chat: Chat | None) -> Selection:
    ranking = offline_ranking(tree, question, hits.chunk_scores)
    if chat is None:
        return Selection(fill_selection([], ranking), "offline")
    return llm_selection(chat, tree, question, ranking)


def _selection_entry(tree: DocumentTree, selection: Selection) -> JSONObject:
    return {
        "step": "nodes_selected",
        "file": tree.doc_name,
        "method": selection.method,
        "node_ids": selection.node_ids,
        "invalid_ids": selection.invalid_ids,
        "retried": selection.retried,
        "thinking": selection.thinking,
        "error": selection.error,
    }


@dataclass(frozen=True)
class NodeContent:
    """The text a source shows for a node, and where each of its pages starts in that text."""

    text: str
    page_starts: list[tuple[int, int]]  # (page, offset in text), in reading order

    def page_at(self, offset: int, default: int) -> int:
        """The page of the character at `offset` (`default` when no page start is known)."""
        page = default
        for number, start in self.page_starts:
            if start <= offset:
                page = number
        return page

    def pages(self) -> list[int]:
        return list(dict.fromkeys(page for page, _ in self.page_starts))


def node_content(node: TreeNode) -> NodeContent:
    """The node's own text, or its descendants' when it has none of its own (a part heading
    alone on its page), cut at MAX_NODE_CHARS, with page starts that match the cut text."""
    own = node.text.strip()
    pieces = [(node.text, node.page_starts)] if own else _descendant_pieces(node)
    text, starts = _joined(pieces)
    if not text:
        return NodeContent((node.summary or node.title)[:MAX_NODE_CHARS], [])
    text = text[:MAX_NODE_CHARS]
    return NodeContent(text, [(page, at) for page, at in starts if at < len(text)])


def _descendant_pieces(node: TreeNode) -> list[tuple[str, list[tuple[int, int]]]]:
    return [(n.text, n.page_starts) for n in node.walk()]


def _joined(
    pieces: Sequence[tuple[str, list[tuple[int, int]]]],
) -> tuple[str, list[tuple[int, int]]]:
    """Stripped texts joined by blank lines, their page starts shifted to match."""
    parts: list[str] = []
    starts: list[tuple[int, int]] = []
    cursor = 0
    for text, page_starts in pieces:
        body = text.strip()
        if not body:
            continue
        lead = len(text) - len(text.lstrip())
        cursor += 2 if parts else 0
        starts += [
            (p, cursor + max(0, at - lead)) for p, at in page_starts if at - lead < len(body)
        ]
        parts.append(body)
        cursor += len(body)
    return "\n\n".join(parts), starts


def evidence_pages(node: TreeNode, hits: FileHits) -> list[int]:
    """The pages of the node's chunks that the retriever scored, best score first."""
    own = node.chunk_ids if node.text.strip() else [c for n in node.walk() for c in n.chunk_ids]
    scored = [(hits.chunk_scores[c], c) for c in own if c in hits.chunk_scores]
    scored.sort(key=lambda item: -item[0])
    pages = [hits.chunk_pages[c] for _, c in scored if c in hits.chunk_pages]
    return list(dict.fromkeys(pages))


def cited_page(
    question: str, node: TreeNode, content: NodeContent, evidence: Sequence[int]
) -> tuple[int, list[ScoredHighlight]]:
    """The page a section's source cites, and its highlights. The first evidence page (best
    retriever score first) holding a sentence that matches the question, with highlights from
    that page only; else the section's best-matching sentences, citing the first one's page;
    else the best evidence page, without highlights."""
    sentences = split_sentences(content.text)
    pages = [content.page_at(start, node.start_index) for start, _end in sentences]
    for page in evidence:
        on_page = [span for span, at in zip(sentences, pages, strict=True) if at == page]
        if not on_page:  # an empty list would make select_highlights read the whole section
            continue
        picked = select_highlights(question, content.text, on_page, None, None, k=3)
        if picked:
            return page, picked
    picked = select_highlights(question, content.text, sentences, None, None, k=3)
    if picked:
        return content.page_at(picked[0].highlight.startOffset, node.start_index), picked
    return next(iter(evidence), node.start_index), []


def _section_nodes(
    question: str, tree: DocumentTree, selection: Selection, hits: FileHits
) -> list[NodeWithScore]:
    """One node per chosen section, citing one page of it with highlights on that page."""
    nodes: list[NodeWithScore] = []
    for rank, node_id in enumerate(selection.node_ids):
        node = tree.find(node_id)
        if node is None:
            continue
        content = node_content(node)
        page, picked = cited_page(question, node, content, evidence_pages(node, hits))
        score = max((p.score for p in picked), default=0.0) + 1.0 / math.sqrt(rank + 1)
        section = _section_node(tree, node, content, page, picked, score)
        nodes.append(NodeWithScore(node=section, score=score))
    return nodes


def _section_node(
    tree: DocumentTree,
    node: TreeNode,
    content: NodeContent,
    page: int,
    picked: Sequence[ScoredHighlight],
    score: float,
) -> TextNode:
    """The section as a source node. Its highlights carry the section's score: the selection
    ranks sections, and the extractive answer weighs a section's sentences by that rank."""
    highlights: list[NodeHighlight] = [
        {
            "text": p.highlight.text,
            "startOffset": p.highlight.startOffset,
            "endOffset": p.highlight.endOffset,
            "score": score,
        }
        for p in picked
    ]
    section: TreeSectionRecord = {
        "node_id": node.node_id,
        "summary": node.summary,
        "start_page": node.start_index,
        "end_page": node.end_index,
    }
    metadata = {
        DOC_ID: tree.doc_id,
        DOC_NAME: tree.doc_name,
        PAGE: page,
        SECTION: node.title,
        HIGHLIGHTS: highlights,
        TREE_SECTION: section,
    }
    return TextNode(
        id_=f"{tree.doc_id[:16]}-tree-{node.node_id}", text=content.text, metadata=metadata
    )
