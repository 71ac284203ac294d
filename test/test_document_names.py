"""A document keeps the name it was ingested under, whatever the parse cache remembers."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import DEMO_PDF

import main

pytestmark = pytest.mark.slow


@pytest.fixture
def storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "storage"
    monkeypatch.setenv("RAG_STORAGE_DIR", str(path))
    for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER"):
        monkeypatch.delenv(variable, raising=False)
    yield path


def copy_as(name: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copyfile(DEMO_PDF, folder / name))


def names_in(collection: str, capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main.main(["list", "--json", "--collection", collection]) == 0
    return [d["name"] for d in json.loads(capsys.readouterr().out)]


def test_a_copy_parsed_before_under_another_name_keeps_its_own_name(
    storage: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    original = copy_as("paper.pdf", tmp_path / "a")
    copy = copy_as("copy_of_paper.pdf", tmp_path / "b")
    assert main.main(["ingest", str(original), "--collection", "first"]) == 0
    assert main.main(["ingest", str(copy), "--collection", "cp"]) == 0

    assert names_in("cp", capsys) == ["copy_of_paper.pdf"]
    assert main.main(["delete", "copy_of_paper.pdf", "--collection", "cp"]) == 0
    assert names_in("first", capsys) == ["paper.pdf"]


def test_a_deleted_draft_does_not_come_back_under_the_final_name(
    storage: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    draft = copy_as("draft.pdf", tmp_path / "d")
    final = copy_as("final.pdf", tmp_path / "f")
    assert main.main(["ingest", str(draft), "--collection", "c"]) == 0
    assert main.main(["delete", "draft.pdf", "--collection", "c"]) == 0
    assert main.main(["ingest", str(final), "--collection", "c"]) == 0

    assert names_in("c", capsys) == ["final.pdf"]


def test_the_same_bytes_under_a_second_name_are_skipped_naming_the_stored_one(
    storage: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = copy_as("report.pdf", tmp_path / "x")
    second = copy_as("report_copy.pdf", tmp_path / "y")
    assert main.main(["ingest", str(first), "--collection", "c"]) == 0
    capsys.readouterr()
    assert main.main(["ingest", str(second), "--collection", "c"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("report_copy"))
    assert "skipped" in line and "same bytes as 'report.pdf'" in line
    assert names_in("c", capsys) == ["report.pdf"]
