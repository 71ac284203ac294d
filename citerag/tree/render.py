"""A tree as an indented outline for the terminal."""

from __future__ import annotations

from citerag.tree.model import DocumentTree


def outline_text(tree: DocumentTree) -> str:
    lines = [f"{tree.doc_name} (section tree from {tree.source})"]

    for node, depth in tree.walk_with_depth():
        pages = f"p. {node.start_index}" + (
            f"-{node.end_index}" if node.end_index != node.start_index else ""
        )
        lines.append(f"{'  ' * depth}[{node.node_id}] {node.title}  ({pages})")
    return "\n".join(lines)
