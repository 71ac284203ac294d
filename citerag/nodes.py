"""Chunks are LlamaIndex `TextNode`s; this module names their metadata and reads it typed.

A chunk node's `text` is a window of one page's text, `start_char_idx`/`end_char_idx` its
offsets in that page text. Metadata carries the document, page, section, block type, label,
boxes, sentence spans and (for table rows) the table's context: its statement title, period
and unit. Keys that are noise for an embedding or an LLM are excluded from their text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import NotRequired, TypedDict

from llama_index.core.schema import (
    BaseNode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)

from citerag.types import BBox, JSONObject, JSONValue, json_object

DOC_ID = "doc_id"
DOC_NAME = "doc_name"
PAGE = "page"
CHUNK_INDEX = "chunk_index"
SECTION = "section"
BLOCK_TYPE = "block_type"
LABEL = "label"
BOXES = "boxes"
SENTENCES = "sentences"
TABLE_CONTEXT = "table_context"
HIGHLIGHTS = "highlights"
ROUTED_BY = "routed_by"  # why retrieval searched this chunk's document first (question time)
PAGE_LABEL = "page_label"  # the number printed on the page, where the document gives one
OCR_CONFIDENCE = "ocr_confidence"  # read by OCR: its words' mean confidence (0-100)
# A section-tree source (tree mode): its node id, summary and first and last pages.
TREE_SECTION = "tree_section"
# The enrichment lists (`citerag.enrich.fields`), named here so the docstore, below enrichment,
# keeps their values in its value table.
YEARS = "years"
DATES = "dates"
MONEY = "money"
PERCENTS = "percents"
LABELS = "labels"  # "figure:1", "table:2", "equation:3": what the chunk defines (captions)
ENTITIES = "entities"  # named entities as written ("Paul Graham", "Viaweb")
TOPICS = "topics"  # LangExtract attributes as "attribute=value"
LIST_FIELDS = (YEARS, DATES, MONEY, PERCENTS, LABELS, ENTITIES, TOPICS)
# Not a list: a labelled chunk's "block_type:label" ("figure:3", "table_description:2"), kept in
# the docstore's value table beside the lists so the chunks defining a label are asked for.
LABELLED = "labelled"
# The metadata the value table is read from.
VALUE_SOURCES = (*LIST_FIELDS, BLOCK_TYPE, LABEL)

_BOOKKEEPING = [DOC_ID, CHUNK_INDEX, BOXES, SENTENCES, HIGHLIGHTS, BLOCK_TYPE, LABEL, ROUTED_BY]
# Set only on the chunks that have them, and never read by an embedder or an LLM, so that a
# born-digital page's chunks embed and read exactly as they did before labels and OCR.
_ONLY_WHERE_KNOWN = [PAGE_LABEL, OCR_CONFIDENCE]
EXCLUDED_FROM_EMBED = [*_BOOKKEEPING, DOC_NAME, PAGE]
EXCLUDED_FROM_LLM = list(_BOOKKEEPING)


def fold(value: object) -> str:
    """A list value as filters and the docstore's value table match it: case-blind."""
    return str(value).casefold()


def folded(values: Iterable[object]) -> list[str]:
    """Distinct values, case-folded (`fold`), in order."""
    return list(dict.fromkeys(fold(v) for v in values))


def folded_values(metadata: Mapping[str, object]) -> Iterator[tuple[str, str]]:
    """(field, folded value) for each distinct value of the chunk's enrichment lists, and its
    `LABELLED` value where it has a label."""
    for key in LIST_FIELDS:
        held = metadata.get(key)
        if isinstance(held, list | tuple):
            for value in folded(held):
                yield key, value
    if metadata.get(LABEL):
        yield LABELLED, fold(f"{metadata.get(BLOCK_TYPE)}:{metadata[LABEL]}")


class NodeHighlight(TypedDict):
    """A highlight a postprocessor put on a node, under `HIGHLIGHTS`."""

    text: str
    startOffset: int
    endOffset: int
    score: float
    sentence: NotRequired[int]  # its sentence's index in the node (sentence highlights)


def chunk_node(
    *,
    node_id: str,
    doc_id: str,
    doc_name: str,
    page: int,
    chunk_index: int,
    text: str,
    start: int,
    section: str = "",
    block_type: str = "text",
    label: str = "",
    boxes: Sequence[BBox] = (),
    sentences: Sequence[tuple[int, int]] = (),
    table_context: str = "",
    page_label: str = "",
    ocr_confidence: float | None = None,
) -> TextNode:
    metadata: JSONObject = {
        DOC_ID: doc_id,
        DOC_NAME: doc_name,
        PAGE: page,
        CHUNK_INDEX: chunk_index,
        SECTION: section,
        BLOCK_TYPE: block_type,
        LABEL: label,
        BOXES: [box.to_dict() for box in boxes],
        SENTENCES: [[a, b] for a, b in sentences],
    }
    if table_context:
        metadata[TABLE_CONTEXT] = table_context
    extra: JSONObject = {PAGE_LABEL: page_label, OCR_CONFIDENCE: ocr_confidence}
    known = [key for key in _ONLY_WHERE_KNOWN if extra[key] not in ("", None)]
    metadata.update({key: extra[key] for key in known})
    node = TextNode(
        id_=node_id,
        text=text,
        start_char_idx=start,
        end_char_idx=start + len(text),
        metadata=metadata,
        excluded_embed_metadata_keys=[*EXCLUDED_FROM_EMBED, *known],
        excluded_llm_metadata_keys=[*EXCLUDED_FROM_LLM, *known],
    )
    node.relationships[NodeRelationship.SOURCE] = RelatedNodeInfo(node_id=doc_id)
    return node


def link_neighbours(nodes: Sequence[TextNode]) -> None:
    """PREV/NEXT relationships in reading order."""
    for previous, following in zip(nodes, nodes[1:], strict=False):
        previous.relationships[NodeRelationship.NEXT] = RelatedNodeInfo(node_id=following.node_id)
        following.relationships[NodeRelationship.PREVIOUS] = RelatedNodeInfo(
            node_id=previous.node_id
        )


def chunk_key(doc_id: str, number: int) -> str:
    """The id of the document's chunk numbered `number` (in reading order, from 0)."""
    return f"{doc_id[:16]}-{number:05d}"


def page_vector_key(doc_id: str, page: int) -> str:
    """Where a page's head vector is kept (beside the sentence vectors of its chunks)."""
    return f"{page_vector_prefix(doc_id)}{page:05d}"


def page_vector_prefix(doc_id: str) -> str:
    return f"{doc_id[:16]}-page"


def doc_id_of(node: BaseNode) -> str:
    return str(node.metadata[DOC_ID])


def doc_name_of(node: BaseNode) -> str:
    return str(node.metadata.get(DOC_NAME, ""))


def page_of(node: BaseNode) -> int:
    return int(node.metadata[PAGE])


class TreeSectionRecord(TypedDict):
    """A tree-mode source's section, under `TREE_SECTION`."""

    node_id: str
    summary: str
    start_page: int
    end_page: int


def tree_section_of(node: BaseNode) -> TreeSectionRecord | None:
    value = node.metadata.get(TREE_SECTION)
    if not isinstance(value, dict):
        return None
    return {
        "node_id": str(value["node_id"]),
        "summary": str(value["summary"]),
        "start_page": int(value["start_page"]),
        "end_page": int(value["end_page"]),
    }


def page_label_of(node: BaseNode) -> str:
    """The page's printed number, else its sheet number (1-based)."""
    return str(node.metadata.get(PAGE_LABEL) or node.metadata.get(PAGE, ""))


def ocr_confidence_of(node: BaseNode) -> float | None:
    """The mean confidence of the chunk's OCR'd words, None when it was not read by OCR."""
    value = node.metadata.get(OCR_CONFIDENCE)
    return float(value) if isinstance(value, int | float) else None


def chunk_index_of(node: BaseNode) -> int:
    return int(node.metadata.get(CHUNK_INDEX, 0))


def section_of(node: BaseNode) -> str:
    return str(node.metadata.get(SECTION, ""))


def block_type_of(node: BaseNode) -> str:
    return str(node.metadata.get(BLOCK_TYPE, "text"))


def label_of(node: BaseNode) -> str:
    return str(node.metadata.get(LABEL, ""))


def table_context_of(node: BaseNode) -> str:
    return str(node.metadata.get(TABLE_CONTEXT, ""))


def boxes_of(node: BaseNode) -> list[BBox]:
    return [BBox(**box) for box in node.metadata.get(BOXES, [])]


def sentences_of(node: BaseNode) -> list[tuple[int, int]]:
    return [(int(a), int(b)) for a, b in node.metadata.get(SENTENCES, [])]


def text_of(node: BaseNode) -> str:
    return node.get_content()


def start_of(node: TextNode) -> int:
    return int(node.start_char_idx or 0)


def neighbour_id(node: BaseNode, relation: NodeRelationship) -> str | None:
    related = node.relationships.get(relation)
    return related.node_id if isinstance(related, RelatedNodeInfo) else None


def keyword_text(node: BaseNode) -> str:
    """What BM25 indexes: the section title, the table's context and the text itself."""
    parts = (section_of(node), table_context_of(node), text_of(node))
    return "\n".join(part for part in parts if part)


def to_record(node: TextNode) -> JSONObject:
    """A JSON-safe record for a docstore: flat keys for its indexes, the node as LlamaIndex
    serialises it."""
    return {
        "id": node.node_id,
        DOC_ID: doc_id_of(node),
        PAGE: page_of(node),
        CHUNK_INDEX: chunk_index_of(node),
        "node": node.to_dict(),
    }


def from_record(record: Mapping[str, JSONValue]) -> TextNode:
    return TextNode.from_dict(dict(json_object(record["node"])))
