"""How tree mode ranks files and sections, and which page a section's source cites."""

from __future__ import annotations

from test_tree import _tree

from citerag.answer.contract import Source
from citerag.tools.tree_mode import FileHits, rank_files, run_pipeline
from citerag.tools.tree_search import offline_ranking
from citerag.tree.model import DocumentTree, TreeNode


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
    pages = [
        "Revenue overview for the year.",
        "Revenue rose in every region.",
        "Revenue was $2 billion, and cash flow from operations was $1 billion.",
    ]
    text = "\n\n".join(pages)
    starts = [0, len(pages[0]) + 2, len(pages[0]) + len(pages[1]) + 4]
    section = TreeNode(
        "0000",
        "Results",
        10,
        12,
        1,
        text=text,
        chunk_ids=["p10", "p11", "p12"],
        page_starts=list(zip([10, 11, 12], starts, strict=True)),
    )
    others = [TreeNode(f"{i:04d}", f"Note {i}", 13, 13, 1, text=f"Note {i}.") for i in range(1, 5)]
    return DocumentTree("a.pdf", "a" * 64, [section, *others])


def _cited(
    question: str, scores: dict[str, float], extra_pages: dict[str, int] | None = None
) -> Source:
    tree = _long_section_tree()
    tree.structure[0].chunk_ids.extend(extra_pages or {})
    pages = {"p10": 10, "p11": 11, "p12": 12, "elsewhere": 1, **(extra_pages or {})}
    hits = FileHits(tree.doc_id, tree.doc_name, scores, chunk_pages=pages)
    first = run_pipeline(question, [hits], lambda _doc_id: tree).sources[0]
    assert first.section is not None and first.section.node_id == "0000"
    for h in first.highlights:  # every highlight lies on the cited page (a sentence a page)
        assert h.text.startswith(_PAGE_TEXT[first.page_number])
    return first


_PAGE_TEXT = {10: "Revenue overview", 11: "Revenue rose", 12: "Revenue was"}


def test_a_section_cites_the_page_of_its_best_retrieved_chunk() -> None:
    first = _cited("What was the revenue?", {"p10": 0.1, "p12": 0.7, "p11": 0.3})
    assert first.page_number == 12  # the retriever's best chunk, not the first words matched
    assert [h.text for h in first.highlights] == [
        "Revenue was $2 billion, and cash flow from operations was $1 billion."
    ]


def test_the_best_evidence_page_with_a_matching_sentence_is_cited() -> None:
    first = _cited("What was the revenue overview?", {"p12": 0.7, "p10": 0.3})
    assert first.page_number == 12  # "revenue" matches there too
    first = _cited("Give the overview.", {"p12": 0.7, "p10": 0.3})
    assert first.page_number == 10  # nothing on page 12 matches "overview"


def test_a_section_without_retrieved_chunks_cites_its_first_highlight() -> None:
    first = _cited("How much cash flow from operations?", {"elsewhere": 0.2})
    assert first.page_number == 12


def test_one_strong_chunk_outranks_a_section_of_many_weak_ones() -> None:
    tree = _tree()
    tree.find("0003").chunk_ids.extend(["w1", "w2", "w3"])  # type: ignore[union-attr]
    scores = {"c3": 0.1, "w1": 0.2, "w2": 0.2, "w3": 0.2, "c2": 0.3}  # sum/sqrt(N+1): 0.31 > 0.21
    ranking = offline_ranking(tree, "unrelated words", scores)
    assert ranking[0][0] == "0002"


def test_an_evidence_page_outside_the_section_text_is_passed_over() -> None:
    # p13 is a chunk of the section whose page the section's text does not reach
    first = _cited("What was the revenue?", {"p13": 0.9, "p11": 0.3}, extra_pages={"p13": 13})
    assert first.page_number == 11
