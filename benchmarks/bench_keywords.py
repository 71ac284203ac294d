"""Keyword search alone, bm25s beside Milvus's BM25 function, on every labelled set.

Every backend indexes the same texts: the chunk and page texts the project stores (`keyword_text`
per chunk, `page_texts` per page) for every shared PDF as one library, made by ingest's own
parse and chunk steps (embedding took over 13 minutes per 10-K on the loaded machine, and
keyword texts do not depend on vectors). Backends: the project's bm25s files (`BM25FilesIndex`,
statistics over the whole collection), Milvus BM25 on the raw text (its standard analyzer alone)
and Milvus BM25 on the project's tokens (`MilvusKeywordIndex`'s default). Each gets one
`add_document` per document, as ingest gives it, in a fresh folder. With `--hybrid
COLLECTION` the engine's whole retrieval (hybrid, reranked) runs once per keyword backend over
a collection ingested beforehand (rows "hybrid"; the Milvus keyword index fills itself from
the docstore on the first question).

Each question is asked two ways: of its document (allowed_ids: that document's entries, how
the engine asks a question about one PDF) and of the whole library (a hit needs the right
document too). Page hit@k ranks pages by the first chunk found on them ("chunk") or ranks the
page texts themselves ("page"). The essay's questions score chunks against their reference
contexts (citerag.eval.metrics). Run: python -m benchmarks.bench_keywords (parses are cached
in the storage folder's parse cache, so a second run starts at once).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from llama_index.core.schema import TextNode

import config
from benchmarks.datasets.library import EVAL, PDF_FOLDERS
from benchmarks.metrics.pages import PageScore, score_pages, summarize_pages
from benchmarks.systems.profiles import with_finance_words
from benchmarks.tables import RESULTS, publish, shared_data_missing
from citerag.chunk.chunker import chunk_document
from citerag.engine import Engine
from citerag.eval.machine import describe_machine
from citerag.eval.metrics import QuestionScore, percentile, score_question, summarize
from citerag.ingest.pipeline import ingest_key
from citerag.nodes import doc_id_of, doc_name_of, page_of
from citerag.parse.select import parse_document
from citerag.parse.validate import inspect_pdf
from citerag.retrieve.page_evidence import keyword_entries, page_texts
from citerag.settings import Settings, settings_from_config
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KINDS, KeywordEntry, KeywordKind, KeywordQuery
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_keywords import MilvusKeywordIndex

PROJECT = Path(__file__).resolve().parents[1]

PAGE_SETS = {
    "10-K (finance_qa)": EVAL / "finance" / "finance_qa.json",
    "10-K statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
    "MMLongBench-Doc dev": EVAL / "mmlongbench_dev" / "questions.json",
}
ESSAY = EVAL / "paul_graham" / "paul_graham_qa.json"
ESSAY_PDF = "paul_graham_essay.pdf"
KS = (1, 5, 10)
TOP_K = 30  # chunks fetched to rank 10 distinct pages
OUT = RESULTS / "keywords.md"

Hit = tuple[str, float]

FINDINGS = [
    "What the rows show, and why:",
    "",
    "- Stemming. Milvus's `standard` analyzer lower-cases and splits on word characters:",
    '  no stop words, no plural folding, and "3.5" or "24,996,056" become several tokens.',
    "  Fed the project's own tokens (`analyzer_text`: stop words out, plurals folded, thousands",
    '  separators dropped, a number\'s "." kept inside one token) Milvus ranks the same terms as',
    '  bm25s; compare the "raw text" rows (the cost of no stemming) with the pre-tokenized',
    "  ones (what `MilvusKeywordIndex` does by default).",
    "- IDF per segment. Milvus Lite keeps BM25 statistics (document count, average length,",
    "  document frequencies) per segment. Each added document is flushed as its own segment;",
    "  small segments are merged four at a time, so the newest one to three documents of a size",
    "  tier are scored against their own statistics: a word frequent in that document weighs",
    "  little there while other documents' segments weigh it fully. Within one document",
    '  ("document" scope) this hardly matters; across the library ("library" scope) the',
    "  newest document loses ground (the essay, added last, is the clearest case).",
    "- Speed. Milvus Lite's BM25 is pure Python (every posting scored, a row-by-row validity",
    "  mask per segment and search) and an `id in [...]` filter costs in proportion to its",
    "  length; bm25s is a sparse matrix product.",
    '- Choice. On Milvus Lite "auto" keeps bm25s: within a question or two of Milvus',
    "  pre-tokenized per document, ahead across the library (per-segment IDF), and about two",
    "  orders of magnitude faster. On a Milvus server from 2.5 it chooses Milvus BM25, the one",
    "  keyword index every `serve` process sees at once (a 2.3 server has no BM25 function:",
    "  bm25s). Servers aggregate BM25 statistics differently from Lite; not measured here.",
]


@dataclass
class Corpus:
    """The stored texts, per document, and where each entry id sits (document, page)."""

    entries: dict[str, list[KeywordEntry]]  # doc_id -> entries
    place: dict[str, tuple[str, int]]  # entry id -> (doc_id, page)
    text: dict[str, str]  # entry id -> text
    doc_of_name: dict[str, str]


def stored_chunks(pdfs: Sequence[Path], settings: Settings) -> list[TextNode]:
    """The chunks ingest would store for `pdfs` (its parse and chunk steps, its document ids),
    without embedding them: keyword texts do not depend on vectors or enrichment."""
    chunks: list[TextNode] = []
    for path in pdfs:
        info = inspect_pdf(path)
        parsed = parse_document(
            path,
            info.sha256,
            settings.parse.parser,
            settings.storage.parse_cache_dir,
            settings.parse.mineru_tier,
        )
        parsed = replace(parsed, doc_id=ingest_key(info.sha256, settings))
        chunks += chunk_document(parsed, settings.ingest.chunk_size, settings.ingest.chunk_overlap)
        print(f"parsed {path.name}: {len(parsed.pages)} pages", flush=True)
    return chunks


def load_corpus(nodes: Sequence[TextNode]) -> Corpus:
    corpus = Corpus(defaultdict(list), {}, {}, {})
    by_doc: dict[str, list[TextNode]] = defaultdict(list)
    for node in nodes:
        by_doc[doc_id_of(node)].append(node)
        corpus.place[node.node_id] = (doc_id_of(node), page_of(node))
        corpus.doc_of_name[doc_name_of(node)] = doc_id_of(node)
    for doc_id, doc_nodes in by_doc.items():
        corpus.entries[doc_id] = keyword_entries(doc_nodes)
        for key in page_texts(doc_nodes)[0]:
            corpus.place[key.id] = (key.doc_id, key.page)
        corpus.text.update((e.id, e.text) for e in corpus.entries[doc_id])
    return corpus


def hybrid_rows(settings: Settings, collection: str) -> list[Row]:
    """The engine's whole retrieval (hybrid, reranked) with each keyword backend, over a
    collection ingested beforehand (the keyword index fills itself from the docstore)."""
    rows = []
    for backend in ("bm25-files", "milvus"):
        engine = Engine(settings.with_overrides(keyword_backend=backend))
        try:
            names = {r.name for r in engine.docstore.list_documents(collection)}
            engine.retrieve("warm up", collection)
            for set_name, path in PAGE_SETS.items():
                asked = [q for q in _load(path) if q["document"] in names]
                if asked:
                    rows.append(hybrid_page_row(engine, collection, backend, set_name, asked))
            if ESSAY_PDF in names:
                rows.append(hybrid_essay_row(engine, collection, backend, _load(ESSAY)))
        finally:
            engine.close()
    return rows


def hybrid_page_row(
    engine: Engine, collection: str, backend: str, set_name: str, asked: list[dict[str, Any]]
) -> Row:
    scores, latencies = [], []
    for q in asked:
        start = time.perf_counter()
        nodes = engine.retrieve(q["question"], collection, top_k=max(KS))
        latencies.append((time.perf_counter() - start) * 1000)
        pages = [
            _Page(page_of(n.node) if doc_name_of(n.node) == q["document"] else -1 - i)
            for i, n in enumerate(nodes)
        ]
        scores.append(score_pages(pages, q["evidence_pages"], q["id"], ks=KS))
    summary = summarize_pages(scores, KS)
    return Row(
        set_name,
        "library",
        "hybrid",
        len(asked),
        backend,
        dict(summary.recall_at),
        percentile(latencies, 0.5),
    )


def hybrid_essay_row(
    engine: Engine, collection: str, backend: str, questions: list[dict[str, Any]]
) -> Row:
    scores, latencies = [], []
    for q in questions:
        start = time.perf_counter()
        nodes = engine.retrieve(q["query"], collection, top_k=max(KS))
        latencies.append((time.perf_counter() - start) * 1000)
        texts = [n.node.get_content() for n in nodes]
        scores.append(score_question(texts, q["reference_contexts"], recall_ks=(5, 10)))
    report = summarize(scores, hit_ks=KS)
    return Row(
        "Paul Graham essay (context hit)",
        "library",
        "hybrid",
        len(questions),
        backend,
        dict(report.hit_at),
        percentile(latencies, 0.5),
    )


Search = Callable[[KeywordKind, str, int, Collection[str] | None], list[Hit]]


def bm25s_backend(corpus: Corpus, folder: Path) -> Search:
    keywords = BM25FilesIndex(folder)
    for doc_id, entries in corpus.entries.items():
        keywords.add_document("bench", doc_id, entries)

    def search(kind: KeywordKind, query: str, k: int, allowed: Collection[str] | None) -> list[Hit]:
        return keywords.search("bench", KeywordQuery(kind, query, k, allowed))

    return search


def milvus_backend(corpus: Corpus, folder: Path, pretokenize: bool) -> tuple[Search, MilvusIndex]:
    milvus = MilvusIndex(str(folder / "milvus.db"))
    keywords = MilvusKeywordIndex(milvus, pretokenize=pretokenize)
    for doc_id, entries in corpus.entries.items():
        keywords.add_document("bench", doc_id, entries)

    def search(kind: KeywordKind, query: str, k: int, allowed: Collection[str] | None) -> list[Hit]:
        return keywords.search("bench", KeywordQuery(kind, query, k, allowed))

    return search, milvus


def segment_rows(folder: Path) -> dict[str, list[int]]:
    """Rows per Milvus Lite segment (data file) of each kind, read from the folder (for the
    report only: BM25 statistics are per segment)."""
    import pyarrow.parquet as pq

    return {
        kind: sorted(
            pq.read_metadata(path).num_rows
            for path in folder.glob(f"milvus.db/collections/*/partitions/{kind}/data/*.parquet")
        )
        for kind in KINDS
    }


@dataclass
class Row:
    set_name: str
    scope: str
    kind: str
    questions: int
    backend: str
    hit_at: dict[int, float]
    p50_ms: float


def timed(search: Search, latencies: list[float], *args: Any) -> list[Hit]:
    start = time.perf_counter()
    hits = search(*args)
    latencies.append((time.perf_counter() - start) * 1000)
    return hits


def page_rows(
    corpus: Corpus, backend: str, search: Search, set_name: str, questions: list[dict[str, Any]]
) -> list[Row]:
    rows = []
    for scope in ("document", "library"):
        for kind in KINDS:
            scores: list[PageScore] = []
            latencies: list[float] = []
            for q in questions:
                doc_id = corpus.doc_of_name[q["document"]]
                allowed = _ids_of(corpus, doc_id) if scope == "document" else None
                hits = timed(search, latencies, kind, q["question"], TOP_K, allowed)
                pages = ranked_pages(corpus, hits, doc_id)
                scores.append(score_pages(pages, q["evidence_pages"], q["id"], ks=KS))
            summary = summarize_pages(scores, KS)
            rows.append(
                Row(
                    set_name,
                    scope,
                    kind,
                    len(questions),
                    backend,
                    dict(summary.recall_at),
                    percentile(latencies, 0.5),
                )
            )
    return rows


def essay_rows(corpus: Corpus, backend: str, search: Search, questions: list[dict]) -> list[Row]:
    rows = []
    doc_id = corpus.doc_of_name[ESSAY_PDF]
    for scope in ("document", "library"):
        allowed = _ids_of(corpus, doc_id) if scope == "document" else None
        scores: list[QuestionScore] = []
        latencies: list[float] = []
        for q in questions:
            hits = timed(search, latencies, "chunk", q["query"], max(KS), allowed)
            texts = [corpus.text[i] for i, _ in hits]
            scores.append(score_question(texts, q["reference_contexts"], recall_ks=(5, 10)))
        report = summarize(scores, hit_ks=KS)
        rows.append(
            Row(
                "Paul Graham essay (context hit)",
                scope,
                "chunk",
                len(questions),
                backend,
                dict(report.hit_at),
                percentile(latencies, 0.5),
            )
        )
    return rows


@dataclass(frozen=True)
class _Page:
    page: int


def ranked_pages(corpus: Corpus, hits: list[Hit], doc_id: str) -> list[_Page]:
    """The pages of `hits` in rank order; another document's page gets a negative number of
    its own, so it takes a rank and never counts as evidence."""
    foreign: dict[tuple[str, int], int] = {}
    pages = []
    for entry_id, _ in hits:
        place = corpus.place[entry_id]
        if place[0] == doc_id:
            pages.append(_Page(place[1]))
        else:
            pages.append(_Page(-foreign.setdefault(place, len(foreign) + 1)))
    return pages


def _ids_of(corpus: Corpus, doc_id: str) -> set[str]:
    return {e.id for e in corpus.entries[doc_id]}


def filter_cost(search: Search, corpus: Corpus, sizes: Sequence[int]) -> list[tuple[str, float]]:
    """p50 ms of a chunk search restricted to `size` ids (the library's chunk ids, padded with
    ids no entry has so the filter is as long as asked), and of the alternative: every match
    fetched unrestricted, then filtered here."""
    chunks = (e.id for entries in corpus.entries.values() for e in entries if e.kind == "chunk")
    chunk_ids = sorted(chunks)
    queries = ("revenue growth", "operating income", "cash flow statement")
    results = []
    for size in sizes:
        allowed = (chunk_ids + [f"absent-{i}" for i in range(size)])[:size] if size else None
        latencies: list[float] = []
        for query in queries:
            timed(search, latencies, "chunk", query, 10, allowed)
        results.append((str(size or "none"), percentile(latencies, 0.5)))
    latencies = []
    for query in queries:
        timed(search, latencies, "chunk", query, len(chunk_ids), None)
    results.append((f"none, all {len(chunk_ids)} fetched", percentile(latencies, 0.5)))
    return results


def render(
    rows: list[Row], build_s: dict[str, float], filters: dict[str, list], segments: dict, note: str
) -> str:
    header = "| set | scope | ranked | questions | backend | hit@1 | hit@5 | hit@10 | p50 ms |"
    lines = [header, "|---|---|---|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        hits = " | ".join(f"{r.hit_at[k]:.3f}" for k in KS)
        lines.append(
            f"| {r.set_name} | {r.scope} | {r.kind} | {r.questions} | {r.backend} | {hits} | "
            f"{r.p50_ms:.1f} |"
        )
    builds = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in build_s.items())
    filter_lines = ["| backend | allowed ids | p50 ms |", "|---|---:|---:|"]
    for name, measured in filters.items():
        filter_lines += [f"| {name} | {size} | {ms:.1f} |" for size, ms in measured]
    return "\n".join(
        [
            "# Keyword search: bm25s beside Milvus BM25",
            "",
            note,
            "",
            *FINDINGS,
            "",
            "Mean over every row below, per backend:",
            "",
            *mean_lines(rows),
            "",
            *lines,
            "",
            f"Index build (all documents): {builds}.",
            "",
            "Milvus Lite rows per segment after the build (BM25 statistics are per segment):",
            "",
            *(f"- {name}: {layout}" for name, layout in segments.items()),
            "",
            "Cost of an id filter (chunk search; past 200 ids `MilvusKeywordIndex` checks the",
            "best 1000 unrestricted matches instead):",
            "",
            *filter_lines,
            "",
        ]
    )


def mean_lines(rows: list[Row]) -> list[str]:
    lines = ["| backend | hit@1 | hit@5 | hit@10 | p50 ms |", "|---|---:|---:|---:|---:|"]
    for backend in dict.fromkeys(r.backend for r in rows):
        mine = [r for r in rows if r.backend == backend]
        hits = " | ".join(f"{statistics.fmean(r.hit_at[k] for r in mine):.3f}" for k in KS)
        p50 = statistics.median(r.p50_ms for r in mine)
        lines.append(f"| {backend} | {hits} | {p50:.1f} |")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hybrid",
        metavar="COLLECTION",
        help="also run the engine's hybrid retrieval with each keyword backend over this "
        "collection, ingested beforehand into the storage folder",
    )
    args = parser.parse_args()
    if shared_data_missing([ESSAY, *PAGE_SETS.values(), *PDF_FOLDERS]):
        return
    settings = with_finance_words(settings_from_config(config))
    pdfs = sorted(p for folder in PDF_FOLDERS for p in folder.glob("*.pdf"))
    corpus = load_corpus(stored_chunks(pdfs, settings))
    missing = {q["document"] for p in PAGE_SETS.values() for q in _load(p)} - set(
        corpus.doc_of_name
    )
    print(f"{len(corpus.place)} entries over {len(corpus.entries)} documents; absent: {missing}")
    with tempfile.TemporaryDirectory() as scratch:
        backends, build_s, opened = {}, {}, []
        segments: dict[str, dict[str, list[int]]] = {}
        start = time.perf_counter()
        backends["bm25s"] = bm25s_backend(corpus, Path(scratch) / "bm25s")
        build_s["bm25s"] = time.perf_counter() - start
        for name, pretokenize in (("Milvus raw text", False), ("Milvus pre-tokenized", True)):
            start = time.perf_counter()
            folder = Path(scratch) / name.replace(" ", "_")
            backends[name], milvus = milvus_backend(corpus, folder, pretokenize)
            build_s[name] = time.perf_counter() - start
            opened.append(milvus)
            segments[name] = segment_rows(folder)
        rows: list[Row] = []
        for set_name, path in PAGE_SETS.items():
            asked = [q for q in _load(path) if q["document"] in corpus.doc_of_name]
            for name, search in backends.items():
                rows += page_rows(corpus, name, search, set_name, asked)
        if ESSAY_PDF in corpus.doc_of_name:
            for name, search in backends.items():
                rows += essay_rows(corpus, name, search, _load(ESSAY))
        sizes = (0, 100, 200, 1000, 4000, 10000)
        filters = {name: filter_cost(search, corpus, sizes) for name, search in backends.items()}
        for milvus in opened:
            milvus.close()
    if args.hybrid:
        rows += hybrid_rows(settings, args.hybrid)
    note = (
        f"Machine: {describe_machine()}; 2 cores shared with other sessions (loaded: timings "
        f"are noisy, compare within a row group). Corpus: every shared PDF as one library, "
        f"{len(corpus.entries)} documents, {len(corpus.place)} chunk and page texts. "
        f"Top {TOP_K} chunks (10 for the essay) per question."
    )
    publish(render(rows, build_s, filters, segments, note), OUT)


def _load(path: Path) -> list[dict[str, Any]]:
    return list(json.loads(path.read_text(encoding="utf-8")))


if __name__ == "__main__":
    main()
