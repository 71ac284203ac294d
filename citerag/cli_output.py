"""Human-readable output for the CLI: answers with citations, document tables, progress."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TextIO

from tqdm import tqdm

if TYPE_CHECKING:
    from citerag.answer.contract import AnswerResult, UnsupportedRecord
    from citerag.engine import DocumentSummary
    from citerag.ingest.shelf import FileResult, ShelfTotals
    from citerag.ingest.sync import SyncTotals

WIDTH = 100


class StageBar:
    """One file's ingest stages on stderr: a tqdm bar on a terminal, else a plain line each."""

    def __init__(self, label: str, stream: TextIO | None = None) -> None:
        self._label = label
        self._stream = stream or sys.stderr
        self._plain = not self._stream.isatty()
        self._bar: tqdm[NoReturn] | None = None

    def __call__(self, stage: str) -> None:
        if self._plain:
            print(f"{self._label}: {stage}", file=self._stream, flush=True)
            return
        from citerag.ingest.pipeline import STAGES  # loaded by then: ingest is running

        if self._bar is None:
            self._bar = tqdm(
                total=len(STAGES), desc=self._label, unit="stage", file=self._stream, leave=False
            )
        done = STAGES.index(stage) if stage in STAGES else self._bar.n
        self._bar.set_postfix_str(stage)
        if done > self._bar.n:
            self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


def format_file_result(result: FileResult) -> str:
    """One file's line: name, status, pages, chunks, seconds."""
    same = f", same bytes as {result.same_as!r}" if result.same_as else ""
    return (
        f"{result.name}: {result.status} ({result.pages} pages, {result.chunks} chunks, "
        f"{result.seconds:.1f} s{same})"
    )


def format_sync_result(result: FileResult) -> str:
    """One line of a folder sync: a file's ingest line, or what a rename or removal did."""
    if result.status == "renamed":
        return f"{result.name}: renamed from {result.same_as!r} (nothing embedded again)"
    if result.status == "removed":
        return f"{result.name}: removed (its file is gone from the folder)"
    if result.status == "waiting":
        return f"{result.name}: waiting (still being written)"
    return format_file_result(result)


def format_sync_totals(totals: SyncTotals, folder: Path, collection: str) -> str:
    """The summary line: added / replaced / removed / unchanged, and renames, repairs (documents
    stored incompletely before, ingested again) and failures."""
    extra = "".join(
        f", {count} {what}"
        for what, count in (
            ("repaired", totals.repaired),
            ("failed", totals.failed),
            ("waiting", totals.waiting),
        )
        if count
    )
    return (
        f"synced {folder} into collection {collection!r}: {totals.added} added / "
        f"{totals.replaced} replaced / {totals.removed} removed / {totals.unchanged} unchanged "
        f"({totals.renamed} renamed{extra})"
    )


def format_totals(totals: ShelfTotals, collection: str) -> str:
    return (
        f"total in collection {collection!r}: {totals.files} files ({totals.written} ingested, "
        f"{totals.skipped} skipped, {totals.failed} failed), {totals.pages} pages, "
        f"{totals.chunks} chunks, {totals.seconds:.1f} s, {totals.pages_per_second:.2f} pages/s"
        + _stage_note(totals.stages)
    )


def _stage_note(stages: dict[str, float]) -> str:
    """Where the ingest time went, e.g. "; parse 40.2 s, embed 120.5 s" (largest first)."""
    spent = sorted(stages.items(), key=lambda item: -item[1])
    return "; " + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in spent) if spent else ""


def format_answer(question: str, result: AnswerResult) -> str:
    """The question, the answer with [N] markers, then each source with its highlights."""
    data = result.to_dict()
    meta = data["metadata"]
    lines = ["", "=" * WIDTH, f"Q: {question}"]
    if meta.get("condensedQuestion", question) != question:
        lines.append(f"   asked as: {meta['condensedQuestion']} ({meta['condenseMethod']})")
    lines.append("-" * WIDTH)
    lines += textwrap.wrap(data["answer"], WIDTH) or [""]
    lines += _unsupported_lines(meta.get("unsupportedNumbers", []))
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


def _unsupported_lines(unsupported: Sequence[UnsupportedRecord]) -> list[str]:
    """A mark under the answer for each number no cited source holds."""
    lines = []
    for item in unsupported:
        cited = "".join(f"[{n}]" for n in item["citations"]) or "any source"
        lines += textwrap.wrap(
            f"! {item['number']} is not in {cited}: “{' '.join(item['claim'].split())}”",
            WIDTH,
            subsequent_indent="    ",
        )
    return lines


def format_documents(documents: Sequence[DocumentSummary]) -> str:
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
