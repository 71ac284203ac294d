"""Section tree: JSON export and round-trip, schema, heading numbering, offline tree search and
the fixed pipeline, and the LLM node selection against a loopback OpenAI-compatible server."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

import pytest
from fake_openai_server import ScriptedReply, running_server
from helpers import DEMO_PDF, PROJECT_DIR
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from citerag.answer.llm_answer import LLMAnswerer
from citerag.answer.synthesizer import EXTRACTIVE_MODEL, CitedSynthesizer, answer_from_response
from citerag.errors import RagError
from citerag.nodes import HIGHLIGHTS, chunk_node
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.settings import Settings
from citerag.tools.tree_mode import NO_FILES, FileHits, run_pipeline
from citerag.tools.tree_search import (
    Chat,
    fill_selection,
    llm_selection,
    offline_ranking,
    parse_selection,
)
from citerag.tree.build import build_tree
from citerag.tree.evaluate import load_outline, score_tree
from citerag.tree.model import DocumentTree, TreeNode
from citerag.tree.patterns import numbering, split_part_prefix
from citerag.tree.schema import schema_errors, tree_errors

OUTLINES = PROJECT_DIR / "test" / "data" / "outlines"


def _tree(name: str = "a.pdf", doc_id: str = "d" * 64) -> DocumentTree:
    liquidity = TreeNode(
        "0002",
        "Liquidity and Capital Resources",
        5,
        6,
        3,
        summary="Cash and debt.",
        text="Cash was $8.2 billion at year end.",
        chunk_ids=["c2"],
        page_starts=[(5, 0)],
    )
    item7 = TreeNode(
        "0001",
        "Item 7. MD&A",
        4,
        6,
        2,
        summary="Results.",
        text="Revenue grew 24% in 2020.",
        chunk_ids=["c1"],
        page_starts=[(4, 0)],
        nodes=[liquidity],
    )
    part = TreeNode("0000", "PART II", 4, 8, 1, nodes=[item7])
    risks = TreeNode(
        "0003",
        "Item 1A. Risk Factors",
        7,
        8,
        2,
        text="Competition is intense.",
        chunk_ids=["c3"],
        page_starts=[(7, 0)],
    )
    part.nodes.append(risks)
    extra = [TreeNode(f"{i:04d}", f"Note {i}", 8, 8, 1, text=f"Note text {i}.") for i in (4, 5, 6)]
    return DocumentTree(name, doc_id, [part, *extra])


def test_pageindex_json_validates_and_round_trips() -> None:
    tree = _tree()
    exported = tree.to_pageindex(with_text=True)
    assert tree_errors(exported) == []
    again = DocumentTree.from_record(json.loads(json.dumps(exported)))
    assert again.to_pageindex(with_text=True) == exported
    stored = DocumentTree.from_record(json.loads(json.dumps(tree.to_record())))
    assert stored.to_record() == tree.to_record()


def test_schema_rejects_missing_fields_bad_ids_and_bad_spans() -> None:
    data = _tree().to_pageindex()
    del data["structure"][0]["title"]
    data["structure"][1]["node_id"] = "x1"
    assert any("missing 'title'" in e for e in schema_errors(data))
    assert any("does not match" in e for e in schema_errors(data))
    spans = _tree().to_pageindex()
    spans["structure"][0]["nodes"][0]["end_index"] = 20
    assert any("outside its parent" in e for e in tree_errors(spans))


def test_numbering_patterns() -> None:
    assert numbering("Item 7A. Quantitative") is not None
    assert numbering("PART II").key == "part ii"  # type: ignore[union-attr]
    assert numbering("3.1 Rank fusion").depth == 2  # type: ignore[union-attr]
    assert numbering("CHAPTER 3").kind == "chapter"  # type: ignore[union-attr]
    assert numbering("Revenue grew") is None
    assert split_part_prefix("PART II Item 5. Market") == ["PART II", "Item 5. Market"]


def test_demo_tree_matches_its_labelled_outline() -> None:
    parsed = PyMuPDFParser().parse(DEMO_PDF, "demo")
    tree = build_tree(DEMO_PDF, parsed)
    score = score_tree(tree, load_outline(OUTLINES / "citerag_demo.json"))
    assert (score.precision, score.recall, score.span_accuracy) == (1.0, 1.0, 1.0)
    rank_fusion = next(n for n in tree.walk() if n.title.startswith("3.1"))
    assert tree.parent_of(rank_fusion.node_id).title == "3 Retrieval"  # type: ignore[union-attr]
    assert "reciprocal rank fusion" in rank_fusion.text
    assert rank_fusion.summary and tree_errors(tree.to_pageindex(with_text=True)) == []


def words(texts: Iterable[str]) -> Counter[str]:
    return Counter(word for text in texts for word in re.findall(r"\w+", text))


def test_title_above_the_first_heading_is_a_preamble_node_and_no_word_is_lost() -> None:
    parsed = PyMuPDFParser().parse(DEMO_PDF, "demo")
    chunks = [TextNode(text="CiteRAG: Cited", metadata={"page": 1}, start_char_idx=0)]
    tree = build_tree(DEMO_PDF, parsed, chunks)
    preamble = tree.structure[0]
    assert (preamble.node_id, preamble.start_index, preamble.end_index) == ("0000", 1, 1)
    assert preamble.title == "CiteRAG: Cited Answers from PDF Documents"
    assert "A technical note on the retrieval engine" in preamble.text
    assert words(node.text for node in tree.walk()) == words(page.text for page in parsed.pages)
    assert chunks[0].metadata["tree_node"] == "0000"  # page 1's chunk starts in the preamble
    assert score_tree(tree, load_outline(OUTLINES / "citerag_demo.json")).precision == 1.0


def test_offline_ranking_uses_chunk_scores_and_titles() -> None:
    ranking = offline_ranking(_tree(), "liquidity and capital", {"c3": 0.2})
    assert ranking[0][0] == "0002"  # title match beats a weak chunk hit
    by_chunks = offline_ranking(_tree(), "unrelated words", {"c3": 0.9})
    assert by_chunks[0][0] == "0003"


def test_fill_selection_drops_invalid_and_fills_to_five() -> None:
    ranking = [(f"{i:04d}", 1.0 - i / 10) for i in range(7)]
    assert fill_selection(["0006", "9999", "0006", "0002"], ranking) == [
        "0006",
        "0002",
        "0000",
        "0001",
        "0003",
    ]


@pytest.mark.parametrize(
    "reply",
    [
        '{"thinking": "t", "node_list": ["0002", "0003"]}',
        'Sure!\n```json\n{"thinking": "t", "node_list": ["0002", "0003",],}\n```',
        "{'thinking': 't', 'node_list': ['0002', 3]}",
    ],
)
def test_parse_selection_repairs_common_breakage(reply: str) -> None:
    assert parse_selection(reply) == ("t", ["0002", "0003"])


def test_parse_selection_gives_up_on_prose() -> None:
    assert parse_selection("I think section two.") is None


@pytest.mark.parametrize(
    ("reply", "expected"),
    [  # digits other than 0-9, negative, huge or fractional numbers are no ids, never a crash
        ('{"node_list": ["\u00b2", "\u0663", "\u2460", " 7 ", "12"]}', ("", ["0007", "0012"])),
        ('{"node_list": [-1, 2.5, true, null, 10000000000, ["0001"], 3]}', ("", ["0003"])),
        ('{"node_list": ["' + "9" * 5000 + '", "0002"]}', ("", ["0002"])),
        # a number too long for Python's int() is no id; the ids beside it still count
        ('{"node_list": [' + "9" * 5000 + ', "0002"]}', ("", ["0002"])),
        ('{"node_list": ' + "[" * 100_000 + "]" * 100_000 + "}", None),  # too deep
    ],
)
def test_parse_selection_survives_hostile_ids(
    reply: str, expected: tuple[str, list[str]] | None
) -> None:
    assert parse_selection(reply) == expected


def test_hostile_selection_leaves_a_short_history() -> None:
    listed = ["9999"] * 50_000 + [f"{i:04d}" for i in range(100, 150)] + ["0001"]
    reply = json.dumps({"thinking": "x" * 100_000, "node_list": listed})
    ranking = [(i, 0.0) for i in _tree().node_ids()]
    chosen = llm_selection(lambda messages: reply, _tree(), "q?", ranking)
    assert chosen.node_ids == ["0001", "0000", "0002", "0003", "0004"]
    assert chosen.invalid_ids == ["9999", *[f"{i:04d}" for i in range(100, 119)]]
    assert len(chosen.thinking) == 500


def _files() -> list[FileHits]:
    return [FileHits("d" * 64, "a.pdf", {"c2": 0.5}), FileHits("e" * 64, "b.pdf", {"c9": 0.1})]


def _loader(doc_id: str) -> DocumentTree:
    return _tree("a.pdf" if doc_id.startswith("d") else "b.pdf", doc_id)


def test_offline_pipeline_gives_five_nodes_per_file_and_exact_highlights() -> None:
    result = run_pipeline("What was the cash at year end?", _files(), _loader)
    data = result.to_dict()
    by_file: dict[str, list[dict]] = {}
    for source in data["sources"]:
        by_file.setdefault(source["documentName"], []).append(source)
    assert {name: len(s) for name, s in by_file.items()} == {"a.pdf": 5, "b.pdf": 5}
    first = data["sources"][0]
    assert first["nodeId"] == "0002" and first["pageIndex"] == 5 and first["endIndex"] == 6
    for source in data["sources"]:
        for h in source["highlights"]:
            assert source["content"][h["startOffset"] : h["endOffset"]] == h["text"]
    assert "[1]" in data["answer"]
    steps = [entry["step"] for entry in data["metadata"]["searchHistory"]]
    assert steps[:2] == ["file_search", "files_selected"] and steps.count("nodes_selected") == 2
    assert data["metadata"]["retrievalMethod"] == "tree"


def _chunk_answer(question: str) -> dict:
    """The answer the other modes compose over one highlighted chunk."""
    text = "Cash was $8.2 billion at year end."
    chunk = chunk_node(
        node_id="c1", doc_id="d" * 64, doc_name="a.pdf", page=5, chunk_index=0, text=text, start=0
    )
    chunk.metadata[HIGHLIGHTS] = [
        {"text": text, "startOffset": 0, "endOffset": len(text), "score": 1.0}
    ]
    scored = [NodeWithScore(node=chunk, score=1.0)]
    return dict(
        answer_from_response(CitedSynthesizer().synthesize(QueryBundle(question), scored)).to_dict()
    )


def test_tree_answers_carry_the_contract_of_every_other_mode() -> None:
    """Tree mode's sections go through the same synthesizer: the same answer, source and
    metadata fields, and only tree mode's own fields besides."""
    question = "What was the cash at year end?"
    tree = dict(run_pipeline(question, _files(), _loader).to_dict())
    other = _chunk_answer(question)
    assert set(tree) == set(other) == {"answer", "sources", "metadata"}
    section_fields = {"nodeId", "summary", "pageIndex", "endIndex"}
    assert tree["sources"] and all(
        set(source) == set(other["sources"][0]) | section_fields for source in tree["sources"]
    )
    assert "nodeId" not in other["sources"][0] and "searchHistory" not in other["metadata"]
    assert set(tree["metadata"]) == set(other["metadata"]) | {"searchHistory"}
    assert tree["metadata"]["model"] == other["metadata"]["model"] == EXTRACTIVE_MODEL
    numbers = [source["citationNumber"] for source in tree["sources"]]
    assert numbers == list(range(1, len(numbers) + 1))
    nothing = dict(run_pipeline(question, [], _loader).to_dict())
    assert set(nothing["metadata"]) == set(tree["metadata"])


def test_pipeline_without_files_and_with_broken_trees() -> None:
    assert run_pipeline("q?", [], _loader).answer == NO_FILES

    def half_broken(doc_id: str) -> DocumentTree:
        if doc_id.startswith("e"):
            raise ValueError("corrupt")
        return _loader(doc_id)

    result = run_pipeline("cash?", _files(), half_broken)
    assert {s.document_name for s in result.sources} == {"a.pdf"}

    def broken(doc_id: str) -> DocumentTree:
        raise ValueError("corrupt")

    with pytest.raises(RagError, match="No section tree could be loaded"):
        run_pipeline("cash?", _files(), broken)


def _llm_chat(base_url: str) -> Chat:
    settings = Settings(llm_provider="openai_like", llm_model="m", llm_base_url=base_url)
    answerer = LLMAnswerer.from_settings(settings.llm)
    assert answerer is not None
    return answerer.chat


def test_llm_selection_good_json() -> None:
    reply = '{"thinking": "liquidity is in MD&A", "node_list": ["0002", "0001"]}'
    with running_server([ScriptedReply(reply)]) as server:
        chosen = llm_selection(
            _llm_chat(server.base_url), _tree(), "cash?", offline_ranking(_tree(), "cash?", {})
        )
    assert chosen.method == "llm" and chosen.node_ids[:2] == ["0002", "0001"]
    assert len(chosen.node_ids) == 5 and not chosen.retried
    prompt = server.requests[0]["messages"][0]["content"]
    assert "[0002] p5-6 Liquidity and Capital Resources" in prompt
    assert "Cash was $8.2 billion" not in prompt  # the tree goes without its text


def test_llm_selection_broken_json_retries_once_then_repairs() -> None:
    replies = [
        ScriptedReply("node 2 looks right"),
        ScriptedReply('{"thinking": "t", "node_list": ["0003"]}'),
    ]
    with running_server(replies) as server:
        chosen = llm_selection(
            _llm_chat(server.base_url), _tree(), "risk?", [(i, 0.0) for i in _tree().node_ids()]
        )
    assert chosen.retried and chosen.node_ids[0] == "0003" and len(server.requests) == 2
    assert "not valid JSON" in server.requests[1]["messages"][-1]["content"]


def test_llm_selection_invented_ids_are_dropped_and_filled() -> None:
    reply = '{"thinking": "t", "node_list": ["0042", "0001", "abc"]}'
    with running_server([ScriptedReply(reply)]) as server:
        ranking = [(i, 0.0) for i in _tree().node_ids()]
        chosen = llm_selection(_llm_chat(server.base_url), _tree(), "q?", ranking)
    assert chosen.invalid_ids == ["0042"]
    assert chosen.node_ids == ["0001", "0000", "0002", "0003", "0004"]


def test_llm_selection_falls_back_offline_after_two_bad_replies() -> None:
    with running_server([ScriptedReply("nope"), ScriptedReply("still nope")]) as server:
        ranking = [(i, 0.0) for i in _tree().node_ids()]
        chosen = llm_selection(_llm_chat(server.base_url), _tree(), "q?", ranking)
    assert chosen.method == "offline" and chosen.error and len(chosen.node_ids) == 5


def test_labelled_outlines_are_well_formed() -> None:
    files = sorted(Path(OUTLINES).glob("*.json"))
    assert len(files) == 5
    for path in files:
        data = load_outline(path)
        assert data["headings"] and data["scope"] in ("all", "levels<=2", "levels<=3")
