"""The answer contract: what the CLI prints, the HTTP API returns and the evaluation reads.

`to_dict()` produces exactly the camelCase shape of ARCHITECTURE.md (seeds 000 and 001), and
every highlight satisfies `content[startOffset:endOffset] == text`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from llama_index.core.schema import NodeWithScore

from citerag.nodes import HIGHLIGHTS, boxes_of, doc_name_of, page_of, section_of
from citerag.types import BBox, Highlight


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "documentName": self.document_name,
            "pageNumber": self.page_number,
            "title": self.title,
            "content": self.content,
            "score": float(self.score),
            "citationNumber": self.citation_number,
            "highlights": [
                {"text": h.text, "startOffset": h.startOffset, "endOffset": h.endOffset}
                for h in self.highlights
            ],
            "boxes": [{"page": self.page_number, **box.to_dict()} for box in self.boxes],
        }


@dataclass
class AnswerMetadata:
    processing_time_ms: int = 0
    model: str = ""
    tokens_used: int = 0
    retrieval_method: str = "hybrid"
    num_chunks_retrieved: int = 0
    reranked: bool = False
    sub_questions: list[Any] = field(default_factory=list)
    numbers_checked: int = 0  # numbers of the answer looked for in its cited sources
    # those not found: {"number", "claim", "citations"} each (`citerag.answer.number_check`)
    unsupported_numbers: list[dict[str, object]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
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


@dataclass
class AnswerResult:
    answer: str
    sources: list[Source] = field(default_factory=list)
    metadata: AnswerMetadata = field(default_factory=AnswerMetadata)

    def to_dict(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "sources": [source.to_dict() for source in self.sources],
            "metadata": self.metadata.to_dict(),
        }


def sources_from_nodes(nodes: Sequence[NodeWithScore]) -> list[Source]:
    """One source per node, numbered 1..n in the given order, keeping only exact highlights."""
    return [_source(number, scored) for number, scored in enumerate(nodes, start=1)]


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
    )


def _round_trips(content: str, highlight: Highlight) -> bool:
    start, end = highlight.startOffset, highlight.endOffset
    return 0 <= start < end <= len(content) and content[start:end] == highlight.text
