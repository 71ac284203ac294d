"""Check benchmarks/data/statement_questions.json against the shared 10-K PDFs.

For every question: each evidence page exists, and evidence_text appears (whitespace-normalized)
in the text of evidence_pages[0] (1-based). Exits 1 on any failure, 0 with a 'skipped' line when
../shared/eval is absent.

    .venv/bin/python -m benchmarks.check_statement_questions
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pymupdf

PROJECT = Path(__file__).resolve().parents[1]
QUESTIONS = PROJECT / "benchmarks" / "data" / "statement_questions.json"
EVAL_DIR = PROJECT.parent / "shared" / "eval"
PDF_DIR = EVAL_DIR / "finance"


def normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def check(question: dict[str, object], docs: dict[str, pymupdf.Document]) -> str | None:
    """Return None when the question passes, else the reason it fails."""
    name = str(question["document"])
    if name not in docs:
        path = PDF_DIR / name
        if not path.is_file():
            return f"missing PDF {path}"
        docs[name] = pymupdf.open(path)
    doc = docs[name]
    pages = question["evidence_pages"]
    if not isinstance(pages, list) or not pages:
        return "evidence_pages is empty"
    bad = [p for p in pages if not isinstance(p, int) or not 1 <= p <= doc.page_count]
    if bad:
        return f"pages {bad} not in 1..{doc.page_count}"
    if normalize(str(question["evidence_text"])) not in normalize(doc[pages[0] - 1].get_text()):
        return f"evidence_text not on page {pages[0]}"
    return None


def main() -> int:
    if not EVAL_DIR.is_dir():
        print(f"skipped: {EVAL_DIR} absent")
        return 0
    questions: list[dict[str, object]] = json.loads(QUESTIONS.read_text(encoding="utf-8"))
    docs: dict[str, pymupdf.Document] = {}
    failures = 0
    for q in questions:
        reason = check(q, docs)
        failures += reason is not None
        status = "ok  " if reason is None else f"FAIL ({reason})"
        print(f"{q['id']:<10} {q['type']:<9} pages={q['evidence_pages']} {status}")
    print(f"{len(questions) - failures}/{len(questions)} passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
