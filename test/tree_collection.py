"""The four shared PDFs in one collection, and the checks every tree-mode answer over it must
pass (test_tree_collection.py offline, test_tree_collection_llm.py with a scripted LLM)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from helpers import shared_eval_file

import main

PDFS = {
    "paul_graham_essay.pdf": "paul_graham",
    "eBook-How-to-Build-a-Career-in-AI.pdf": "career_ai",
    "NETFLIX_2020_10K.pdf": "finance",
    "MICROSOFT_2021_10K.pdf": "finance",
}
COLLECTION = "four"
NODES_PER_FILE = 5
# Settings a developer's shell may carry that would change what the tests run against.
OUTSIDE_SETTINGS = ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "LLM_BASE_URL", "RAG_RERANKER")
_WORD = re.compile(r"\w+")
_TREES: dict[tuple[Path, str], dict[str, dict[str, Any]]] = {}


@dataclass(frozen=True)
class FourCollection:
    storage: Path
    pdfs: dict[str, Path]  # file name -> its path


def ingest_four(storage: Path) -> FourCollection:
    """The four PDFs ingested with no LLM into `storage` (skips when the shared data is
    absent); the environment is as it was afterwards."""
    paths = {name: shared_eval_file(folder, name) for name, folder in PDFS.items()}
    with pytest.MonkeyPatch.context() as patch:
        use_storage(patch, storage)
        argv = ["ingest", *map(str, paths.values()), "--collection", COLLECTION]
        assert main.main(argv) == 0
    return FourCollection(storage, paths)


def use_storage(patch: pytest.MonkeyPatch, storage: Path) -> None:
    """The CLI reads `storage`, with no LLM, servers or reranker from the developer's shell."""
    patch.setenv("RAG_STORAGE_DIR", str(storage))
    for variable in OUTSIDE_SETTINGS:
        patch.delenv(variable, raising=False)


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """`python main.py ARGV --collection four --json`, parsed."""
    capsys.readouterr()
    assert main.main([*argv, "--collection", COLLECTION, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def history_of(data: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """metadata.searchHistory's entries by step."""
    steps: dict[str, list[dict[str, Any]]] = {}
    for entry in data["metadata"]["searchHistory"]:
        steps.setdefault(entry["step"], []).append(entry)
    return steps


def walk(structure: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for node in structure:
        yield node
        yield from walk(node["nodes"])


def tree_nodes(
    capsys: pytest.CaptureFixture[str], four: FourCollection, name: str
) -> dict[str, dict[str, Any]]:
    """`python main.py tree NAME --json`'s nodes by id, in document order (asked once)."""
    key = (four.storage, name)
    if key not in _TREES:
        structure = cli_json(capsys, "tree", name)["structure"]
        _TREES[key] = {n["node_id"]: n for n in walk(structure)}
    return _TREES[key]


def words(text: str) -> str:
    return " ".join(_WORD.findall(text.casefold()))


def on_page(pdf: Path, page: int, text: str) -> bool:
    """The first words of `text` are on that page of the PDF (1-based)."""
    with pymupdf.open(pdf) as document:
        page_text = words(document[page - 1].get_text())
    return words(" ".join(text.split()[:8])) in page_text


def check_sources(
    data: dict[str, Any], four: FourCollection, capsys: pytest.CaptureFixture[str]
) -> dict[str, list[dict[str, Any]]]:
    """Exactly 5 sources per chosen file, each a node of that file's tree (`main.py tree`) with
    its title and span, cited on a page of that span which holds the first highlighted
    sentence, highlights that cut their own text out of the content, and citations numbered
    1.. that the answer alone uses. The sources by file."""
    chosen = history_of(data)["files_selected"][0]["files"]
    assert chosen and {s["documentName"] for s in data["sources"]} <= set(chosen)
    by_file = {name: [s for s in data["sources"] if s["documentName"] == name] for name in chosen}
    for name, sources in by_file.items():
        tree = tree_nodes(capsys, four, name)
        assert len(sources) == NODES_PER_FILE, name
        assert len({s["nodeId"] for s in sources}) == NODES_PER_FILE, name
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
                assert on_page(four.pdfs[name], source["pageNumber"], first), (name, first)
    numbers = [s["citationNumber"] for s in data["sources"]]
    assert numbers == list(range(1, len(numbers) + 1))
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", data["answer"])}
    assert cited and cited <= set(numbers)
    return by_file
