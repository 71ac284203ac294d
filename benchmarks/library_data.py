"""The shared evaluation data as one library: every shared PDF, and the page-labelled questions.

Benchmarks that put every shared PDF in one collection (`bench_library.py`, `bench_scale.py`)
read them from here, so they agree on what "the library" is.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from citerag.engine import Engine

PROJECT = Path(__file__).resolve().parents[1]
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


def project_engine(storage: Path) -> Engine:
    """The engine as `main.py` opens it (config.py's settings), on `storage`."""
    import config
    from benchmarks.profiles import with_finance_words
    from citerag.engine import Engine
    from citerag.settings import settings_from_config

    environ = dict(os.environ, RAG_STORAGE_DIR=str(storage))
    return Engine(with_finance_words(settings_from_config(config, environ=environ)))


def shared_pdfs() -> list[Path]:
    """Every shared PDF, in folder then name order."""
    return [pdf for folder in PDF_FOLDERS for pdf in sorted(folder.glob("*.pdf"))]


def library_questions() -> dict[str, list[dict[str, Any]]]:
    """Each labelled set's questions, keyed by the set's name."""
    return {
        name: json.loads(path.read_text(encoding="utf-8")) for name, path in LIBRARY_SETS.items()
    }
