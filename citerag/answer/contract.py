"""The answer contract: what the CLI prints, the HTTP API returns and the evaluation reads.

`to_dict()` produces exactly the camelCase shape of ARCHITECTURE.md (seeds 000 and 001), and
every highlight satisfies `content[startOffset:endOffset] == text`. A source's `content` is at
most MAX_SOURCE_CHARS (a section-tree source can be a whole chapter): a longer one is cut to the
window around its first highlight, the highlights' offsets moved with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NotRequired, TypedDict

from llama_index.core.schema import BaseNode, NodeWithScore

from citerag.nodes import (
    HIGHLIGHTS,
    boxes_of,
    doc_name_of,
    ocr_confidence_of,
    page_label_of,
    page_of,
    section_of,
    tree_section_of,
)
from citerag.types import BBox, Highlight, JSONObject

MAX_SOURCE_CHARS = 12_000  # above any chunk of the default 1024 tokens; bounds tree sections
MAX_TITLE_CHARS = 300


class HighlightRecord(TypedDict):
    text: str
    startOffset: int
    endOffset: int


class BoxRecord(TypedDict):
    page: int
    x0: float
    y0: float
    x1: float
    y1: float


class SourceMetadataRecord(TypedDict):
    ocr: bool
    ocrConfidence: float


class SourceRecord(TypedDict):
    id: str
    documentName: str
    pageNumber: int
    pageLabel: str
    title: str
    content: str
    score: float
    citationNumber: int
    highlights: list[HighlightRecord]
    boxes: list[BoxRecord]
    metadata: NotRequired[SourceMetadataRecord]
    # a section-tree source (tree mode): the node cited, its summary, first and last pages
    nodeId: NotRequired[str]
    summary: NotRequired[str]
    pageIndex: NotRequired[int]
    endIndex: NotRequired[int]


class UnsupportedRecord(TypedDict):
    number: str
    claim: str
    citations: list[int]


class MetadataRecord(TypedDict):
    processingTime: int
    model: str
    tokensUsed: int
    retrievalMethod: str
    numChunksRetrieved: int
    reranked: bool
    subQuestions: list[JSONObject]
    numbersChecked: int
    unsupportedNumbers: list[UnsupportedRecord]
    documentRouting: NotRequired[list[str]]
    condensedQuestion: NotRequired[str]
    condenseMethod: NotRequired[str]
    condenseNote: NotRequired[str]
    searchHistory: NotRequired[list[JSONObject]]  # tree mode's steps


class AnswerRecord(TypedDict):
    """The answer contract as JSON (ARCHITECTURE.md)."""

    answer: str
    sources: list[SourceRecord]
    metadata: MetadataRecord


@dataclass(frozen=True)
class TreeSection:
    """The section-tree node a tree-mode source cites."""

    node_id: str
    summary: str
    start_page: int  # the section's first page (`pageIndex`)
    end_page: int  # its last (`endIndex`)


@dataclass
class Source:
    id: str
    document_name: str
    page_number: int
    title: str  # the section the chunk belongs to
    content: str
    score: float
    citation_number: int
    highlights: list[Highlight] = field(default_factory=list)
    boxes: list[BBox] = field(default_factory=list)
    page_label: str = ""  # the number printed on the page; its sheet number when none is
    ocr_confidence: float | None = None  # read by OCR: its words' mean confidence (0-100)
    section: TreeSection | None = None  # tree mode's sources: the tree node cited

    def to_dict(self) -> SourceRecord:
        content, highlights = windowed(self.content, self.highlights, MAX_SOURCE_CHARS)
        record: SourceRecord = {
            "id": self.id,
            "documentName": self.document_name,
            "pageNumber": self.page_number,
            "pageLabel": self.page_label or str(self.page_number),
            "title": self.title[:MAX_TITLE_CHARS],
            "content": content,
            "score": float(self.score),
            "citationNumber": self.citation_number,
            "highlights": [
                {"text": h.text, "startOffset": h.startOffset, "endOffset": h.endOffset}
                for h in highlights
            ],
            "boxes": [
                {"page": self.page_number, "x0": box.x0, "y0": box.y0, "x1": box.x1, "y1": box.y1}
                for box in self.boxes
            ],
        }
        if self.ocr_confidence is not None:
            record["metadata"] = {"ocr": True, "ocrConfidence": self.ocr_confidence}
        if self.section is not None:
            record["nodeId"] = self.section.node_id
            record["summary"] = self.section.summary
            record["pageIndex"] = self.section.start_page
            record["endIndex"] = self.section.end_page
        return record


def windowed(
    content: str, highlights: Sequence[Highlight], limit: int
) -> tuple[str, list[Highlight]]:
    """At most `limit` characters of `content`, from a word boundary a little before the first
    highlight, with the highlights that fit, their offsets into the window."""
    if len(content) <= limit:
        return content, list(highlights)
    anchor = highlights[0].startOffset if highlights else 0  # the first is the one cited first
    slack = limit // 10
    start = max(0, min(anchor - slack, len(content) - limit))
    space = content.find(" ", start, min(anchor, start + slack))
    start = space + 1 if start > 0 and space >= 0 else start
    end = start + limit
    fitting = [h.endOffset for h in highlights if start <= h.startOffset and h.endOffset <= end]
    space = content.rfind(" ", max([end - slack, *fitting]), end)
    end = space if end < len(content) and space > start else end
    kept = [
        Highlight(h.text, h.startOffset - start, h.endOffset - start)
        for h in highlights
        if start <= h.startOffset and h.endOffset <= end
    ]
    return content[start:end], kept


@dataclass
class AnswerMetadata:
    processing_time_ms: int = 0
    model: str = ""
    tokens_used: int = 0
    retrieval_method: str = "hybrid"
    num_chunks_retrieved: int = 0
    reranked: bool = False
    sub_questions: list[JSONObject] = field(default_factory=list)
    numbers_checked: int = 0  # numbers of the answer looked for in its cited sources
    # those not found: {"number", "claim", "citations"} each (`citerag.answer.number_check`)
    unsupported_numbers: list[UnsupportedRecord] = field(default_factory=list)
    # A conversation's turn (citerag.query.conversation): the standalone question answered,
    # how it was condensed ("none", "offline", "llm") and why the LLM's rewrite was not used.
    condensed_question: str = ""
    condense_method: str = ""
    condense_note: str = ""
    # The documents the question named, searched first, and why (citerag.retrieve.routing).
    document_routing: list[str] = field(default_factory=list)
    search_history: list[JSONObject] = field(default_factory=list)  # tree mode's steps

    def to_dict(self) -> MetadataRecord:
        data: MetadataRecord = {
            "processingTime": self.processing_time_ms,
            "model": self.model,
            "tokensUsed": self.tokens_used,
            "retrievalMethod": self.retrieval_method,
            "numChunksRetrieved": self.num_chunks_retrieved,
            "reranked": self.reranked,
            "subQuestions": list(self.sub_questions),
            "numbersChecked": self.numbers_checked,
            "unsupportedNumbers": list(self.unsupported_numbers),
        }
        if self.document_routing:
            data["documentRouting"] = list(self.document_routing)
        if self.condense_method:
            data["condensedQuestion"] = self.condensed_question
            data["condenseMethod"] = self.condense_method
            if self.condense_note:
                data["condenseNote"] = self.condense_note
        if self.search_history:
            data["searchHistory"] = list(self.search_history)
        return data


@dataclass
class AnswerResult:
    answer: str
    sources: list[Source] = field(default_factory=list)
    metadata: AnswerMetadata = field(default_factory=AnswerMetadata)

    def to_dict(self) -> AnswerRecord:
        return {
            "answer": self.answer,
            "sources": [source.to_dict() for source in self.sources],
            "metadata": self.metadata.to_dict(),
        }


def sources_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Source]:
    """One source per node, numbered 1..n in the given order, keeping only exact highlights."""
    return [_source(number, scored) for number, scored in enumerate(nodes, start=1)]


def in_reading_order(sources: Sequence[Source]) -> list[Source]:
    """The sources by document and page (the order an answerer reads them in), each keeping
    its citation number, which is its rank."""
    return sorted(sources, key=lambda s: (s.document_name, s.page_number, s.citation_number))


def _source(number: int, scored: NodeWithScore) -> Source:
    node = scored.node
    content = node.get_content()
    highlights = [
        Highlight(h["text"], int(h["startOffset"]), int(h["endOffset"]))
        for h in node.metadata.get(HIGHLIGHTS, [])
    ]
    return Source(
        id=node.node_id,
        document_name=doc_name_of(node),
        page_number=page_of(node),
        title=section_of(node),
        content=content,
        score=float(scored.score or 0.0),
        citation_number=number,
        highlights=[h for h in highlights if _round_trips(content, h)],
        boxes=boxes_of(node),
        page_label=page_label_of(node),
        ocr_confidence=ocr_confidence_of(node),
        section=_tree_section(node),
    )


def _tree_section(node: BaseNode) -> TreeSection | None:
    section = tree_section_of(node)
    if section is None:
        return None
    return TreeSection(
        section["node_id"], section["summary"], section["start_page"], section["end_page"]
    )


def _round_trips(content: str, highlight: Highlight) -> bool:
    start, end = highlight.startOffset, highlight.endOffset
    return 0 <= start < end <= len(content) and content[start:end] == highlight.text
