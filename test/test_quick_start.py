"""The quick start, as a new user runs it: `python main.py` answers the demo's questions, its
table question with the answering row, and prints no library log records."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import main

pytestmark = pytest.mark.slow
PROJECT = Path(main.__file__).resolve().parent


def test_the_quick_start_answers_its_table_question_from_the_row(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RAG_LOG_LEVEL", "LLM_PROVIDER")}
    done = subprocess.run(
        [sys.executable, "main.py"],
        cwd=PROJECT,
        env={**env, "RAG_STORAGE_DIR": str(tmp_path / "storage")},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    question = done.stdout.split("Q: Which parser had the highest table fidelity in Table 1?")[1]
    answer = question.split("=" * 20)[0]
    assert "PyMuPDF has the highest table fidelity, 0.97 [1]." in answer
    assert "» |PyMuPDF|0.97|41|35.0|" in answer  # the row is the source's highlight
    assert "|Parser|Table fidelity|" not in answer
    for line in done.stderr.splitlines():
        assert not line.startswith(("INFO", "DEBUG")), line
