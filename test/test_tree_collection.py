"""Tree mode over one collection holding the four shared PDFs, through the CLI: exactly 5
sections per chosen file, citations on real pages of real nodes, exact highlights, and "no
relevant files found" for a question no file shares a word with. (The collection is the
`four` fixture of conftest.py; the checks are tree_collection.py's.)"""

from __future__ import annotations

import pytest
from tree_collection import FourCollection, check_sources, cli_json, history_of

from citerag.tools.tree_mode import NO_FILES


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
    four: FourCollection, capsys: pytest.CaptureFixture[str], question: str, expected: str
) -> None:
    data = cli_json(capsys, "query", question, "--mode", "tree")
    chosen = history_of(data)["files_selected"][0]["files"]
    assert chosen[0] == expected and 1 <= len(chosen) <= 3  # --top-k-files 3 at most
    by_file = check_sources(data, four, capsys)
    assert all(e["method"] == "offline" for e in history_of(data)["nodes_selected"])
    assert any(s["highlights"] for s in by_file[expected])


@pytest.mark.slow
def test_tree_mode_says_when_no_file_is_relevant(
    four: FourCollection, capsys: pytest.CaptureFixture[str]
) -> None:
    data = cli_json(capsys, "query", "Qwzx vorbleth snarfquux?", "--mode", "tree")
    assert data["answer"] == NO_FILES and data["sources"] == []
    history = history_of(data)
    assert history["files_selected"][0]["files"] == []
    files = history["file_search"][0]["files"]
    assert all(relevant is False for _name, _score, relevant in files)
