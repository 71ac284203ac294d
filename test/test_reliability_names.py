"""File names that are not plain text (issue 28): a name whose bytes are not UTF-8 no longer stops
a folder ingest (the folder is read as bytes and the document named safely), and a name with
bidirectional controls cannot show a false extension (`evil\u202egnp.pdf` reads as
`evilfdp.png`): each such character is U+FFFD in the document's name."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import text_pdf
from serve_fakes import make_client

import main
from citerag.ingest.discover import discover_pdfs
from citerag.ingest.shelf import failed
from citerag.text.names import display_name

LATIN1 = b"caf\xe9.pdf"  # "café.pdf" as Latin-1 bytes: not UTF-8
RLO = "evil\u202egnp.pdf"  # shows as "evilfdp.png"


def make_bytes_name(folder: Path, name: bytes, subject: str) -> Path:
    """A PDF under a name given as bytes; a skip where the file system takes only UTF-8."""
    made = text_pdf(folder / "staging.pdf", subject=subject)
    target = os.path.join(os.fsencode(folder), name)
    try:
        os.rename(os.fsencode(made), target)
    except OSError as error:  # APFS and some others refuse names that are not UTF-8
        made.unlink()
        pytest.skip(f"this file system refuses a name that is not UTF-8 ({error.strerror})")
    return Path(os.fsdecode(target))


def test_display_names_neutralise_what_misleads_or_breaks() -> None:
    assert display_name("NETFLIX_2020_10K.pdf") == "NETFLIX_2020_10K.pdf"
    assert display_name("café 中文 report.pdf") == "café 中文 report.pdf"
    assert display_name(RLO) == "evil\ufffdgnp.pdf"
    for control in ("\u202a", "\u202b", "\u202d", "\u2066", "\u2067", "\u2068", "\u2069"):
        assert display_name(f"a{control}b.pdf") == "a\ufffdb.pdf"
    assert display_name("a\u200fb\u200e.pdf") == "a\ufffdb\ufffd.pdf"  # RLM, LRM
    assert display_name(LATIN1) == "caf\ufffd.pdf"
    assert display_name(os.fsdecode(LATIN1)) == "caf\ufffd.pdf"  # as Python gives it
    assert display_name("tab\tand\nline.pdf") == "tab\ufffdand\ufffdline.pdf"
    assert display_name("lone \ud800.pdf") == "lone \ufffd.pdf"  # no byte behind it


def test_a_name_that_is_not_utf8_is_found_in_byte_order_and_reported_safely(
    tmp_path: Path,
) -> None:
    text_pdf(tmp_path / "a.pdf", subject="A")
    odd = make_bytes_name(tmp_path, LATIN1, "Cafe")
    text_pdf(tmp_path / "z.pdf", subject="Z")
    found = discover_pdfs([tmp_path])
    assert [item.path for item in found] == [tmp_path / "a.pdf", odd, tmp_path / "z.pdf"]
    assert all(item.ok for item in found)
    assert os.fsencode(found[1].path.name) == LATIN1  # the very bytes, to open the file by
    result = failed(odd, "whatever went wrong.")
    assert result.name == "caf\ufffd.pdf"
    result.name.encode("utf-8")  # prints and serialises


def test_two_names_that_look_the_same_are_a_second_file_with_a_name_taken(tmp_path: Path) -> None:
    make_bytes_name(tmp_path, b"caf\xe9.pdf", "One")
    make_bytes_name(tmp_path, b"caf\xe8.pdf", "Two")
    found = discover_pdfs([tmp_path])
    assert [item.ok for item in found] == [True, False]  # both would be named "caf\ufffd.pdf"
    assert "same file name as" in found[1].problem


@pytest.fixture
def storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "storage"
    monkeypatch.setenv("RAG_STORAGE_DIR", str(path))
    for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER"):
        monkeypatch.delenv(variable, raising=False)
    yield path


@pytest.mark.slow
def test_a_folder_with_odd_names_is_ingested_whole_under_safe_names(
    storage: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    text_pdf(shelf / "a.pdf", subject="Alpha")
    make_bytes_name(shelf, LATIN1, "Cafe")
    text_pdf(shelf / RLO, subject="Evil")
    text_pdf(shelf / "z.pdf", subject="Zulu")
    capsys.readouterr()
    assert main.main(["ingest", str(shelf), "--collection", "odd"]) == 0
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "error:" not in err
    lines = out.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "a.pdf",
        "caf\ufffd.pdf",
        "evil\ufffdgnp.pdf",
        "z.pdf",
    ]
    assert all(": ingested (" in line for line in lines[:-1])
    assert "4 files (4 ingested, 0 skipped, 0 failed)" in lines[-1]

    assert main.main(["list", "--json", "--collection", "odd"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert sorted(d["name"] for d in listed) == [
        "a.pdf",
        "caf\ufffd.pdf",
        "evil\ufffdgnp.pdf",
        "z.pdf",
    ]
    assert all(d["health"] == "ok" for d in listed)
    assert main.main(["ingest", str(shelf), "--collection", "odd"]) == 0  # the same bytes again
    assert "4 files (0 ingested, 4 skipped, 0 failed)" in capsys.readouterr().out
    assert main.main(["delete", "caf\ufffd.pdf", "--collection", "odd"]) == 0
    assert main.main(["delete", RLO, "--collection", "odd"]) == 0  # the name as the file has it
    capsys.readouterr()
    assert main.main(["list", "--json", "--collection", "odd"]) == 0
    assert [d["name"] for d in json.loads(capsys.readouterr().out)] == ["a.pdf", "z.pdf"]


def test_an_upload_named_with_an_override_is_stored_under_the_name_listings_show(
    tmp_path: Path,
) -> None:
    client, engine = make_client(tmp_path)
    pdf = text_pdf(tmp_path / "upload.pdf", subject="Evil")
    with client:
        files = {"file": (RLO, pdf.read_bytes(), "application/pdf")}
        accepted = client.post("/api/collections/demo/documents", files=files)
        assert accepted.status_code == 202, accepted.text
        job = accepted.json()
        deadline = time.monotonic() + 60
        while job["status"] not in {"done", "failed"} and time.monotonic() < deadline:
            time.sleep(0.05)
            job = client.get(f"/api/uploads/{job['id']}").json()
    assert (job["status"], job["name"]) == ("done", "evil\ufffdgnp.pdf"), job
    assert engine.ingested == [("demo", "evil\ufffdgnp.pdf")]
    kept = tmp_path / "storage" / "uploads" / "demo" / "evil\ufffdgnp.pdf"
    assert kept.is_file()
