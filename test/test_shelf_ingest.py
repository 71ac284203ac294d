"""`main.py ingest` over a shelf: folders searched for PDFs, each file once, bad files skipped
with their sentence, a line per file and a total, exit 1 when any failed."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import time
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from helpers import corrupt_pdf, encrypted_pdf, scanned_pdf, text_pdf

import main
from citerag.cli_output import StageBar
from citerag.errors import BackendUnavailable, InputError
from citerag.ingest.discover import Found, discover_pdfs
from citerag.ingest.pipeline import STAGES, IngestOutcome, Progress
from citerag.ingest.shelf import FileResult, ShelfTotals, ingest_one, ingest_shelf
from citerag.parse.validate import inspect_pdf
from citerag.serve.uploads import FileStore, UploadJobs

FILE_LINE = re.compile(
    r"^(?P<name>.+): (?P<status>\w+) \((?P<pages>\d+) pages, (?P<chunks>\d+) chunks, "
    r"(?P<seconds>[\d.]+) s\)$"
)
TOTAL_LINE = re.compile(
    r"^total in collection '(?P<collection>[^']+)': (?P<files>\d+) files \((?P<ingested>\d+) "
    r"ingested, (?P<skipped>\d+) skipped, (?P<failed>\d+) failed\), (?P<pages>\d+) pages, "
    r"(?P<chunks>\d+) chunks, (?P<seconds>[\d.]+) s, (?P<rate>[\d.]+) pages/s"
    r"(?P<stages>(; |, )[a-z]+ [\d.]+ s)*$"
)
MakeUnreadable = Callable[[Path], Path]


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch) -> Iterator[MakeUnreadable]:
    """Takes read permission away. Root reads anything, so under root the reads of that path
    are made to fail the way the OS fails them for everyone else (EACCES)."""
    locked: list[Path] = []

    def lock(path: Path) -> Path:
        path.chmod(0)
        locked.append(path)
        if os.geteuid() == 0:
            _deny_reads(monkeypatch, path)
        return path

    yield lock
    for path in locked:
        path.chmod(0o700)


def _deny_reads(monkeypatch: pytest.MonkeyPatch, locked: Path) -> None:
    real_scandir, real_read_bytes = os.scandir, Path.read_bytes
    target = os.path.realpath(locked)

    def denied(path: Any) -> bool:  # shutil.rmtree scans by file descriptor: never denied
        named = isinstance(path, str | bytes | os.PathLike)
        return named and os.fsdecode(os.path.realpath(path)) == target

    def scandir(path: Any = ".") -> Any:
        if denied(path):
            raise PermissionError(errno.EACCES, "Permission denied", os.fsdecode(path))
        return real_scandir(path)

    def read_bytes(self: Path) -> bytes:
        if denied(self):
            raise PermissionError(errno.EACCES, "Permission denied", str(self))
        return real_read_bytes(self)

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.setattr(Path, "read_bytes", read_bytes)


def paths_of(found: list[Found], root: Path) -> list[str]:
    return [item.path.relative_to(root).as_posix() for item in found]


def problems_of(found: list[Found], root: Path) -> dict[str, str]:
    return {item.path.relative_to(root).as_posix(): item.problem for item in found if item.problem}


# --- discovery ---------------------------------------------------------------------------------


def test_folders_are_searched_depth_first_in_name_order_for_pdfs_of_any_case(
    tmp_path: Path,
) -> None:
    shelf = tmp_path / "shelf"
    for name in ["z.pdf", "b.pdf", "A.PDF", "sub/c.Pdf", "sub/deeper/d.pdf", "notes.txt"]:
        (shelf / name).parent.mkdir(parents=True, exist_ok=True)
        (shelf / name).write_bytes(b"%PDF-1.7")
    single = text_pdf(tmp_path / "e.pdf")
    found = discover_pdfs([shelf, single])
    assert paths_of(found, tmp_path) == [
        "shelf/A.PDF",
        "shelf/b.pdf",
        "shelf/sub/c.Pdf",
        "shelf/sub/deeper/d.pdf",
        "shelf/z.pdf",
        "e.pdf",
    ]
    assert all(item.ok for item in found)  # notes.txt inside a folder is passed over silently


def test_each_real_file_is_listed_once(tmp_path: Path) -> None:
    shelf = tmp_path / "shelf"
    (shelf / "sub").mkdir(parents=True)
    first = text_pdf(shelf / "a.pdf")
    text_pdf(shelf / "sub" / "x.pdf", subject="x")
    (shelf / "link.pdf").symlink_to(first)
    (shelf / "sub_alias").symlink_to(shelf / "sub")  # reached after sub/ itself
    found = discover_pdfs([first, shelf, shelf / "sub", tmp_path / "shelf" / "." / "a.pdf"])
    assert paths_of(found, tmp_path) == ["shelf/a.pdf", "shelf/sub/x.pdf"]


def test_symlink_loops_are_reported_and_the_rest_is_still_found(tmp_path: Path) -> None:
    shelf = tmp_path / "shelf"
    (shelf / "sub").mkdir(parents=True)
    text_pdf(shelf / "sub" / "good.pdf")
    (shelf / "sub" / "up").symlink_to("..")
    (shelf / "self.pdf").symlink_to("self.pdf")
    (shelf / "ring1").symlink_to("ring2")
    (shelf / "ring2").symlink_to("ring1")
    found = discover_pdfs([shelf, shelf / "self.pdf"])
    problems = problems_of(found, tmp_path)
    assert set(problems) == {"shelf/ring1", "shelf/ring2", "shelf/self.pdf", "shelf/sub/up"}
    assert all("symlink loop" in sentence for sentence in problems.values())
    assert f"leads back to {shelf.resolve()}" in problems["shelf/sub/up"]
    assert [item.path.name for item in found if item.ok] == ["good.pdf"]
    assert paths_of(found, tmp_path).count("shelf/self.pdf") == 2  # named twice: said twice


def test_a_link_to_a_folder_above_is_a_loop_even_when_that_folder_was_not_named(
    tmp_path: Path,
) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "up").symlink_to("..")
    (tmp_path / "sub" / "sideways").symlink_to(tmp_path / "other")
    (tmp_path / "other").mkdir()
    text_pdf(tmp_path / "other" / "o.pdf")
    text_pdf(tmp_path / "top.pdf")
    found = discover_pdfs([tmp_path / "sub"])
    assert paths_of(found, tmp_path) == ["sub/sideways/o.pdf", "sub/up"]
    assert "symlink loop" in found[1].problem


def test_missing_paths_and_named_non_pdfs_get_a_sentence_in_their_place(tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("not a pdf")
    good = text_pdf(tmp_path / "good.pdf")
    found = discover_pdfs([tmp_path / "missing.pdf", notes, good])
    assert paths_of(found, tmp_path) == ["missing.pdf", "notes.txt", "good.pdf"]
    assert (
        found[0].problem
        == f"{tmp_path / 'missing.pdf'} does not exist; check the path and try again."
    )
    assert found[1].problem.startswith(f"{notes} is not a PDF")
    assert found[2].ok


def test_an_unreadable_folder_is_reported_and_its_siblings_are_found(
    tmp_path: Path, unreadable: MakeUnreadable
) -> None:
    (tmp_path / "locked").mkdir()
    text_pdf(tmp_path / "locked" / "hidden.pdf")
    text_pdf(tmp_path / "open.pdf")
    unreadable(tmp_path / "locked")
    found = discover_pdfs([tmp_path])
    assert paths_of(found, tmp_path) == ["locked", "open.pdf"]
    assert found[0].problem.startswith(f"Folder {tmp_path / 'locked'} cannot be read (")
    assert "check its permissions" in found[0].problem


def test_a_second_file_with_a_name_already_taken_is_refused(tmp_path: Path) -> None:
    """Documents are stored by file name: the second would replace the first."""
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        text_pdf(tmp_path / folder / "report.pdf", subject=folder)
    found = discover_pdfs([tmp_path])
    assert found[0].ok and not found[1].ok
    assert "same file name as" in found[1].problem and "rename one" in found[1].problem


# --- one file, a shelf, the totals --------------------------------------------------------------


class FakeEngine:
    """Validates like the engine, reports every stage and stores nothing; loads no model."""

    def __init__(self, interrupt_at: str = "", failure: Exception | None = None) -> None:
        self.interrupt_at = interrupt_at
        self.failure = failure
        self.ingested: list[str] = []

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        if path.name == self.interrupt_at:
            raise KeyboardInterrupt
        if self.failure is not None:
            raise self.failure
        info = inspect_pdf(path)
        for stage in STAGES:
            if progress is not None:
                progress(stage)
        self.ingested.append(path.name)
        return IngestOutcome(path.name, f"id-{path.name}", "ingested", info.page_count, 2, 0.0)

    def close(self) -> None:
        pass


def test_ingest_one_turns_a_bad_file_into_a_failed_result_with_its_sentence(
    tmp_path: Path,
) -> None:
    bad = corrupt_pdf(tmp_path / "bad.pdf")
    with pytest.raises(InputError) as refused:
        inspect_pdf(bad)
    result = ingest_one(FakeEngine(), bad, "c")
    assert (result.name, result.status, result.pages, result.chunks) == ("bad.pdf", "failed", 0, 0)
    assert result.message == str(refused.value)
    good = ingest_one(FakeEngine(), text_pdf(tmp_path / "good.pdf", pages=3), "c")
    assert (good.status, good.pages, good.chunks, good.message) == ("ingested", 3, 2, "")


def test_an_unreadable_file_gets_its_sentence(tmp_path: Path, unreadable: MakeUnreadable) -> None:
    locked = unreadable(text_pdf(tmp_path / "locked.pdf"))
    result = ingest_one(FakeEngine(), locked, "c")
    assert result.failed
    assert result.message.startswith(f"{locked} cannot be read (")
    assert result.message.endswith("check its permissions and try again.")


def test_a_backend_failure_stops_the_shelf_rather_than_failing_each_file(tmp_path: Path) -> None:
    engine = FakeEngine(failure=BackendUnavailable("Milvus cannot be reached; start it."))
    found = [Found(text_pdf(tmp_path / "a.pdf")), Found(text_pdf(tmp_path / "b.pdf", 3))]
    reported: list[FileResult] = []
    with pytest.raises(BackendUnavailable):
        ingest_shelf(engine, found, "c", lambda *_: RecordingBar(), reported.append)
    assert reported == []


class RecordingBar:
    def __init__(self) -> None:
        self.stages: list[str] = []
        self.closed = False

    def __call__(self, stage: str) -> None:
        self.stages.append(stage)

    def close(self) -> None:
        self.closed = True


def test_ctrl_c_stops_the_shelf_and_closes_the_file_progress(tmp_path: Path) -> None:
    found = [Found(text_pdf(tmp_path / n, subject=n)) for n in ("a.pdf", "b.pdf", "c.pdf")]
    bars: list[RecordingBar] = []
    reported: list[FileResult] = []

    def bar_for(position: int, item: Found) -> RecordingBar:
        bars.append(RecordingBar())
        return bars[-1]

    with pytest.raises(KeyboardInterrupt):
        ingest_shelf(FakeEngine(interrupt_at="b.pdf"), found, "c", bar_for, reported.append)
    assert [r.name for r in reported] == ["a.pdf"]
    assert len(bars) == 2 and all(bar.closed for bar in bars)
    assert bars[0].stages == list(STAGES)


def test_totals_add_up_the_files_and_rate_only_the_pages_written(tmp_path: Path) -> None:
    results = [
        FileResult("a.pdf", tmp_path, "ingested", 10, 20, 1.0),
        FileResult("b.pdf", tmp_path, "skipped", 5, 7, 0.1),
        FileResult("c.pdf", tmp_path, "replaced", 2, 3, 1.0),
        FileResult("d.pdf", tmp_path, "failed", message="d.pdf is encrypted; decrypt it."),
    ]
    totals = ShelfTotals.of(results, seconds=4.0)
    assert (totals.files, totals.written, totals.skipped, totals.failed) == (4, 2, 1, 1)
    assert (totals.pages, totals.chunks) == (17, 30)
    assert totals.pages_per_second == pytest.approx(12 / 4.0)


def test_stage_progress_is_plain_lines_when_not_on_a_terminal() -> None:
    stream = io.StringIO()
    bar = StageBar("[2/5] a.pdf", stream)
    for stage in STAGES:
        bar(stage)
    bar.close()
    assert stream.getvalue().splitlines() == [f"[2/5] a.pdf: {stage}" for stage in STAGES]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_stage_progress_is_a_bar_on_a_terminal() -> None:
    stream = Terminal()
    bar = StageBar("a.pdf", stream)
    bar("parse")
    bar("embed")
    bar.close()
    shown = stream.getvalue()
    assert "\r" in shown and "a.pdf" in shown and "embed" in shown
    assert "a.pdf: parse\n" not in shown


def test_an_upload_that_fails_at_ingest_reports_the_sentence_and_keeps_nothing(
    tmp_path: Path,
) -> None:
    sentence = "up.pdf contains no text to index; check that it is not blank."
    files = FileStore(tmp_path / "uploads")
    jobs = UploadJobs(FakeEngine(failure=InputError(sentence)), files)
    job = jobs.submit(text_pdf(tmp_path / "up.pdf").read_bytes(), "up.pdf", "c")
    deadline = time.monotonic() + 10
    while job.status in {"queued", "running"} and time.monotonic() < deadline:
        time.sleep(0.02)
    jobs.shutdown()
    assert (job.status, job.message) == ("failed", sentence)
    assert not files.path("c", "up.pdf").exists()
    assert not any(files.root.rglob("*.pdf"))


# --- the CLI ------------------------------------------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def prose_pdf(path: Path, pages: list[str]) -> Path:
    """A page per sentence: lines that differ, so none is taken for a running header."""
    with pymupdf.open() as doc:
        for sentence in pages:
            doc.new_page().insert_text((72, 72), sentence)
        doc.save(path)
    return path


def make_shelf(root: Path, unreadable: MakeUnreadable) -> dict[str, str]:
    """Two good PDFs (one nested) and one of each bad kind; the bad ones' names -> fragment."""
    (root / "nested").mkdir(parents=True)
    prose_pdf(root / "good.pdf", ["Lighthouses guard the coast of Norway.", "Keepers log storms."])
    prose_pdf(
        root / "nested" / "other.pdf",
        ["Hybrid retrieval fuses scores.", "Rerankers reorder passages.", "Citations name pages."],
    )
    corrupt_pdf(root / "corrupt.pdf")
    encrypted_pdf(root / "encrypted.pdf")
    scanned_pdf(root / "scanned.pdf")
    (root / "empty.pdf").write_bytes(b"")
    (root / "renamed.pdf").write_text("A text file with a PDF's name.\n")
    (root / "nested" / "loop").symlink_to("..")
    unreadable(text_pdf(root / "locked.pdf", subject="locked"))
    return {
        "corrupt.pdf": "corrupt",
        "encrypted.pdf": "encrypted",
        "scanned.pdf": "text layer",
        "empty.pdf": "not a readable pdf",
        "renamed.pdf": "not a readable pdf",
        "loop": "symlink loop",
        "locked.pdf": "cannot be read",
    }


def parse_report(out: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    lines = out.splitlines()
    files = {m["name"]: m.groupdict() for m in map(FILE_LINE.match, lines[:-1]) if m}
    assert len(files) == len(lines) - 1, out
    total = TOTAL_LINE.match(lines[-1])
    assert total, out
    return files, total.groupdict()


def assert_totals_add_up(files: dict[str, dict[str, str]], total: dict[str, str]) -> None:
    statuses = [f["status"] for f in files.values()]
    assert int(total["files"]) == len(files)
    assert int(total["ingested"]) == statuses.count("ingested")
    assert int(total["skipped"]) == statuses.count("skipped")
    assert int(total["failed"]) == statuses.count("failed")
    assert int(total["pages"]) == sum(int(f["pages"]) for f in files.values())
    assert int(total["chunks"]) == sum(int(f["chunks"]) for f in files.values())


@pytest.fixture
def fake_engine(monkeypatch: pytest.MonkeyPatch) -> FakeEngine:
    engine = FakeEngine()
    monkeypatch.setattr(main, "open_engine", lambda article=None: nullcontext(engine))
    return engine


def test_cli_skips_each_bad_file_with_its_sentence_and_exits_1(
    tmp_path: Path,
    unreadable: MakeUnreadable,
    fake_engine: FakeEngine,
    capsys: pytest.CaptureFixture[str],
) -> None:
    bad = make_shelf(tmp_path / "shelf", unreadable)
    code, out, err = run_cli(capsys, "ingest", str(tmp_path / "shelf"), "--collection", "c")
    assert code == 1
    files, total = parse_report(out)
    assert {n for n, f in files.items() if f["status"] == "ingested"} == {"good.pdf", "other.pdf"}
    assert {n for n, f in files.items() if f["status"] == "failed"} == set(bad)
    assert fake_engine.ingested == ["good.pdf", "other.pdf"]
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(bad)
    for name, fragment in bad.items():
        [line] = [e for e in errors if name in e]
        assert fragment in line.lower() and line.endswith(".")
    assert_totals_add_up(files, total)
    assert (total["collection"], total["ingested"], total["failed"]) == ("c", "2", str(len(bad)))
    position = {name: number for number, name in enumerate(files, start=1)}
    assert f"[{position['good.pdf']}/{len(files)}] good.pdf: store" in err
    assert f"/{len(files)}] corrupt.pdf:" not in err  # refused before its first stage


def test_cli_with_only_unusable_paths_opens_no_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(article: str | None = None) -> Any:
        raise AssertionError("no engine (models, stores) is needed when no path is usable")

    monkeypatch.setattr(main, "open_engine", refuse)
    code, out, err = run_cli(capsys, "ingest", str(tmp_path / "missing.pdf"), "--collection", "c")
    assert code == 1
    assert (
        err == f"error: {tmp_path / 'missing.pdf'} does not exist; check the path and try again.\n"
    )
    assert out.splitlines()[0] == "missing.pdf: failed (0 pages, 0 chunks, 0.0 s)"


def test_cli_on_a_folder_without_pdfs_is_one_sentence(
    tmp_path: Path, fake_engine: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("nothing to ingest")
    code, out, err = run_cli(capsys, "ingest", str(tmp_path), "--collection", "c")
    assert code == 2 and out == ""
    assert err == f"error: No PDF files in {tmp_path}; give PDF files or folders that hold some.\n"


def test_cli_ctrl_c_stops_after_the_files_already_done(
    tmp_path: Path, fake_engine: FakeEngine, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in ("a.pdf", "b.pdf", "c.pdf"):
        text_pdf(tmp_path / name, subject=name)
    fake_engine.interrupt_at = "b.pdf"
    code, out, err = run_cli(capsys, "ingest", str(tmp_path), "--collection", "c")
    assert code == 130
    [line] = out.splitlines()  # no total: the run did not finish
    assert line.startswith("a.pdf: ingested (2 pages, 2 chunks, ")
    assert err.splitlines()[-1] == "error: interrupted; nothing half-written was kept."
    assert fake_engine.ingested == ["a.pdf"]


# --- end to end: the real engine (MiniLM, Milvus Lite, SQLite, bm25s) ---------------------------


@pytest.fixture
def storage(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The embedded stack in a fresh folder, no servers and no LLM."""
    monkeypatch.setenv("RAG_STORAGE_DIR", str(tmp_path / "storage"))
    for variable in ("MILVUS_URI", "MONGODB_URI", "LLM_PROVIDER", "RAG_RERANKER"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path / "storage"


def listing(capsys: pytest.CaptureFixture[str], collection: str) -> list[dict[str, Any]]:
    code, out, err = run_cli(capsys, "list", "--json", "--collection", collection)
    assert code == 0, err
    documents: list[dict[str, Any]] = json.loads(out)
    return documents


@pytest.mark.slow
def test_a_shelf_with_bad_files_stores_the_good_ones_whole_and_nothing_else(
    storage: Path,
    tmp_path: Path,
    unreadable: MakeUnreadable,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shelf = tmp_path / "shelf"
    bad = make_shelf(shelf, unreadable)
    code, out, err = run_cli(capsys, "ingest", str(shelf), "--collection", "c")
    assert code == 1, err
    files, total = parse_report(out)
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == len(bad), err
    for name, fragment in bad.items():
        [line] = [e for e in errors if name in e]
        assert fragment in line.lower()
    assert_totals_add_up(files, total)
    stored = {d["name"]: d for d in listing(capsys, "c")}
    assert set(stored) == {"good.pdf", "other.pdf"}
    for name, document in stored.items():
        assert document["health"] == "ok"
        assert document["chunksInMilvus"] == document["chunksInDocstore"] > 0
        assert document["chunksInDocstore"] == int(files[name]["chunks"])
        assert document["pages"] == int(files[name]["pages"])

    code, out, err = run_cli(
        capsys, "ingest", str(shelf / "good.pdf"), str(shelf / "nested"), "--collection", "c"
    )
    assert code == 1, err  # nested/loop is still there
    again, total = parse_report(out)
    assert {n: f["status"] for n, f in again.items()} == {
        "good.pdf": "skipped",
        "loop": "failed",
        "other.pdf": "skipped",
    }
    assert total["ingested"] == "0" and total["rate"] == "0.00"


@pytest.mark.slow
def test_ctrl_c_while_storing_keeps_the_finished_files_and_nothing_half_written(
    storage: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from citerag.store.milvus_index import MilvusIndex

    for name in ("a.pdf", "b.pdf", "c.pdf"):
        text_pdf(tmp_path / name, pages=2, subject=f"Document {name} about harbours.")
    real_insert = MilvusIndex.insert
    inserts: list[str] = []

    def insert_then_interrupt(self: MilvusIndex, collection: str, rows: Any) -> None:
        inserts.append(collection)
        real_insert(self, collection, rows)
        if len(inserts) == 2:  # b.pdf's vectors are in Milvus, its record is still pending
            raise KeyboardInterrupt

    monkeypatch.setattr(MilvusIndex, "insert", insert_then_interrupt)
    code, out, err = run_cli(capsys, "ingest", str(tmp_path), "--collection", "k")
    monkeypatch.setattr(MilvusIndex, "insert", real_insert)
    assert code == 130, err
    assert out.splitlines()[0].startswith("a.pdf: ingested (2 pages, ")
    [document] = listing(capsys, "k")
    assert document["name"] == "a.pdf" and document["health"] == "ok"
    with main.open_engine() as engine:  # below the listing, which shows ready documents only
        records = engine.docstore.list_documents("k", include_pending=True)
        assert [(r.name, r.status) for r in records] == [("a.pdf", "ready")]
        assert engine.vectors.count("k") == document["chunksInMilvus"]
        assert {c.ref_doc_id for c in engine.docstore.ready_chunks("k")} == {document["docId"]}


def test_the_stage_clock_tells_each_stage_and_keeps_its_seconds() -> None:
    from citerag.ingest.pipeline import StageClock

    ticks = iter([0.0, 2.0, 2.0, 2.5, 2.5, 10.0])
    told: list[str] = []
    clock = StageClock(told.append, clock=lambda: next(ticks))
    clock("parse")
    clock("embed")
    clock("parse")
    assert told == ["parse", "embed", "parse"]
    assert clock.finish() == {"parse": 2.0 + 7.5, "embed": 0.5}


def test_the_total_line_says_where_the_time_went_largest_first() -> None:
    from citerag.cli_output import format_totals
    from citerag.ingest.shelf import ShelfTotals

    totals = ShelfTotals(2, 2, 0, 0, 10, 20, 10, 12.0, {"parse": 3.0, "embed": 8.25})
    line = format_totals(totals, "lib")
    assert line.endswith("; embed 8.2 s, parse 3.0 s") or line.endswith(
        "; embed 8.3 s, parse 3.0 s"
    )


class PreparingEngine(FakeEngine):
    """Records, for each file it ingests, which files it had been told to prepare by then."""

    def __init__(self) -> None:
        super().__init__()
        self.prepared: list[str] = []
        self.prepared_before: dict[str, list[str]] = {}

    def prepare(self, path: Path) -> None:
        self.prepared.append(path.name)

    def ingest(
        self, path: Path, collection: str, progress: Progress | None = None
    ) -> IngestOutcome:
        self.prepared_before[path.name] = list(self.prepared)
        return super().ingest(path, collection, progress)


def test_files_are_parsed_ahead_in_order_up_to_three_beyond_the_one_ingested(
    tmp_path: Path,
) -> None:
    paths = [text_pdf(tmp_path / "a.pdf"), tmp_path / "b-missing.pdf"]
    paths += [text_pdf(tmp_path / f"{name}.pdf", subject=name) for name in "cdefg"]
    engine = PreparingEngine()
    found = discover_pdfs(paths)
    ingest_shelf(engine, found, "c", lambda *_: NoProgress(), lambda _: None)
    # a path discovery refused is never parsed ahead; each usable one exactly once
    assert engine.prepared == ["a.pdf", "c.pdf", "d.pdf", "e.pdf", "f.pdf", "g.pdf"]
    assert engine.prepared_before["a.pdf"] == ["a.pdf", "c.pdf", "d.pdf", "e.pdf"]
    assert engine.prepared_before["c.pdf"] == engine.prepared[:5]
    assert engine.prepared_before["g.pdf"] == engine.prepared


class NoProgress:
    """A FileProgress that shows nothing."""

    def __call__(self, stage: str) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_background_parse_lands_in_the_parse_cache(tmp_path: Path) -> None:
    from citerag.ingest.prefetch import ParsePrefetcher
    from citerag.parse.cache import cache_path
    from citerag.settings import Settings

    settings = Settings(storage_dir=tmp_path / "storage")
    pdf = text_pdf(tmp_path / "a.pdf", pages=3)
    prefetch = ParsePrefetcher(settings)
    try:
        prefetch.start(pdf)
        prefetch.wait(pdf)
        prefetch.wait(tmp_path / "never-started.pdf")  # nothing to wait for
        broken = corrupt_pdf(tmp_path / "broken.pdf")
        prefetch.start(broken)
        prefetch.wait(broken)  # its failure is left for the ingest in line to report
    finally:
        prefetch.close()
    cached = cache_path(settings.storage.parse_cache_dir, inspect_pdf(pdf).sha256, "pymupdf")
    assert cached.is_file()
