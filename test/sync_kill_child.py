"""One folder sync in a process of its own, for test_folder_sync.py's kill test.

`python sync_kill_child.py STORAGE FOLDER COLLECTION KILL_AT`: syncs FOLDER into COLLECTION
(Milvus Lite, SQLite and keyword files in STORAGE); with KILL_AT > 0 the process SIGKILLs itself
right after its KILL_AT-th write to any store (docstore, Milvus, keyword index). Without, it
prints one JSON line: the documents stored, whether every store agrees, and how many writes the
sync made. The embedder is kill_harness's deterministic stand-in (no model to load)."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kill_harness import HashEmbedder  # noqa: E402

from citerag.engine import Engine  # noqa: E402
from citerag.ingest.sync import is_inside, sync_folder  # noqa: E402
from citerag.nodes import doc_name_of  # noqa: E402
from citerag.settings import Settings  # noqa: E402

WRITES = {
    "docstore": (
        "put_document",
        "put_chunks",
        "put_sentence_vectors",
        "put_tree",
        "mark_ready",
        "delete_document",
    ),
    "vectors": ("insert", "delete_document", "delete_ids"),
    "keywords": ("add_document", "remove_document"),
}


class Quiet:
    def __call__(self, stage: str) -> None:
        """Stages are not shown."""

    def close(self) -> None:
        """Nothing to close."""


def count_writes(engine: Engine, kill_at: int) -> list[int]:
    written = [0]

    def counted(method: Callable[..., Any]) -> Callable[..., Any]:
        def write(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            written[0] += 1
            if written[0] == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)
            return result

        return write

    for store, names in WRITES.items():
        target = getattr(engine, store)
        for name in names:
            setattr(target, name, counted(getattr(target, name)))
    return written


def state(engine: Engine, folder: Path, collection: str) -> dict[str, Any]:
    records = engine.docstore.list_documents(collection, include_pending=True)
    whole = all(r.status == "ready" and is_inside(r.source, folder) for r in records)
    total = 0
    for record in records:
        chunks = engine.docstore.chunks_of(collection, record.doc_id)
        rows = engine.vectors.rows_of(collection, record.doc_id)
        names = {doc_name_of(c) for c in chunks} | {row.doc_name for row in rows}
        whole = whole and bool(chunks) and len(rows) == len(chunks) and names == {record.name}
        total += len(chunks)
    whole = whole and engine.vectors.count(collection) == total
    indexed = set(engine.keywords.doc_ids(collection))
    whole = whole and indexed == {r.doc_id for r in records}
    return {"documents": sorted(r.name for r in records), "consistent": whole}


def main() -> None:
    storage, folder, collection, kill_at = sys.argv[1:5]
    engine = Engine(Settings(storage_dir=Path(storage)), embedder=HashEmbedder())
    written = count_writes(engine, int(kill_at))
    sync_folder(engine, Path(folder), collection, lambda _: Quiet(), lambda _: None)
    report = {**state(engine, Path(folder), collection), "writes": written[0]}
    engine.close()
    print(json.dumps(report))


if __name__ == "__main__":
    main()
