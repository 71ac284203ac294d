"""The leanest stock a careful user would write: no framework around the model.

PyMuPDF `page.get_text()` per page, the same splitter as the LlamaIndex stock
(`SentenceSplitter(1024, 200)`), the same MiniLM through plain `SentenceTransformer.encode`
batches in one process, the vectors kept as one normalized matrix; a question is encoded the
same way and answered by a dot product and the top k rows.

    python -m benchmarks.systems.stock_lean --persist DIR PDF [PDF ...]

builds it (the suites time that process from outside) and writes `vectors.npy` and
`places.json` to DIR; `LeanDense(DIR)` answers from them.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from benchmarks.systems.stock_llamaindex import CHUNK_OVERLAP, CHUNK_SIZE, minilm_path

BATCH = 64
Place = tuple[str, int, str]


def chunk_pages(pdfs: list[Path]) -> list[Place]:
    """(document, page, chunk text) for every chunk of every page, in document order."""
    import pymupdf
    from llama_index.core.node_parser import SentenceSplitter

    splitter = SentenceSplitter(chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP)
    places: list[Place] = []
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            for number, page in enumerate(doc, start=1):
                places += [(pdf.name, number, c) for c in splitter.split_text(page.get_text())]
    return places


def build(pdfs: list[Path], persist: Path) -> dict[str, Any]:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    started = time.perf_counter()
    model = SentenceTransformer(str(minilm_path()), device="cpu")
    places = chunk_pages(pdfs)
    vectors = model.encode(
        [text for _, _, text in places], batch_size=BATCH, normalize_embeddings=True
    )
    seconds = time.perf_counter() - started
    persist.mkdir(parents=True, exist_ok=True)
    np.save(persist / "vectors.npy", vectors)
    (persist / "places.json").write_text(json.dumps(places), encoding="utf-8")
    return {"seconds_in_process": seconds, "chunks": len(places)}


class LeanDense:
    """Dense retrieve over the stored matrix: encode, dot product, top k."""

    def __init__(self, persist: Path, top_k: int = 10) -> None:
        import numpy as np
        from sentence_transformers import SentenceTransformer

        self._np = np
        self._model = SentenceTransformer(str(minilm_path()), device="cpu")
        self._vectors = np.load(persist / "vectors.npy")
        self._places = [tuple(p) for p in json.loads((persist / "places.json").read_text())]
        self._top_k = top_k

    def __call__(self, question: str) -> list[Place]:
        query = self._model.encode([question], normalize_embeddings=True)[0]
        scores = self._vectors @ query
        best = self._np.argsort(-scores)[: self._top_k]
        return [self._places[i] for i in best]


def main() -> None:
    parser = argparse.ArgumentParser(description="Build the lean stock index (timed run).")
    parser.add_argument("--persist", type=Path, required=True)
    parser.add_argument("pdfs", type=Path, nargs="+")
    args = parser.parse_args()
    print(json.dumps(build(args.pdfs, args.persist)))


if __name__ == "__main__":
    main()
