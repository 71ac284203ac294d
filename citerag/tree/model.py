"""The section tree of a document, PageIndex-style, and its JSON form.

A node covers pages `start_index`..`end_index` (1-based, inclusive) and knows the chunks of its
own text (before its first child). Node ids are "0000", "0001", ... in depth-first order. The
JSON export is PageIndex's: `{"doc_name", "structure": [node, ...]}`, each node with `title`,
`node_id`, `start_index`, `end_index`, `summary`, `nodes` and, when asked, `text`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from citerag.types import JSONObject, JSONValue, json_int, json_list, json_object

MAX_NODE_CHARS = 6000  # the most of a node's text a source shows (longer nodes are split)


@dataclass
class TreeNode:
    node_id: str
    title: str
    start_index: int
    end_index: int
    level: int = 1
    summary: str = ""
    text: str = ""  # the node's own text, children excluded
    chunk_ids: list[str] = field(default_factory=list)
    page_starts: list[tuple[int, int]] = field(default_factory=list)  # (page, offset in text)
    nodes: list[TreeNode] = field(default_factory=list)

    def walk(self) -> Iterator[TreeNode]:
        yield self
        for child in self.nodes:
            yield from child.walk()

    def walk_with_depth(self, depth: int = 0) -> Iterator[tuple[TreeNode, int]]:
        yield self, depth
        for child in self.nodes:
            yield from child.walk_with_depth(depth + 1)

    def full_text(self) -> str:
        """The node's text with its descendants' text, in reading order."""
        parts = [self.text.strip()] + [child.full_text() for child in self.nodes]
        return "\n\n".join(part for part in parts if part)

    def to_dict(self, with_text: bool = False) -> JSONObject:
        data: JSONObject = {
            "title": self.title,
            "node_id": self.node_id,
            "start_index": self.start_index,
            "end_index": self.end_index,
            "summary": self.summary,
        }
        if with_text:
            data["text"] = self.text
            data["chunk_ids"] = list(self.chunk_ids)
        data["nodes"] = [child.to_dict(with_text) for child in self.nodes]
        return data

    def to_record(self) -> JSONObject:
        """Everything, for the docstore (the JSON export plus level and page offsets)."""
        data = self.to_dict(with_text=True)
        data["level"] = self.level
        data["page_starts"] = [[page, offset] for page, offset in self.page_starts]
        data["nodes"] = [child.to_record() for child in self.nodes]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue], level: int = 1) -> TreeNode:
        return cls(
            node_id=str(data["node_id"]),
            title=str(data["title"]),
            start_index=json_int(data["start_index"]),
            end_index=json_int(data["end_index"]),
            level=json_int(data.get("level", level)),
            summary=str(data.get("summary", "")),
            text=str(data.get("text", "")),
            chunk_ids=[str(c) for c in json_list(data.get("chunk_ids", []))],
            page_starts=[_page_start(pair) for pair in json_list(data.get("page_starts", []))],
            nodes=[
                cls.from_dict(json_object(child), level + 1)
                for child in json_list(data.get("nodes", []))
            ],
        )


@dataclass
class DocumentTree:
    doc_name: str
    doc_id: str
    structure: list[TreeNode]
    source: str = "layout"  # "outline" (the PDF's bookmarks) or "layout" (headings found)

    def walk(self) -> Iterator[TreeNode]:
        for node in self.structure:
            yield from node.walk()

    def walk_with_depth(self) -> Iterator[tuple[TreeNode, int]]:
        """Every node depth-first with its depth, 0 for the top nodes."""
        for node in self.structure:
            yield from node.walk_with_depth()

    def find(self, node_id: str) -> TreeNode | None:
        return next((node for node in self.walk() if node.node_id == node_id), None)

    def node_ids(self) -> list[str]:
        return [node.node_id for node in self.walk()]

    def parent_of(self, node_id: str) -> TreeNode | None:
        for node in self.walk():
            if any(child.node_id == node_id for child in node.nodes):
                return node
        return None

    def to_pageindex(self, with_text: bool = False) -> JSONObject:
        """PageIndex's JSON: `{"doc_name", "structure"}`."""
        return {
            "doc_name": self.doc_name,
            "structure": [node.to_dict(with_text) for node in self.structure],
        }

    def to_record(self) -> JSONObject:
        return {
            "doc_name": self.doc_name,
            "doc_id": self.doc_id,
            "source": self.source,
            "structure": [node.to_record() for node in self.structure],
        }

    @classmethod
    def from_record(cls, data: Mapping[str, JSONValue]) -> DocumentTree:
        """A tree from `to_record()` or from PageIndex's JSON (`to_pageindex()`)."""
        return cls(
            doc_name=str(data["doc_name"]),
            doc_id=str(data.get("doc_id", "")),
            structure=[
                TreeNode.from_dict(json_object(node)) for node in json_list(data["structure"])
            ],
            source=str(data.get("source", "layout")),
        )


def _page_start(pair: JSONValue) -> tuple[int, int]:
    page, offset = json_list(pair)
    return json_int(page), json_int(offset)
