"""Kill the ingest process (SIGKILL) at random moments, then re-run it and count.

Run by test_kill_ingest.py as one subprocess per backend: it imports the engine once, then forks
one child per kill. Each child first re-runs the plain ingest of the PDF (after the previous
child was killed) and reports what Milvus, the docstore and the keyword index hold; then it
deletes the document and its cached parse and ingests it again, telling this process through a
pipe as it enters and leaves each phase (parse, embed, docstore write, Milvus insert, keyword
index write).
This process picks a phase and a delay within that phase's measured duration, and SIGKILLs the
child that long after it enters the phase. Prints one JSON summary.

The embedder is a deterministic hashing stand-in that takes about as long per text as MiniLM
does here (~4 ms a sentence on 2 cores): the model plays no part in durability, and forking a
process whose torch has started threads is unsafe.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import select
import shutil
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import citerag.ingest.reading_steps as reading_steps  # noqa: E402
import citerag.ingest.writing_steps as writing_steps  # noqa: E402
from citerag.chunk.chunker import chunk_document  # noqa: E402
from citerag.embed.embedder import Embedder  # noqa: E402
from citerag.engine import Engine  # noqa: E402
from citerag.parse.select import parse_document  # noqa: E402
from citerag.parse.validate import inspect_pdf  # noqa: E402
from citerag.settings import Settings  # noqa: E402
from citerag.store.bm25_files import BM25FilesIndex  # noqa: E402

PHASES = ("parse", "embed", "docstore", "milvus", "keywords")
DIM = 64
SECONDS_PER_TEXT = 0.004  # MiniLM here: ~220 sentences/s
COLLECTION = "killed"


class HashEmbedder(Embedder):
    """Normalized hashed bag-of-words vectors: deterministic, instant, no model."""

    def __init__(self) -> None:
        super().__init__()

    def load(self) -> None:
        """Nothing to load."""

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        time.sleep(SECONDS_PER_TEXT * len(texts))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in re.findall(r"\w+", text.lower()):
                out[row, int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % DIM] += 1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


def marked(fd: int, phase: str, function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        os.write(fd, f"enter:{phase}\n".encode())
        try:
            return function(*args, **kwargs)
        finally:
            os.write(fd, f"exit:{phase}\n".encode())

    return wrapper


def install_markers(fd: int, engine: Engine) -> None:
    for name in ("parse_document",):
        setattr(reading_steps, name, marked(fd, "parse", getattr(reading_steps, name)))
    for name in ("document_vectors", "chunk_vectors"):
        setattr(writing_steps, name, marked(fd, "embed", getattr(writing_steps, name)))
    for name in ("put_document", "put_chunks", "put_sentence_vectors", "put_tree", "mark_ready"):
        setattr(engine.docstore, name, marked(fd, "docstore", getattr(engine.docstore, name)))
    for name in ("ensure_collection", "insert"):
        setattr(engine.vectors, name, marked(fd, "milvus", getattr(engine.vectors, name)))
    for name in ("add_document", "remove_document"):
        setattr(engine.keywords, name, marked(fd, "keywords", getattr(engine.keywords, name)))


def check(engine: Engine, settings: Settings, pdf: Path) -> dict[str, Any]:
    """Counts after a plain re-run of the ingest; orphans on either side."""
    outcome = engine.ingest(pdf, COLLECTION)
    info = inspect_pdf(pdf)
    parsed = parse_document(
        pdf, info.sha256, settings.parse.parser, settings.storage.parse_cache_dir
    )
    expected = len(
        chunk_document(parsed, settings.ingest.chunk_size, settings.ingest.chunk_overlap)
    )
    docstore, vectors = engine.docstore, engine.vectors
    records = docstore.list_documents(COLLECTION, include_pending=True)
    stats = docstore.chunk_stats(COLLECTION)
    chunk_ids = {c.node_id for c in docstore.chunks_of(COLLECTION, outcome.doc_id)}
    milvus_ids = set(vectors.ids_of(COLLECTION, outcome.doc_id))
    keywords = BM25FilesIndex(settings.storage.keywords_dir)  # what a fresh process reads
    folder = settings.storage.keywords_dir / COLLECTION
    leftovers = (
        [p.name for p in folder.iterdir() if p.name != outcome.doc_id] if folder.is_dir() else []
    )
    return {
        "status": outcome.status,
        "expected": expected,
        "milvus": vectors.count(COLLECTION),
        "docstore": sum(count for count, _ in stats.values()),
        "records": [(r.doc_id == outcome.doc_id, r.status) for r in records],
        "orphan_rows": len(milvus_ids - chunk_ids)
        + len(vectors.doc_ids_except(COLLECTION, [outcome.doc_id])),
        "orphan_chunks": len(chunk_ids - milvus_ids) + len(set(stats) - {outcome.doc_id}),
        "keywords_match": keywords.doc_ids(COLLECTION) == {outcome.doc_id}
        and sorted(keywords.entry_ids(COLLECTION, outcome.doc_id)["chunk"]) == sorted(chunk_ids),
        "keyword_leftovers": leftovers,
        "sentence_vectors": len(docstore.get_sentence_vectors(COLLECTION, sorted(chunk_ids))),
    }


class SelfKillingConnection:
    """Forwards to an sqlite3 connection and SIGKILLs the process right after its `at`-th
    statement: a docstore write takes well under a millisecond here, too short for a signal from
    outside to land in, so this kill comes from inside the open transaction."""

    def __init__(self, connection: Any, at: int) -> None:
        self._connection, self._at, self._calls = connection, at, 0

    def _count(self) -> None:
        self._calls += 1
        if self._calls == self._at:
            os.kill(os.getpid(), signal.SIGKILL)

    def execute(self, *args: Any) -> Any:
        result = self._connection.execute(*args)
        self._count()
        return result

    def executemany(self, *args: Any) -> Any:
        result = self._connection.executemany(*args)
        self._count()
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._connection, name)


def child(fd: int, settings: Settings, pdf: Path, rerun: bool, self_kill_at: int = 0) -> None:
    engine = Engine(settings, embedder=HashEmbedder())
    if rerun:
        report = json.dumps(check(engine, settings, pdf))
        os.write(fd, f"checked:{report}\n".encode())
    engine.delete(pdf.name, COLLECTION)
    shutil.rmtree(settings.storage.parse_cache_dir, ignore_errors=True)
    install_markers(fd, engine)
    if self_kill_at and hasattr(engine.docstore, "_conn"):
        docstore: Any = engine.docstore
        docstore._conn = SelfKillingConnection(docstore._conn, self_kill_at)
    engine.ingest(pdf, COLLECTION)
    os.write(fd, b"done\n")
    engine.close()


class Child:
    """A forked child and the lines it writes to its pipe, each with its arrival time."""

    def __init__(self, settings: Settings, pdf: Path, rerun: bool, self_kill_at: int = 0) -> None:
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            code = 0
            try:
                child(write_fd, settings, pdf, rerun, self_kill_at)
            except BaseException as error:  # reported to the parent, then a hard exit
                os.write(write_fd, f"error:{type(error).__name__}: {error}\n".encode())
                code = 1
            os._exit(code)
        os.close(write_fd)
        self.pid, self._fd, self._buffer = pid, read_fd, b""

    def next_line(self, timeout_s: float = 120.0) -> str | None:
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            ready, _, _ = select.select([self._fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("the ingest child stopped answering")
            data = os.read(self._fd, 65536)
            if not data:
                return None
            self._buffer += data
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def reap(self) -> int:
        os.close(self._fd)
        return os.waitpid(self.pid, 0)[1]


def calibrate(settings: Settings, pdf: Path) -> tuple[dict[tuple[str, int], float], dict[str, int]]:
    """How long each entry into each phase lasts (keyed by phase and entry number, from 1) and
    how often each phase is entered, in an unkilled ingest into the existing collection (the
    second run: the first also creates it)."""
    for _ in range(2):
        run = Child(settings, pdf, rerun=False)
        durations: dict[tuple[str, int], float] = {}
        entries: Counter[str] = Counter()
        entered: dict[str, float] = {}
        while (line := run.next_line()) not in (None, "done"):
            assert line is not None
            if line.startswith("error:"):
                raise RuntimeError(line)
            kind, _, phase = line.partition(":")
            if kind == "enter":
                entered[phase] = time.monotonic()
                entries[phase] += 1
            elif kind == "exit":
                durations[(phase, entries[phase])] = time.monotonic() - entered[phase]
        run.reap()
    return durations, dict(entries)


def kill_once(
    settings: Settings, pdf: Path, phase: str, entry: int, delay: float
) -> dict[str, Any]:
    """One child: its re-run report, then a SIGKILL `delay` s after its `entry`-th entry (from 1)
    into `phase`."""
    inside = phase == "docstore" and settings.storage.mongodb_uri == ""
    run = Child(settings, pdf, rerun=True, self_kill_at=entry if inside else 0)
    report: dict[str, Any] = {"phase": phase, "entry": entry, "delay_ms": round(delay * 1000, 2)}
    last, seen = "", 0
    while (line := run.next_line()) is not None:
        if line.startswith(("checked:", "error:")):
            report["check" if line.startswith("checked:") else "error"] = (
                json.loads(line[8:]) if line.startswith("checked:") else line
            )
            if "error" in report:
                break
            continue
        last = line
        seen += line == f"enter:{phase}"
        if line == f"enter:{phase}" and seen == entry and not inside:
            time.sleep(delay)
            break
        if line == "done":
            break
    os.kill(run.pid, signal.SIGKILL)
    while (line := run.next_line()) is not None:  # what it wrote before dying
        last = line
    status = run.reap()
    report["killed"] = os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    report["landed"] = last
    return report


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--storage", type=Path, required=True)
    parser.add_argument("--milvus-uri", default="")
    parser.add_argument("--pdf", type=Path, required=True)
    parser.add_argument("--kills", type=int, default=25)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    settings = Settings(
        storage_dir=args.storage, milvus_uri=args.milvus_uri, chunk_size=96, chunk_overlap=16
    )
    rng = random.Random(args.seed)
    started = time.monotonic()
    durations, entries = calibrate(settings, args.pdf)
    kills = []
    for i in range(args.kills):
        phase = PHASES[i % len(PHASES)]
        # docstore: the statement after which the child kills itself (15 in one store)
        entry = rng.randint(1, 15 if phase == "docstore" else entries.get(phase, 1))
        # An entry shorter than a few milliseconds is over before a late signal lands: aim early.
        span = durations.get((phase, entry), 0.0)
        delay = rng.uniform(0, span if span > 0.005 else span / 4)
        kills.append(kill_once(settings, args.pdf, phase, entry, delay))
    final = Child(settings, args.pdf, rerun=True)
    final_check = final.next_line() or ""
    os.kill(final.pid, signal.SIGKILL)
    final.reap()
    summary = {
        "durations_ms": {f"{p}#{i}": round(d * 1000, 2) for (p, i), d in durations.items()},
        "kills": kills,
        "final": json.loads(final_check[8:])
        if final_check and final_check[:8] == "checked:"
        else final_check,
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
