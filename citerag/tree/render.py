"""A tree as an indented outline for the terminal."""

from __future__ import annotations

from citerag.tree.model import DocumentTree, TreeNode


def outline_text(tree: DocumentTree) -> str:
    lines = [f"{tree.doc_name} (section tree from {tree.source})"]

    def visit(node: TreeNode, depth: int) -> None:
        pages = f"p. {node.start_index}" + (
            f"-{node.end_index}" if node.end_index != node.start_index else ""
        )
        lines.append(f"{'  ' * depth}[{node.node_id}] {node.title}  ({pages})")
        for child in node.nodes:
            visit(child, depth + 1)

    for node in tree.structure:
        visit(node, 0)
    return "\n".join(lines)
