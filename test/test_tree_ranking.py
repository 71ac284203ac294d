"""How tree mode ranks files and sections, and which page a section's source cites."""

from __future__ import annotations

from test_tree import _tree

from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.pipeline import FileHits, rank_files, run_pipeline
from citerag.tree.search import offline_ranking


def _hits(name: str, best: float, relevant: bool = True) -> FileHits:
    return FileHits(name[0] * 64, name, {f"{name}-c": best}, relevant=relevant)


def test_a_file_the_question_names_comes_before_better_scored_ones() -> None:
    files = [_hits("NETFLIX_2020_10K.pdf", 0.9), _hits("MICROSOFT_2021_10K.pdf", 0.4)]
    ranked = rank_files(files, 2, "What was Microsoft's total revenue?")
    assert [f.name for f in ranked] == ["MICROSOFT_2021_10K.pdf", "NETFLIX_2020_10K.pdf"]


def test_years_in_file_names_do_not_decide_the_order() -> None:
    files = [_hits("NETFLIX_2020_10K.pdf", 0.4), _hits("MICROSOFT_2021_10K.pdf", 0.9)]
    ranked = rank_files(files, 2, "What was revenue in 2020?")
    assert ranked[0].name == "MICROSOFT_2021_10K.pdf"


def test_files_rank_by_their_best_chunk_not_their_number_of_hits() -> None:
    many_weak = FileHits("a" * 64, "a.pdf", {f"c{i}": 0.1 for i in range(8)})
    one_strong = FileHits("b" * 64, "b.pdf", {"s": 0.5})
    assert rank_files([many_weak, one_strong], 1)[0].name == "b.pdf"


def test_a_named_file_still_needs_a_keyword_hit() -> None:
    files = [_hits("MICROSOFT_2021_10K.pdf", 0.9, relevant=False), _hits("other.pdf", 0.2)]
    assert [f.name for f in rank_files(files, 3, "Microsoft revenue?")] == ["other.pdf"]


def _long_section_tree() -> DocumentTree:
    """One section over pages 10-12 with a chunk per page, and four small neighbours."""
    text = "Overview of the year.\n\nRevenue rose.\n\nCash flow from operations was $2 billion."
    section = TreeNode(
        "0000", "Results", 10, 12, 1, text=text, chunk_ids=["p10", "p11", "p12"],
        page_starts=[(10, 0), (11, 23), (12, 38)],
    )
    others = [TreeNode(f"{i:04d}", f"Note {i}", 13, 13, 1, text=f"Note {i}.") for i in range(1, 5)]
    return DocumentTree("a.pdf", "a" * 64, [section, *others])


def test_a_section_cites_the_page_of_its_best_retrieved_chunk() -> None:
    tree = _long_section_tree()
    hits = FileHits(
        tree.doc_id, tree.doc_name, {"p10": 0.1, "p12": 0.7, "p11": 0.3},
        chunk_pages={"p10": 10, "p11": 11, "p12": 12},
    )
    result = run_pipeline("What was the overview?", [hits], lambda _doc_id: tree)
    first = result.sources[0]
    assert first.node_id == "0000"  # type: ignore[attr-defined]
    assert first.page_number == 12  # the retriever's best chunk, not the first words matched


def test_a_section_without_retrieved_chunks_cites_its_first_highlight() -> None:
    tree = _long_section_tree()
    hits = FileHits(tree.doc_id, tree.doc_name, {"elsewhere": 0.2}, chunk_pages={"elsewhere": 1})
    result = run_pipeline("How much cash flow from operations?", [hits], lambda _d: tree)
    assert result.sources[0].page_number == 12


def test_one_strong_chunk_outranks_a_section_of_many_weak_ones() -> None:
    tree = _tree()
    tree.find("0003").chunk_ids.extend(["w1", "w2", "w3"])  # type: ignore[union-attr]
    scores = {"c3": 0.1, "w1": 0.2, "w2": 0.2, "w3": 0.2, "c2": 0.3}  # sum/sqrt(N+1): 0.31 > 0.21
    ranking = offline_ranking(tree, "unrelated words", scores)
    assert ranking[0][0] == "0002"


def test_a_sections_highlights_come_from_its_cited_page_when_one_there_matches() -> None:
    tree = _long_section_tree()
    hits = FileHits(
        tree.doc_id, tree.doc_name, {"p11": 0.2, "p12": 0.7},
        chunk_pages={"p11": 11, "p12": 12},
    )
    result = run_pipeline("What about revenue and cash?", [hits], lambda _doc_id: tree)
    first = result.sources[0]
    assert first.page_number == 12
    assert [h.text for h in first.highlights] == ["Cash flow from operations was $2 billion."]
