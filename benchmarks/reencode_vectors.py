"""Re-encode every sentence and page-head vector of a stored SQLite docstore in another encoding,
so a suite can be asked again with `--reuse` (or on the same storage, its ingests skipped) and
differ from the first run only in the sentence vectors (benchmarks/results/vector_encoding.md).

Run: .venv/bin/python -m benchmarks.reencode_vectors storage/bench_retrieval/docstore.sqlite int8
"""

from __future__ import annotations

import argparse
import sqlite3
from pathlib import Path

from citerag.settings.choices import SENTENCE_VECTOR_ENCODINGS, SentenceVectorEncoding
from citerag.store.sqlite_docstore import SQLiteDocStore

BATCH = 2000


def reencode(path: Path, encoding: SentenceVectorEncoding) -> list[tuple[str, int, int, int]]:
    """Rewrites every vector row; (encoding, rows, vectors, bytes) per encoding afterwards."""
    with sqlite3.connect(path) as conn:
        keys = conn.execute("SELECT collection, chunk_id FROM sentence_vectors").fetchall()
    reader, writer = SQLiteDocStore(path), SQLiteDocStore(path, encoding)
    try:
        by_collection: dict[str, list[str]] = {}
        for collection, chunk_id in keys:
            by_collection.setdefault(collection, []).append(chunk_id)
        for collection, ids in by_collection.items():
            for start in range(0, len(ids), BATCH):
                vectors = reader.get_sentence_vectors(collection, ids[start : start + BATCH])
                writer.put_sentence_vectors(collection, vectors)
    finally:
        reader.close()
        writer.close()
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT encoding, COUNT(*), SUM(row_count), SUM(LENGTH(vectors))"
            " FROM sentence_vectors GROUP BY encoding"
        ).fetchall()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("docstore", type=Path, help="the docstore.sqlite file")
    parser.add_argument("encoding", choices=SENTENCE_VECTOR_ENCODINGS)
    args = parser.parse_args()
    if not args.docstore.is_file():
        raise SystemExit(f"{args.docstore} is not a file; give a stored docstore.sqlite.")
    for encoding, rows, vectors, size in reencode(args.docstore, args.encoding):
        print(f"{encoding}: {rows} rows, {vectors} vectors, {size:,} bytes")


if __name__ == "__main__":
    main()
