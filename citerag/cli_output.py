"""Human-readable output for the CLI: answers with citations, document tables, progress."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from tqdm import tqdm

INGEST_STEPS = ("parse", "chunk", "embed", "store")
WIDTH = 100


def progress_printer(name: str) -> Callable[[str], None]:
    """A progress bar over the ingestion steps of one document (on stderr)."""
    bar: tqdm[Any] | None = None

    def advance(step: str) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=len(INGEST_STEPS), desc=name, unit="step", file=sys.stderr, leave=True)
        bar.set_postfix_str(step)
        bar.update(1)
        if step == INGEST_STEPS[-1]:
            bar.close()

    return advance


def format_answer(question: str, result: Any) -> str:
    """The question, the answer with [N] markers, then each source with its highlights."""
    data = result.to_dict()
    lines = ["", "=" * WIDTH, f"Q: {question}", "-" * WIDTH]
    lines += textwrap.wrap(data["answer"], WIDTH) or [""]
    meta = data["metadata"]
    lines.append(
        f"({meta['model']}, {meta['retrievalMethod']}, reranked={meta['reranked']}, "
        f"{meta['processingTime']} ms)"
    )
    for source in data["sources"]:
        title = f" — {source['title']}" if source.get("title") else ""
        lines.append(
            f"  [{source['citationNumber']}] {source['documentName']}, page {source['pageNumber']}"
            f"{title} (score {source['score']:.3f})"
        )
        for highlight in source["highlights"]:
            snippet = " ".join(highlight["text"].split())
            lines += textwrap.wrap(
                f"» {snippet}", WIDTH, initial_indent="      ", subsequent_indent="        "
            )
    return "\n".join(lines)


def format_documents(documents: Sequence[Any]) -> str:
    if not documents:
        return "No documents stored yet; add one with `python main.py ingest PATH`."
    header = f"{'collection':<16} {'document':<44} {'pages':>5} {'milvus':>7} {'docstore':>8}"
    rows = [header, "-" * len(header)]
    for d in documents:
        rows.append(
            f"{d.collection:<16} {d.name[:44]:<44} {d.pages:>5} {d.chunks_in_milvus:>7} "
            f"{d.chunks_in_docstore:>8}"
        )
    return "\n".join(rows)
