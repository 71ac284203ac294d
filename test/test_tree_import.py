"""`main.py tree DOC --import tree.json`: PageIndex's JSON made elsewhere, as the seeds show it
(missing node ids, an untitled node, a span that runs backwards, a child outside its parent),
checked against the stored PDF and used by tree mode."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from tree_collection import use_storage, walk

import main
from citerag.errors import InputError
from citerag.nodes import chunk_node
from citerag.tree.imported import IMPORTED, import_pageindex
from citerag.tree.schema import tree_errors

# The shape of seed 002's sample output (summaries shortened): "Model Architecture",
# "Attention" and the last node have no node_id, the last has no title, "Scaled Dot-Product
# Attention" runs from page 6 back to 4, and "Multi-Head Attention" (page 4) lies outside
# "Attention" (pages 5-6).
SEED_SAMPLE: dict[str, Any] = {
    "doc_name": "Attention_is_all_you_need.pdf",
    "structure": [
        {"title": "Preface", "start_index": 1, "end_index": 1, "node_id": "0000",
         "summary": "The abstract."},
        {"title": "Introduction", "start_index": 2, "end_index": 2, "node_id": "0001",
         "summary": "Recurrent networks."},
        {"title": "Model Architecture", "start_index": 2, "end_index": 3, "nodes": [
            {"title": "Encoder and Decoder Stacks", "start_index": 3, "end_index": 5,
             "node_id": "0004", "summary": "Six identical layers."},
            {"title": "Attention", "start_index": 5, "end_index": 6, "nodes": [
                {"title": "Scaled Dot-Product Attention", "start_index": 6, "end_index": 4,
                 "node_id": "0006", "summary": "Dot products scaled."},
                {"title": "Multi-Head Attention", "start_index": 4, "end_index": 4,
                 "node_id": "0007", "summary": "Parallel heads."},
                {"summary": "The abstract again."},
            ]},
        ]},
    ],
}  # fmt: skip
PAGE_TOPICS = [
    "abstract transformer translation",
    "introduction recurrent networks sequence",
    "architecture encoder decoder stacks layers",
    "multi head attention projections heads",
    "attention queries keys values",
    "scaled dot product softmax scaling",
]
DOC_ID = "a" * 64


def _chunks(pages: int = 6) -> list[Any]:
    return [
        chunk_node(
            node_id=f"c{page}",
            doc_id=DOC_ID,
            doc_name="attention.pdf",
            page=page,
            chunk_index=page - 1,
            text=f"Page {page} is about {PAGE_TOPICS[page - 1]}.",
            start=0,
        )
        for page in range(1, pages + 1)
    ]


def _by_title(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {node["title"]: node for node in walk(data["structure"])}


def test_the_seed_sample_is_accepted_with_ids_assigned_and_spans_repaired() -> None:
    imported = import_pageindex(SEED_SAMPLE, "attention.pdf", DOC_ID, 6, _chunks())
    data = imported.tree.to_pageindex(with_text=True)
    nodes = _by_title(data)
    assert [n["node_id"] for n in walk(data["structure"])] == [
        "0000", "0001", "0002", "0004", "0003", "0006", "0007", "0005",
    ]  # fmt: skip
    untitled = nodes["Untitled section 0005"]
    assert (untitled["start_index"], untitled["end_index"]) == (5, 6)  # its parent's pages
    assert (nodes["Scaled Dot-Product Attention"]["start_index"],
            nodes["Scaled Dot-Product Attention"]["end_index"]) == (4, 6)  # fmt: skip
    assert (nodes["Attention"]["start_index"], nodes["Attention"]["end_index"]) == (4, 6)
    assert (nodes["Model Architecture"]["start_index"],
            nodes["Model Architecture"]["end_index"]) == (2, 6)  # fmt: skip
    assert nodes["Preface"]["summary"] == "The abstract."
    assert tree_errors(data, ordered_ids=False) == []
    assert imported.tree.source == IMPORTED
    assert any("ran backwards" in fix and "0006" in fix for fix in imported.fixes)
    assert any("no node_id" in fix and "0002, 0003, 0005" in fix for fix in imported.fixes)


def test_nodes_without_text_take_the_stored_text_of_pages_no_child_covers() -> None:
    tree = import_pageindex(SEED_SAMPLE, "attention.pdf", DOC_ID, 6, _chunks()).tree
    by_title = {node.title: node for node in tree.walk()}
    introduction = by_title["Introduction"]
    assert introduction.text == "Page 2 is about introduction recurrent networks sequence."
    assert introduction.chunk_ids == ["c2"] and introduction.page_starts == [(2, 0)]
    # Model Architecture spans 2-6; its children cover 3-6, so only page 2 is its own.
    assert by_title["Model Architecture"].chunk_ids == ["c2"]
    encoder = by_title["Encoder and Decoder Stacks"]
    assert encoder.chunk_ids == ["c3", "c4", "c5"]
    assert [page for page, _ in encoder.page_starts] == [3, 4, 5]
    offset = encoder.page_starts[1][1]
    assert encoder.text[offset:].startswith("Page 4 is about")


def test_text_and_page_index_are_accepted() -> None:
    data = {
        "structure": [
            {"title": "Only", "page_index": 3, "text": "Given text of the section.", "nodes": []},
            {"title": "Physical", "physical_index": "<physical_index_5>"},
        ]
    }
    tree = import_pageindex(data, "attention.pdf", DOC_ID, 6, _chunks())
    only, physical = tree.tree.structure
    assert (only.node_id, only.start_index, only.end_index) == ("0000", 3, 3)
    assert only.text == "Given text of the section." and only.chunk_ids == ["c3"]
    assert (physical.start_index, physical.end_index) == (5, 5)


def test_a_page_beyond_the_pdf_is_one_sentence() -> None:
    expected = r"Node 0004 \('Encoder and Decoder Stacks'\) names pages 3-5 but attention.pdf has 4"
    with pytest.raises(InputError, match=expected):
        import_pageindex(SEED_SAMPLE, "attention.pdf", DOC_ID, 4, _chunks(4))


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"doc_name": "x.pdf"}, "no 'structure' list"),
        ({"structure": ["a"]}, r"structure\[0\] is not a JSON object"),
        ({"structure": [{"title": "A", "start_index": 0, "end_index": 1}]}, "must be 1 or more"),
        ({"structure": [{"title": "A", "start_index": "two"}]}, "must be 1 or more"),
        ({"structure": [{"title": "A", "node_id": "x1", "start_index": 1}]}, "digits"),
        ({"structure": [{"title": "A"}]}, "has no pages"),
        (
            {"structure": [{"title": "A", "node_id": "0001", "start_index": 1},
                           {"title": "B", "node_id": "0001", "start_index": 2}]},
            "appears twice",
        ),
    ],
)  # fmt: skip
def test_broken_trees_are_one_sentence(data: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message) as caught:
        import_pageindex(copy.deepcopy(data), "attention.pdf", DOC_ID, 6, _chunks())
    assert "\n" not in str(caught.value)


def _attention_pdf(path: Path) -> Path:
    with pymupdf.open() as document:
        for number, topic in enumerate(PAGE_TOPICS, start=1):
            page = document.new_page()
            body = f"Section page {number}. This page explains {topic} in some detail."
            page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), body, fontsize=11)
        document.save(path)
    return path


@pytest.mark.slow
def test_cli_import_stores_the_tree_and_tree_mode_cites_its_nodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_storage(monkeypatch, tmp_path / "storage")
    pdf = _attention_pdf(tmp_path / "attention.pdf")
    tree_file = tmp_path / "tree.json"
    tree_file.write_text(json.dumps(SEED_SAMPLE))
    target = ["--collection", "imported"]
    assert main.main(["ingest", str(pdf), *target]) == 0
    capsys.readouterr()
    assert main.main(["tree", "attention.pdf", "--import", str(tree_file), *target]) == 0
    err = capsys.readouterr().err
    assert "imported 8 nodes" in err and "ran backwards" in err
    assert main.main(["tree", "attention.pdf", "--json", *target]) == 0
    stored = json.loads(capsys.readouterr().out)
    assert _by_title(stored)["Scaled Dot-Product Attention"]["node_id"] == "0006"
    question = "What does the paper say about scaled dot product softmax scaling?"
    assert main.main(["query", question, "--mode", "tree", "--json", *target]) == 0
    answer = json.loads(capsys.readouterr().out)
    ids = {node["node_id"] for node in walk(stored["structure"])}
    assert answer["sources"] and {s["nodeId"] for s in answer["sources"]} <= ids
    first = answer["sources"][0]
    assert first["nodeId"] in {"0006", "0003"} and first["pageNumber"] == 6


def test_cli_import_of_a_missing_file_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_storage(monkeypatch, tmp_path / "storage")
    code = main.main(["tree", "a.pdf", "--import", str(tmp_path / "none.json")])
    assert code == InputError.exit_code
    assert "does not exist" in capsys.readouterr().err
