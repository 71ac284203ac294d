"""The parts of folder sync that need no stores: what counts as inside the folder, when a file is
still being written, the summary line, and the CLI's refusals before anything loads."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from helpers import text_pdf

import main
from citerag.cli_output import format_sync_result, format_sync_totals
from citerag.ingest.shelf import FileResult
from citerag.ingest.sync import SyncTotals, is_inside, source_of
from citerag.ingest.watch import Settler


def test_sources_are_absolute_and_only_the_folders_own_are_inside(tmp_path: Path) -> None:
    folder = tmp_path / "shelf"
    (folder / "sub").mkdir(parents=True)
    source = source_of(folder, folder / "sub" / "a.pdf")
    assert source == str(folder.resolve() / "sub" / "a.pdf")
    assert is_inside(source, folder)
    assert not is_inside(str(tmp_path / "shelf-2" / "a.pdf"), folder)  # a sibling, not inside
    assert not is_inside("", folder)  # an upload, or a document from before sources


def test_a_file_is_settled_once_still_for_the_settling_time(tmp_path: Path) -> None:
    settler = Settler(tmp_path, settle_s=0.3)
    old = text_pdf(tmp_path / "old.pdf")
    past = time.time() - 60
    os.utime(old, (past, past))
    growing = tmp_path / "growing.pdf"
    growing.write_bytes(b"%PDF-1.7\n")
    assert settler.unsettled() == {source_of(tmp_path, growing)}  # modified just now
    time.sleep(0.4)
    assert settler.unsettled() == set()
    with growing.open("ab") as stream:  # written again, its time set back: the size moved
        stream.write(b"more bytes")
    os.utime(growing, (past, past))
    assert settler.unsettled() == {source_of(tmp_path, growing)}
    assert settler.unsettled() == set()


def test_the_summary_line_counts_each_kind_of_change(tmp_path: Path) -> None:
    results = [
        FileResult("a.pdf", tmp_path / "a.pdf", "ingested"),
        FileResult("b.pdf", tmp_path / "b.pdf", "replaced"),
        FileResult("c.pdf", tmp_path / "c.pdf", "renamed", same_as="old-c.pdf"),
        FileResult("d.pdf", tmp_path / "d.pdf", "removed"),
        FileResult("e.pdf", tmp_path / "e.pdf", "skipped"),
        FileResult("f.pdf", tmp_path / "f.pdf", "failed", message="f.pdf is broken."),
        FileResult("g.pdf", tmp_path / "g.pdf", "repaired"),
    ]
    line = format_sync_totals(SyncTotals.of(results), tmp_path, "lib")
    assert line == (
        f"synced {tmp_path} into collection 'lib': 1 added / 1 replaced / 1 removed / "
        "1 unchanged (1 renamed, 1 repaired, 1 failed)"
    )
    assert (
        format_sync_result(results[2]) == "c.pdf: renamed from 'old-c.pdf' (nothing embedded again)"
    )


@pytest.mark.parametrize(
    ("paths", "sentence"),
    [
        (["shelf", "shelf"], "give exactly one folder"),
        (["shelf/a.pdf"], "is not a folder; give --sync the folder whose PDFs"),
        (["missing"], "is not a folder"),
    ],
)
def test_sync_refuses_anything_but_one_folder_before_loading_anything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], paths: list[str], sentence: str
) -> None:
    (tmp_path / "shelf").mkdir()
    text_pdf(tmp_path / "shelf" / "a.pdf")
    given = [str(tmp_path / p) for p in paths]
    assert main.main(["ingest", *given, "--sync"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("error: ") and sentence in error and "\n" not in error
