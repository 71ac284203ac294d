"""`main.py ingest FOLDER --sync` and `--watch`: the collection becomes what the folder holds
(added, replaced, renamed without embedding, removed), documents from elsewhere stay, a kill at
any point then a plain re-run gives the same collection, and the watcher picks up a new file in
seconds while leaving a file that is still being written alone."""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from helpers import MILVUS_BACKENDS, PROJECT_DIR, milvus_uri_for, text_pdf
from serve_helpers import CLEARED

from citerag.embed.embedder import Embedder
from citerag.engine import Engine
from citerag.ingest.shelf import FileResult
from citerag.ingest.sync import SyncTotals, sync_folder
from citerag.nodes import doc_name_of
from citerag.settings import Settings

pytestmark = pytest.mark.slow
COLLECTION = "synced"
CHILD = Path(__file__).with_name("sync_kill_child.py")


def pdf(folder: Path, name: str, word: str, pages: int = 2) -> Path:
    """A PDF whose every line names `word` (so its chunks and sentences can be recognised)."""
    return text_pdf(folder / name, pages, f"The {word} report covers {word} revenue.")


class CountingEmbedder(Embedder):
    """MiniLM, keeping every text it is asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts += texts
        return super().embed(texts)


@pytest.fixture(scope="module")
def embedder() -> CountingEmbedder:
    return CountingEmbedder()


@pytest.fixture(params=MILVUS_BACKENDS)
def engine(
    request: pytest.FixtureRequest, tmp_path: Path, embedder: CountingEmbedder
) -> Iterator[Engine]:
    settings = Settings(
        storage_dir=tmp_path / "storage", milvus_uri=milvus_uri_for(request, request.param)
    )
    opened = Engine(settings, embedder=embedder)
    yield opened
    if settings.storage.milvus_uri:
        opened.vectors.drop_collection(COLLECTION)  # type: ignore[attr-defined]
    opened.close()


def sync(engine: Engine, folder: Path) -> list[FileResult]:
    class NoProgress:
        def __call__(self, stage: str) -> None:
            """Stages are not shown."""

        def close(self) -> None:
            """Nothing to close."""

    return sync_folder(engine, folder, COLLECTION, lambda _: NoProgress(), lambda _: None)


def stored(engine: Engine) -> dict[str, str]:
    """Document name -> source, after checking each one is whole in every store."""
    records = engine.docstore.list_documents(COLLECTION, include_pending=True)
    assert all(r.status == "ready" for r in records)
    total = 0
    for record in records:
        chunks = engine.docstore.chunks_of(COLLECTION, record.doc_id)
        rows = engine.vectors.rows_of(COLLECTION, record.doc_id)
        assert chunks and len(rows) == len(chunks)
        assert {doc_name_of(c) for c in chunks} == {row.doc_name for row in rows} == {record.name}
        total += len(chunks)
    assert engine.vectors.count(COLLECTION) == total
    assert set(engine.keywords.doc_ids(COLLECTION)) == {r.doc_id for r in records}
    return {r.name: r.source for r in records}


def test_sync_adds_replaces_renames_and_removes_without_embedding_a_rename(
    engine: Engine, embedder: CountingEmbedder, tmp_path: Path
) -> None:
    folder, elsewhere = tmp_path / "shelf", tmp_path / "elsewhere"
    folder.mkdir(), elsewhere.mkdir()
    for name, word in (("alpha.pdf", "alpha"), ("bravo.pdf", "bravo"), ("charlie.pdf", "charlie")):
        pdf(folder, name, word)
    engine.ingest(pdf(elsewhere, "other.pdf", "other"), COLLECTION)  # not from the folder
    first = SyncTotals.of(sync(engine, folder))
    assert (first.added, first.removed, first.failed) == (3, 0, 0)

    (folder / "alpha.pdf").unlink()
    pdf(folder, "charlie.pdf", "changed charlie", pages=3)
    (folder / "bravo.pdf").rename(folder / "bravo-2024.pdf")
    pdf(folder, "delta.pdf", "delta")
    embedder.texts.clear()
    results = sync(engine, folder)

    by_name = {r.name: r.status for r in results}
    assert by_name == {
        "bravo-2024.pdf": "renamed",
        "charlie.pdf": "replaced",
        "delta.pdf": "ingested",
        "alpha.pdf": "removed",
    }
    totals = SyncTotals.of(results)
    assert (totals.added, totals.replaced, totals.removed, totals.unchanged) == (1, 1, 1, 0)
    assert embedder.texts and not [t for t in embedder.texts if "bravo" in t]
    expected = {p.name: str(p.resolve()) for p in folder.iterdir()}
    assert {k: v for k, v in stored(engine).items() if k != "other.pdf"} == expected
    assert "other.pdf" in stored(engine)

    answer = engine.query("What does the bravo report cover?", COLLECTION, plan=False)
    assert answer.sources[0].document_name == "bravo-2024.pdf"

    again = SyncTotals.of(sync(engine, folder))
    assert (again.unchanged, again.added, again.removed, again.renamed) == (3, 0, 0, 0)


def test_a_renamed_copy_stays_one_document_and_a_file_being_written_is_left_alone(
    engine: Engine, tmp_path: Path
) -> None:
    folder = tmp_path / "shelf"
    folder.mkdir()
    pdf(folder, "alpha.pdf", "alpha")
    sync(engine, folder)
    shutil.copy(folder / "alpha.pdf", folder / "alpha-copy.pdf")
    pdf(folder, "half.pdf", "half")
    results = sync_folder(
        engine,
        folder,
        COLLECTION,
        lambda _: _Quiet(),
        lambda _: None,
        settling={str((folder / "half.pdf").resolve())},
    )
    assert {r.name: (r.status, r.same_as) for r in results} == {
        "alpha.pdf": ("skipped", ""),
        "alpha-copy.pdf": ("skipped", "alpha.pdf"),
        "half.pdf": ("waiting", ""),
    }
    assert set(stored(engine)) == {"alpha.pdf"}


class _Quiet:
    def __call__(self, stage: str) -> None:
        """Stages are not shown."""

    def close(self) -> None:
        """Nothing to close."""


def child(storage: Path, folder: Path, kill_at: int = 0) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, str(CHILD), str(storage), str(folder), COLLECTION, str(kill_at)]
    return subprocess.run(command, cwd=PROJECT_DIR, capture_output=True, text=True, timeout=300)


def test_a_kill_at_any_store_write_of_a_sync_then_a_rerun_leaves_the_folder(
    tmp_path: Path,
) -> None:
    folder, base = tmp_path / "shelf", tmp_path / "base"
    folder.mkdir()
    for name in ("alpha.pdf", "bravo.pdf", "charlie.pdf"):
        pdf(folder, name, name[:-4])
    done = child(base, folder)
    assert done.returncode == 0, done.stderr
    (folder / "alpha.pdf").unlink()
    pdf(folder, "charlie.pdf", "changed charlie", pages=3)
    (folder / "bravo.pdf").rename(folder / "bravo-2024.pdf")
    pdf(folder, "delta.pdf", "delta")
    shutil.copytree(base, tmp_path / "reference")
    whole = child(tmp_path / "reference", folder)
    assert whole.returncode == 0, whole.stderr
    expected = json.loads(whole.stdout.splitlines()[-1])
    assert sorted(expected["documents"]) == sorted(p.name for p in folder.iterdir())
    writes = expected["writes"]
    assert writes > 10
    for kill_at in sorted({1, 2, writes // 4, writes // 2, (3 * writes) // 4, writes - 1}):
        storage = tmp_path / f"killed-{kill_at}"
        shutil.copytree(base, storage)
        killed = child(storage, folder, kill_at)
        assert killed.returncode == -signal.SIGKILL, (kill_at, killed.stderr[-2000:])
        rerun = child(storage, folder)
        assert rerun.returncode == 0, (kill_at, rerun.stderr[-2000:])
        state = json.loads(rerun.stdout.splitlines()[-1])
        assert state["documents"] == expected["documents"], kill_at
        assert state["consistent"], (kill_at, state)


WITH_DEFAULT_SIGINT = (
    "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])"
)


class Lines:
    """A process's stdout lines, read on a thread, waited for with a deadline."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self._lines: queue.Queue[str] = queue.Queue()
        self.seen: list[str] = []
        assert process.stdout is not None
        stream = process.stdout
        threading.Thread(target=lambda: [self._lines.put(x) for x in stream], daemon=True).start()

    def wait_for(self, text: str, seconds: float) -> float:
        """Seconds until a line holding `text` came; fails after `seconds`."""
        started = time.monotonic()
        while time.monotonic() - started < seconds:
            try:
                line = self._lines.get(timeout=0.2)
            except queue.Empty:
                continue
            self.seen.append(line)
            if text in line:
                return time.monotonic() - started
        raise AssertionError(f"no line with {text!r} in {seconds} s: {self.seen}")


def test_watch_picks_up_a_new_file_in_seconds_and_waits_for_one_being_written(
    tmp_path: Path,
) -> None:
    folder, storage = tmp_path / "shelf", tmp_path / "storage"
    folder.mkdir()
    pdf(folder, "alpha.pdf", "alpha")
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(RAG_STORAGE_DIR=str(storage), HF_HUB_OFFLINE="1")
    # The watch stops on SIGINT, as Ctrl-C sends it. A test run started in the background of a
    # non-interactive shell ignores SIGINT and its children inherit that; the child starts with
    # SIGINT's default action, as it has when a user starts a watch at a terminal.
    command = [
        sys.executable,
        "-c",
        WITH_DEFAULT_SIGINT,
        "main.py",
        "ingest",
        str(folder),
        "--watch",
    ]
    process = subprocess.Popen(
        [*command, "--collection", COLLECTION],
        cwd=PROJECT_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        lines = Lines(process)
        lines.wait_for("synced", 120)
        pdf(folder, "bravo.pdf", "bravo")
        assert lines.wait_for("bravo.pdf: ingested", 15) < 10

        whole = pdf(tmp_path, "charlie.pdf", "charlie", pages=30).read_bytes()
        with (folder / "charlie.pdf").open("wb") as writing:
            for start in range(0, len(whole), len(whole) // 12):  # over about 4 s
                writing.write(whole[start : start + len(whole) // 12])
                writing.flush()
                time.sleep(0.35)
        lines.wait_for("charlie.pdf: ingested", 20)
        assert not [
            x
            for x in lines.seen
            if "charlie" in x and "ingested" not in x and "waiting" not in x and "synced" not in x
        ], lines.seen
        assert not [x for x in lines.seen if "failed" in x or "error" in x], lines.seen
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=60) == 0
    listed = subprocess.run(
        [sys.executable, "main.py", "list", "--json", "--collection", COLLECTION],
        cwd=PROJECT_DIR,
        env=env,
        capture_output=True,
        text=True,
    )
    documents = json.loads(listed.stdout)
    assert sorted(d["name"] for d in documents) == ["alpha.pdf", "bravo.pdf", "charlie.pdf"]
    assert all(d["chunksInMilvus"] == d["chunksInDocstore"] > 0 for d in documents)


def cited(base: str, collection: str, question: str) -> list[str]:
    import httpx

    response = httpx.post(
        f"{base}/api/rag/query", json={"query": question, "collection": collection}, timeout=120
    )
    if response.status_code == 404:  # the collection holds nothing any more
        return []
    assert response.status_code == 200, response.text
    return [source["documentName"] for source in response.json()["sources"]]


@pytest.mark.server
def test_a_serve_process_sees_what_a_sync_in_another_process_added_renamed_and_removed(
    tmp_path: Path, milvus_server_uri: str, mongo_wire_uri: str
) -> None:
    import uuid

    from serve_helpers import running_server

    collection = f"sync_{uuid.uuid4().hex[:8]}"
    shared = {
        "MILVUS_URI": milvus_server_uri,
        "MONGODB_URI": mongo_wire_uri,
        "MONGODB_DATABASE": collection,
    }
    folder = tmp_path / "shelf"
    folder.mkdir()
    pdf(folder, "alpha.pdf", "alpha")
    pdf(folder, "bravo.pdf", "bravo")
    env = {k: v for k, v in os.environ.items() if k not in CLEARED}
    env.update(RAG_STORAGE_DIR=str(tmp_path / "syncing"), HF_HUB_OFFLINE="1", **shared)

    def sync_in_another_process() -> None:
        command = [sys.executable, "main.py", "ingest", str(folder), "--sync"]
        done = subprocess.run(
            [*command, "--collection", collection],
            cwd=PROJECT_DIR,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr[-2000:]

    question = "What does the bravo report cover?"
    (tmp_path / "serving").mkdir()
    with running_server(tmp_path / "serving" / "storage", **shared) as base:
        sync_in_another_process()
        assert cited(base, collection, question)[0] == "bravo.pdf"
        (folder / "bravo.pdf").rename(folder / "bravo-2024.pdf")
        sync_in_another_process()
        renamed = cited(base, collection, question)
        assert renamed[0] == "bravo-2024.pdf" and "bravo.pdf" not in renamed
        (folder / "bravo-2024.pdf").unlink()
        sync_in_another_process()
        assert not {"bravo.pdf", "bravo-2024.pdf"} & set(cited(base, collection, question))
