"""The fixed multi-file pipeline (seed 003): rank files, load their trees, choose exactly 5
nodes per file (LLM or offline), fetch the nodes' text, answer with citations.

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

from citerag.answer.citations import normalize_citations
from citerag.answer.contract import (
    AnswerMetadata,
    AnswerResult,
    MetadataRecord,
    Source,
    SourceRecord,
)
from citerag.answer.extractive import ExtractiveCandidate, extractive_answer
from citerag.answer.llm_answer import LLMResult
from citerag.answer.prompts import ContextSource
from citerag.errors import RagError
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
Answer = Callable[[str, Sequence[ContextSource]], LLMResult]  # LLMAnswerer.answer


class TreeSourceRecord(SourceRecord):
    nodeId: str
    summary: str
    pageIndex: int
    endIndex: int


class TreeMetadataRecord(MetadataRecord):
    searchHistory: list[JSONObject]


@dataclass
class TreeSource(Source):
    node_id: str = ""
    summary: str = ""
    page_index: int = 0
    end_index: int = 0

    def to_dict(self) -> TreeSourceRecord:
        return {
            **super().to_dict(),
            "nodeId": self.node_id,
            "summary": self.summary,
            "pageIndex": self.page_index,
            "endIndex": self.end_index,
        }


@dataclass
class TreeMetadata(AnswerMetadata):
    search_history: list[JSONObject] = field(default_factory=list)

    def to_dict(self) -> TreeMetadataRecord:
        return {**super().to_dict(), "searchHistory": self.search_history}


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


def run_pipeline(
    question: str,
    files: Sequence[FileHits],
    load_tree: TreeLoader,
    chat: Chat | None = None,
    answer: Answer | None = None,
    top_k_files: int = TOP_K_FILES,
) -> AnswerResult:
    """`load_tree(doc_id)` gives a DocumentTree (or raises); `chat` selects nodes with an
    LLM; `answer(question, sources)` gives an LLMResult (None: extractive)."""
    started = time.perf_counter()
    history: list[JSONObject] = []
    chosen = rank_files(files, top_k_files, question)
    found: list[JSONValue] = [[f.name, round(f.score, 4), f.relevant] for f in files]
    history.append({"step": "file_search", "files": found})
    history.append({"step": "files_selected", "files": [f.name for f in chosen]})
    if not chosen:
        return AnswerResult(NO_FILES, [], _metadata(started, history, "", 0))
    trees = _load_trees(chosen, load_tree, history)
    sources: list[TreeSource] = []
    for hits, tree in trees:
        selection = _select(question, tree, hits, chat)
        history.append(_selection_entry(tree, selection))
        sources.extend(_sources(question, tree, selection, hits, start=len(sources) + 1))
    text, model, tokens = _compose(question, sources, answer)
    return AnswerResult(text, list(sources), _metadata(started, history, model, tokens))


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


def _sources(
    question: str, tree: DocumentTree, selection: Selection, hits: FileHits, start: int
) -> list[TreeSource]:
    """One source per chosen node, citing one page of it with highlights on that page."""
    sources: list[TreeSource] = []
    for rank, node_id in enumerate(selection.node_ids):
        node = tree.find(node_id)
        if node is None:
            continue
        content = node_content(node)
        page, picked = cited_page(question, node, content, evidence_pages(node, hits))
        highlights = [p.highlight for p in picked]
        sources.append(
            TreeSource(
                id=f"{tree.doc_id[:16]}-tree-{node.node_id}",
                document_name=tree.doc_name,
                page_number=page,
                title=node.title,
                content=content.text,
                score=max((p.score for p in picked), default=0.0) + 1.0 / math.sqrt(rank + 1),
                citation_number=start + len(sources),
                highlights=highlights,
                node_id=node.node_id,
                summary=node.summary,
                page_index=node.start_index,
                end_index=node.end_index,
            )
        )
    return sources


def _compose(
    question: str, sources: Sequence[TreeSource], answer: Answer | None
) -> tuple[str, str, int]:
    if answer is not None and sources:
        result = answer(question, sources)
        return normalize_citations(result.text, sources), result.model, result.tokens_used
    candidates = [
        ExtractiveCandidate(s.citation_number, s.page_number, h.startOffset, h.text, s.score)
        for s in sources
        for h in s.highlights
    ]
    return extractive_answer(candidates), "extractive (no LLM configured)", 0


def _metadata(started: float, history: list[JSONObject], model: str, tokens: int) -> TreeMetadata:
    return TreeMetadata(
        processing_time_ms=round((time.perf_counter() - started) * 1000),
        model=model,
        tokens_used=tokens,
        retrieval_method="tree",
        num_chunks_retrieved=0,
        reranked=False,
        search_history=history,
    )
