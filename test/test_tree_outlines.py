"""Trees of the shared PDFs against outlines labelled by reading them (test/data/outlines)."""

from __future__ import annotations

import pytest
from helpers import PROJECT_DIR, shared_eval_file
from test_tree import words

from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.tree.build import build_tree
from citerag.tree.evaluate import load_outline, score_tree
from citerag.tree.schema import tree_errors

OUTLINES = PROJECT_DIR / "test" / "data" / "outlines"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("folder", "pdf", "minimum"),
    [
        ("career_ai", "eBook-How-to-Build-a-Career-in-AI.pdf", 0.9),
        ("finance", "NETFLIX_2020_10K.pdf", 0.9),
        ("finance", "MICROSOFT_2021_10K.pdf", 0.9),
        ("paul_graham", "paul_graham_essay.pdf", 0.0),
    ],
)
def test_heading_precision_and_recall(folder: str, pdf: str, minimum: float) -> None:
    path = shared_eval_file(folder, pdf)
    parsed = PyMuPDFParser().parse(path, "x" * 64)
    tree = build_tree(path, parsed)
    score = score_tree(tree, load_outline(OUTLINES / pdf.replace(".pdf", ".json")))
    assert score.precision >= minimum, score.unmatched_predictions
    assert score.recall >= minimum, score.missed_labels
    assert score.span_accuracy >= minimum
    assert tree_errors(tree.to_pageindex(with_text=True)) == []
    assert words(n.text for n in tree.walk()) == words(p.text for p in parsed.pages)  # none lost
    for node in tree.walk():  # a node's text lies on its pages, so the pages it cites do
        assert all(node.start_index <= pg <= node.end_index for pg, _ in node.page_starts), node
