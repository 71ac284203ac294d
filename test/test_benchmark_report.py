"""The benchmark report step: a stored record in, its results file out with the record's figures."""

from __future__ import annotations

from pathlib import Path

from benchmarks.records import Record, latest_records, read_record, write_record
from benchmarks.report import report

SETS = ("10-K (finance_qa)", "MMLongBench-Doc dev")


def rates(hit1: float, hit5: float, hit10: float, n: int) -> dict[str, float]:
    return {"hit@1": hit1, "hit@5": hit5, "hit@10": hit10, "n": n}


def library_record(project_hit1: float = 0.64) -> Record:
    hits = {
        SETS[0]: {
            "project": rates(project_hit1, 0.96, 1.0, 50),
            "stock dense": rates(0.6, 0.82, 0.92, 50),
        },
        SETS[1]: {
            "project": rates(0.534, 0.828, 0.828, 58),
            "stock dense": rates(0.31, 0.586, 0.638, 58),
        },
    }
    latency = {
        path: {s: [10.0 + i, 20.0 + i, 30.0 + i] for s in SETS}
        for i, path in enumerate(("stock dense retrieve", "project answer"))
    }
    return Record(
        suite="library",
        command="python -m benchmarks run --suite library",
        systems={"project": "main.py ingest", "stock dense": "VectorStoreIndex"},
        datasets={"pdfs": "19 PDFs (finance)"},
        metrics={
            "hits": hits,
            "embedding_bound": {"tokens": 1000, "windows": 4, "seconds": 1.5},
            "answer_profile": "profile text",
        },
        timings={
            "ingest": {
                "stock LlamaIndex": {"seconds": 40.0, "chunks": 715},
                "stock lean": {"seconds": 20.0, "chunks": 715},
                "project": {"embedding_backend=auto": {"seconds": 50.0, "total": "608 pages"}},
            },
            "latency_ms": latency,
            "fresh_caches": True,
            "load": "1.0",
        },
        machine="Machine: 2 cores (AMD EPYC 9R14, family 25 model 17).",
        date="2026-11-28 12:00 UTC",
        commit="abc1234",
    )


def test_a_library_record_renders_its_figures_into_library_md(tmp_path: Path) -> None:
    write_record(library_record(), tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    assert written.name == "library.md"
    text = written.read_text(encoding="utf-8")
    assert "| 10-K (finance_qa) | project | 0.640 | 0.960 | 1.000 |" in text
    assert "| MMLongBench-Doc dev | stock dense | 0.310 | 0.586 | 0.638 |" in text
    assert "| 40.0 | 1.00 | 2.00 |" in text  # stock LlamaIndex: seconds, × itself, × lean
    assert "| 50.0 | 1.25 | 2.50 |" in text  # the project against both stocks
    assert "| project answer | 21.0 | 31.0 | 1.05 |" in text  # p50, p95, × stock dense p50
    assert "family 25 model 17" in text and "abc1234" in text
    assert "Reproduce: `python -m benchmarks run --suite library`" in text


def test_the_newest_record_of_each_results_file_is_the_one_rendered(tmp_path: Path) -> None:
    records = tmp_path / "records"
    older = write_record(library_record(project_hit1=0.5), records)
    newer = records / "library" / "99999999T000000.json"
    newer.write_text(older.read_text(encoding="utf-8").replace("0.5,", "0.7,"), encoding="utf-8")
    variant = library_record(project_hit1=0.62)
    variant.variant = "onnx-int8"
    write_record(variant, records)

    latest = latest_records(records)

    assert set(latest) == {"library.md", "library_onnx-int8.md"}
    assert latest["library.md"].metrics["hits"][SETS[0]]["project"]["hit@1"] == 0.7
    assert read_record(newer).suite == "library"


def test_a_kinds_record_renders_hits_per_type_and_the_essay(tmp_path: Path) -> None:
    record = Record(
        suite="kinds",
        command="python -m benchmarks run --suite kinds --reuse",
        systems={"project (default)": "config.py", "project, no page evidence": "page_weight=0.0"},
        datasets={"pdfs": "19 PDFs"},
        metrics={
            "hits": {
                "MMLongBench-Doc dev / Guidebook": {"project (default)": rates(0.667, 1.0, 1.0, 3)}
            },
            "essay": {
                "project (default)": {
                    "hit_at": {"1": 0.864},
                    "recall_at": {"5": 0.703, "10": 0.818},
                    "mrr": 0.9,
                    "questions": 44,
                }
            },
            "evidence_profile": "",
        },
        timings={"retrieve_ms": {"project (default)": [16.0, 17.0]}, "repeats": 3, "load": "2"},
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "kinds.md"
    assert (
        "| MMLongBench-Doc dev / Guidebook | 3 | project (default) | 0.667 | 1.000 | 1.000 |"
        in text
    )
    assert "| project (default) | 0.864 | 0.703 | 0.818 |" in text
    assert "- project, no page evidence: page_weight=0.0" in text


def test_a_shelf_record_renders_answers_and_cards(tmp_path: Path) -> None:
    card = {"title": "Acme 10-K", "organisation": "Acme", "ticker": "ACME", "kind": "annual report"}
    card |= {"fiscal_year": 2022, "quarter": None, "period_end": "2022-12-31"}
    row = {"right_first": 0.9, "hit@1": 0.5, "hit@5": 0.75, "hit@10": 0.8}
    record = Record(
        suite="shelf",
        command="python -m benchmarks run --suite shelf",
        metrics={
            "questions": 47,
            "systems": {"project (default)": row},
            "by_kind": {"project (default)": {"metrics-generated": row}},
            "cards": {
                "rows": [["acme_2022_10k.pdf", card, {"company": True, "kind": False}]],
                "right": {"company": 1},
                "n": 1,
            },
            "library_cards": {"rows": [["essay.pdf", "essay", card, False]], "right": 0, "n": 1},
        },
        timings={
            "ingest": {"project": {"seconds": 12.0, "total": "52 files"}},
            "p50_ms": 30.0,
            "p95_ms": 50.0,
            "load": "1.0",
        },
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "shelf.md"
    assert "| project (default) | 0.90 | 0.50 | 0.75 | 0.80 |" in text
    assert (
        "| acme_2022_10k.pdf | Acme | ACME | annual report | 2022 |  | 2022-12-31 | kind |" in text
    )
    assert "| essay.pdf | essay | annual report (not accepted) | Acme 10-K | Acme | 2022 |" in text


def test_an_ocr_record_renders_hits_per_collection_and_the_ocr_speed(tmp_path: Path) -> None:
    ingest = {"seconds": 10.0, "parse_s": 4.0, "total": "17 files"}
    record = Record(
        suite="ocr",
        command="python -m benchmarks run --suite ocr --pictures",
        variant="",
        datasets={"scope": "17 documents (539 pages)"},
        metrics={
            "hits": {SETS[0]: {"scans": rates(0.5, 0.9, 1.0, 50)}},
            "asked": {SETS[0]: 50},
        },
        timings={
            "ingests": {"digital": ingest, "scans": ingest},
            "scanned_pages": 20,
            "render_s": 3.0,
            "load": "2.0",
        },
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "ocr.md"
    assert "| 10-K (finance_qa) | 50 | scans | 0.50 | 0.90 | 1.00 |" in text
    assert "OCR: 20 scanned pages read in 4.0 s of parse (5.00 pages/s" in text


def test_a_retrieval_record_renders_recall_per_type_and_the_essay(tmp_path: Path) -> None:
    summary = {"recall_at": {"1": 0.66, "3": 0.92, "5": 0.98, "10": 1.0}, "mrr": 0.796, "n": 50}
    record = Record(
        suite="retrieval",
        command="python -m benchmarks run --suite retrieval",
        systems={"project (default)": "config.py"},
        datasets={"parser": "pymupdf"},
        metrics={
            "pages": {"finance_qa": {"project (default)": {"metrics": summary, "all": summary}}},
            "essay": {
                "project (default)": {
                    "hit_at": {"1": 0.8},
                    "recall_at": {"5": 0.765, "10": 0.872},
                    "mrr": 0.85,
                    "questions": 44,
                }
            },
        },
        timings={"ingestion": [["essay.pdf", 10, 40, 2.5]], "latency_ms": {}, "repeats": 3},
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "retrieval.md"
    assert "## finance_qa (50 questions)" in text
    assert "| project (default) | 0.660 | 0.920 | 0.980 | 1.000 | 0.796 | 50 |" in text
    assert "| metrics | project (default) | 0.660 |" in text
    assert "| project (default) | 0.800 | 0.850 | 0.765 | 0.872 |" in text
    assert "| essay.pdf | 10 | 40 | 2.5 |" in text


def test_an_answers_record_renders_matches_per_group(tmp_path: Path) -> None:
    def row(group: str, first: bool, unsupported: bool) -> dict[str, object]:
        return {
            "set": "finance_qa",
            "group": group,
            "numeric": True,
            "textual": False,
            "first": first,
            "any": True,
            "text": False,
            "precision": 1.0,
            "unsupported": unsupported,
            "seconds": 0.02,
        }

    record = Record(
        suite="answers",
        command="python -m benchmarks run --suite answers",
        metrics={
            "scores": {
                "project": [row("table", True, False), row("table", False, True)],
            },
            "model": "extractive, no LLM",
            "settings": {"parser": "pymupdf"},
        },
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "answers.md"
    assert "| table | project | 0.50 / 1.00 (n=2) | – | 1.00 (2) | 0.50 (1/2) |" in text
    assert "| project | 20 | 20 |" in text  # answer time p50 and p95, ms


def test_a_tree_record_renders_recall_context_and_tree_build_time(tmp_path: Path) -> None:
    def asked(question_id: str, hits: dict[str, int], rr: float) -> dict[str, object]:
        return {"id": question_id, "type": "table", "hits": hits, "rr": rr, "pages": [3, 7]}

    first = {"1": 1, "3": 1, "5": 1, "10": 1}
    fourth = {"1": 0, "3": 0, "5": 1, "10": 1}
    system = {
        "scores": [asked("q1", first, 1.0), asked("q2", fourth, 0.25)],
        "in_context": [1, 0],
        "context_pages": [6, 4],
        "context_chars": [9000, 7000],
    }
    record = Record(
        suite="tree",
        command="python -m benchmarks run --suite tree",
        datasets={
            "pdfs": "NETFLIX_2020_10K.pdf",
            "sets": "`finance/finance_qa.json`",
            "parser": "pymupdf",
            "max_node_chars": "6000",
        },
        metrics={
            "sets": {"finance_qa": {"questions": 2, "systems": {"tree mode, own 10-K": system}}},
            "ingestion": [
                {
                    "document": "NETFLIX_2020_10K.pdf",
                    "collection": "own",
                    "pages": 95,
                    "seconds": 8.0,
                    "tree_seconds": 0.2,
                }
            ],
        },
        timings={
            "latency_ms": {"tree mode, own 10-K, finance_qa": [10.0, 30.0]},
            "load": {"start": "1.0, 1.1, 1.2", "end": "1.3, 1.2, 1.2"},
        },
    )
    write_record(record, tmp_path / "records")

    [written] = report(tmp_path / "records", tmp_path, plots=False)

    text = written.read_text(encoding="utf-8")
    assert written.name == "tree.md"
    assert "Reproduce: `python -m benchmarks run --suite tree`" in text
    assert "## finance_qa (2 questions)" in text
    assert "| tree mode, own 10-K | 0.500 | 0.500 | 1.000 | 1.000 | 0.625 | 2 |" in text
    assert "| table | tree mode, own 10-K | 0.500 |" in text
    assert "| finance_qa | tree mode, own 10-K | 0.500 | 5.0 | 8,000 |" in text
    assert "| NETFLIX_2020_10K.pdf | own | 95 | 8.0 | 0.20 | 2.5% |" in text
    assert "(each cut at 6,000 characters)" in text
