"""Long sections split into page groups: no text lost, pages mapped, spans inside the parent,
and the groups are not counted as headings."""

from __future__ import annotations

from citerag.tree.evaluate import score_tree
from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.schema import tree_errors
from citerag.tree.split import GROUP_CHARS, split_long_nodes


def _long_section(pages: int, chars_per_page: int) -> DocumentTree:
    filler = "word " * (chars_per_page // 5)
    texts = [f"Page {p} says {filler}".strip() for p in range(1, pages + 1)]
    text = "\n\n".join(texts)
    starts = [(p, text.index(f"Page {p} says")) for p in range(1, pages + 1)]
    child = TreeNode("", "Later heading", pages, pages, 2, text="Later heading text.")
    root = TreeNode("", "Essay", 1, pages, 1, text=text, page_starts=starts, nodes=[child])
    return DocumentTree("essay.pdf", "e" * 64, [root])


def test_a_long_section_becomes_page_groups_in_reading_order() -> None:
    tree = _long_section(pages=10, chars_per_page=2500)
    original = tree.structure[0].text
    cuts = split_long_nodes(tree)
    root = tree.structure[0]
    groups = [node for node in root.nodes if node.level == 0]
    assert len(groups) >= 3 and root.nodes[-1].title == "Later heading"
    assert root.text.startswith("Page 1 says") and len(root.text) >= GROUP_CHARS
    assert "\n\n".join([root.text, *(g.text for g in groups)]) == original
    for group, (cut, node) in zip(groups, cuts, strict=True):
        assert node is group and cut.offset == 0 and cut.page == group.start_index
        assert group.text.startswith(f"Page {group.start_index} says")
        assert group.title == f"Essay (p. {group.start_index}-{group.end_index})"
        assert all(group.text[at:].startswith(f"Page {p} ") for p, at in group.page_starts)
    for index, node in enumerate(tree.walk()):
        node.node_id = f"{index:04d}"
    assert tree_errors(tree.to_pageindex(with_text=True)) == []
    outline = {
        "headings": [
            {"title": "Essay", "start_index": 1, "end_index": 10},
            {"title": "Later heading", "start_index": 10, "end_index": 10},
        ]
    }
    score = score_tree(tree, outline)
    assert (score.precision, score.recall) == (1.0, 1.0)  # page groups are not headings


def test_short_sections_and_one_page_sections_stay_whole() -> None:
    short = _long_section(pages=3, chars_per_page=1000)
    one_page = _long_section(pages=1, chars_per_page=9000)
    assert split_long_nodes(short) == [] and split_long_nodes(one_page) == []
    assert [n.title for n in short.walk()] == ["Essay", "Later heading"]
