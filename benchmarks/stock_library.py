"""The stock LlamaIndex ingest of a set of PDFs into one index, as its own process.

What a user would build without this project: PyMuPDF `page.get_text()` per page, LlamaIndex's
`SentenceSplitter(1024, 200)`, MiniLM through `HuggingFaceEmbedding` into an in-memory
`VectorStoreIndex`, plus a bm25s index (`BM25Retriever`) over the same nodes. `bench_library.py`
runs it in a fresh process and times the whole run (imports and model load included, as it
times the project's `main.py ingest`); the index is then persisted for the questions, outside
the timed part.

    python benchmarks/stock_library.py --persist DIR PDF [PDF ...]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.baselines import (  # noqa: E402
    CHUNK_OVERLAP,
    CHUNK_SIZE,
    load_page_documents,
    minilm_embed_model,
)


def build(pdfs: list[Path], persist: Path) -> dict[str, float]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.node_parser import SentenceSplitter
    from llama_index.retrievers.bm25 import BM25Retriever

    started = time.perf_counter()
    embed_model = minilm_embed_model()
    documents = [doc for pdf in pdfs for doc in load_page_documents(pdf)]
    nodes = SentenceSplitter(
        chunk_size=CHUNK_SIZE, chunk_overlap=CHUNK_OVERLAP
    ).get_nodes_from_documents(documents)
    index = VectorStoreIndex(nodes, embed_model=embed_model)
    BM25Retriever.from_defaults(nodes=nodes, similarity_top_k=10)
    seconds = time.perf_counter() - started
    index.storage_context.persist(persist_dir=str(persist))
    return {"seconds_in_process": seconds, "pages": len(documents), "chunks": len(nodes)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--persist", type=Path, required=True)
    parser.add_argument("pdfs", type=Path, nargs="+")
    args = parser.parse_args()
    print(json.dumps(build(args.pdfs, args.persist)))


if __name__ == "__main__":
    main()
