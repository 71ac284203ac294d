"""Tree mode over one collection holding the four shared PDFs, through the CLI: exactly 5
sections per chosen file, citations on real pages of real nodes, exact highlights, and "no
relevant files found" for a question no file shares a word with."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from helpers import shared_eval_file

import main
from citerag.tree.pipeline import NO_FILES

PDFS = {
    "paul_graham_essay.pdf": "paul_graham",
    "eBook-How-to-Build-a-Career-in-AI.pdf": "career_ai",
    "NETFLIX_2020_10K.pdf": "finance",
    "MICROSOFT_2021_10K.pdf": "finance",
}
COLLECTION = "four"
_WORD = re.compile(r"\w+")


@pytest.fixture(scope="module")
def four(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """The four PDFs ingested into one collection (skips when the shared data is absent)."""
    paths = {name: shared_eval_file(folder, name) for name, folder in PDFS.items()}
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RAG_STORAGE_DIR", str(tmp_path_factory.mktemp("storage")))
        for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "RAG_RERANKER"):
            patch.delenv(variable, raising=False)
        argv = ["ingest", *map(str, paths.values()), "--collection", COLLECTION]
        assert main.main(argv) == 0
        yield paths


def _json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main.main([*argv, "--collection", COLLECTION, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _nodes(structure: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in structure:
        yield node
        yield from _nodes(node["nodes"])


def _words(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def _on_page(pdf: Path, page: int, text: str) -> bool:
    """The first words of `text` are on that page of the PDF (1-based)."""
    with pymupdf.open(pdf) as document:
        page_text = _words(document[page - 1].get_text())
    return _words(" ".join(text.split()[:8])) in page_text


@pytest.mark.slow
@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("What were Netflix's total revenues in 2020?", "NETFLIX_2020_10K.pdf"),
        ("How does Microsoft describe its Intelligent Cloud segment?", "MICROSOFT_2021_10K.pdf"),
        ("Should you learn math to get a job in AI?", "eBook-How-to-Build-a-Career-in-AI.pdf"),
        ("What did the author work on before college?", "paul_graham_essay.pdf"),
    ],
)
def test_tree_mode_cites_five_real_sections_per_chosen_file(
    four: dict[str, Path], capsys: pytest.CaptureFixture[str], question: str, expected: str
) -> None:
    data = _json(capsys, "query", question, "--mode", "tree")
    history = {entry["step"]: entry for entry in data["metadata"]["searchHistory"]}
    chosen = history["files_selected"]["files"]
    assert chosen[0] == expected and 1 <= len(chosen) <= 3  # --top-k-files 3 at most
    by_file = {name: [s for s in data["sources"] if s["documentName"] == name] for name in chosen}
    for name, sources in by_file.items():
        tree = {n["node_id"]: n for n in _nodes(_json(capsys, "tree", name)["structure"])}
        assert len(sources) == 5, name
        for source in sources:
            node = tree[source["nodeId"]]
            assert (source["title"], source["pageIndex"], source["endIndex"]) == (
                node["title"],
                node["start_index"],
                node["end_index"],
            )
            assert node["start_index"] <= source["pageNumber"] <= node["end_index"]
            for h in source["highlights"]:
                assert source["content"][h["startOffset"] : h["endOffset"]] == h["text"]
            if source["highlights"]:  # the cited page holds the first highlighted sentence
                first = source["highlights"][0]["text"]
                assert _on_page(four[name], source["pageNumber"], first), (name, first)
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", data["answer"])}
    assert cited and cited <= {s["citationNumber"] for s in data["sources"]}
    assert any(s["highlights"] for s in by_file[expected])


@pytest.mark.slow
def test_tree_mode_says_when_no_file_is_relevant(
    four: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    data = _json(capsys, "query", "Qwzx vorbleth snarfquux?", "--mode", "tree")
    assert data["answer"] == NO_FILES and data["sources"] == []
    history = {entry["step"]: entry for entry in data["metadata"]["searchHistory"]}
    assert history["files_selected"]["files"] == []
    assert all(relevant is False for _name, _score, relevant in history["file_search"]["files"])
