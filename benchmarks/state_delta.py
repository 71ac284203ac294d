"""Time of a question's refresh of the collection state when nothing changed, after one added
document and after one deleted document, at N chunks.

The collection is built as `benchmarks.state_memory` builds it (10-K text copied as 100-page
documents of 300 chunks, written through the SQLite docstore and the bm25s-files keyword index,
one document at a time). Another docstore object on the same file then adds or deletes one
document, as a second process would, and this one's next refresh is timed (median of
`--rounds`). Uses only `refresh_state`'s signature, so the same script times an older checkout
(run it with that checkout first on PYTHONPATH).

Run: .venv/bin/python -m benchmarks.state_delta [--chunks 10000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.state_memory import PAGES_PER_DOC, PDFS, page_texts, write
from benchmarks.systems.profiles import FINANCE
from benchmarks.tables import shared_data_missing
from citerag.eval.machine import describe_machine
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.sqlite_docstore import SQLiteDocStore

COLLECTION = "big"  # state_memory.write's


def timed(
    state: CollectionState, store: SQLiteDocStore, keywords: BM25FilesIndex
) -> tuple[CollectionState, float]:
    started = time.perf_counter()
    newer = refresh_state(state, store, keywords, COLLECTION, FINANCE)
    return newer, time.perf_counter() - started


def run(chunks: int, rounds: int, folder: Path) -> list[tuple[str, str]]:
    texts = page_texts()
    writer = SQLiteDocStore(folder / "docstore.sqlite")  # the other process's
    keywords = BM25FilesIndex(folder / "keywords")
    written, copy = 0, 0
    while written < chunks:
        first = (copy * PAGES_PER_DOC) % len(texts)
        pages = [texts[(first + i) % len(texts)] for i in range(PAGES_PER_DOC)]
        written += write(writer, keywords, f"{copy:016x}" + "0" * 48, pages)
        copy += 1
    reader = SQLiteDocStore(folder / "docstore.sqlite")
    started = time.perf_counter()
    state = refresh_state(None, reader, keywords, COLLECTION, FINANCE)
    cold_s = time.perf_counter() - started
    unchanged, added, deleted = [], [], []
    for n in range(rounds):
        for _ in range(5):
            state, took = timed(state, reader, keywords)
            unchanged.append(took)
        doc_id = f"{0xF000 + n:016x}" + "f" * 48
        write(writer, keywords, doc_id, texts[:PAGES_PER_DOC])
        state, took = timed(state, reader, keywords)
        assert doc_id in state.docs
        added.append(took)
        keywords.remove_document(COLLECTION, doc_id)
        writer.delete_document(COLLECTION, doc_id)
        state, took = timed(state, reader, keywords)
        assert doc_id not in state.docs
        deleted.append(took)
    reader.close()
    writer.close()

    def ms(values: list[float]) -> str:
        return f"{statistics.median(values) * 1000:.2f} ms"

    return [
        ("chunks / documents", f"{len(state.places)} / {len(state.docs)}"),
        ("cold open", f"{cold_s:.2f} s"),
        ("refresh, nothing changed (median)", ms(unchanged)),
        ("refresh after one added 300-chunk document (median)", ms(added)),
        ("refresh after one deleted document (median)", ms(deleted)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    if shared_data_missing(PDFS):
        return
    with tempfile.TemporaryDirectory() as folder:
        rows = run(args.chunks, args.rounds, Path(folder))
    print(describe_machine())
    print("\n".join(f"| {name} | {value} |" for name, value in rows))


if __name__ == "__main__":
    main()
