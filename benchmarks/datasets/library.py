"""The shared evaluation data as one library: every shared PDF, and the page-labelled questions.

The suites that put every shared PDF in one collection (library, kinds, shelf, scale) read them
from here, so they agree on what "the library" is.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parents[2]
EVAL = PROJECT.parent / "shared" / "eval"
PDF_FOLDERS = (
    EVAL / "paul_graham",
    EVAL / "career_ai",
    EVAL / "finance",
    EVAL / "mmlongbench_dev" / "pdfs",
)
# Page-labelled questions asked of the whole library: {id, document, question, evidence_pages}.
LIBRARY_SETS = {
    "10-K (finance_qa)": EVAL / "finance" / "finance_qa.json",
    "MMLongBench-Doc dev": EVAL / "mmlongbench_dev" / "questions.json",
}
# The same, plus the 10-K statement questions written for this project.
PAGE_SETS = {
    **LIBRARY_SETS,
    "statements": PROJECT / "benchmarks" / "data" / "statement_questions.json",
}
DEV_SET = "MMLongBench-Doc dev"
# The essay's questions with reference contexts (context recall, not pages).
ESSAY_QA = EVAL / "paul_graham" / "paul_graham_qa.json"


def shared_pdfs() -> list[Path]:
    """Every shared PDF, in folder then name order."""
    return [pdf for folder in PDF_FOLDERS for pdf in sorted(folder.glob("*.pdf"))]


def library_questions(sets: dict[str, Path] = LIBRARY_SETS) -> dict[str, list[dict[str, Any]]]:
    """Each labelled set's questions, keyed by the set's name."""
    return {name: json.loads(path.read_text(encoding="utf-8")) for name, path in sets.items()}


def essay_questions() -> list[dict[str, Any]]:
    """The essay's questions: {query, reference_contexts, ...}."""
    return list(json.loads(ESSAY_QA.read_text(encoding="utf-8")))


def missing_inputs(paths: list[Path]) -> list[Path]:
    """The shared inputs that are absent (a suite cannot run without them)."""
    return [path for path in paths if not path.exists()]
