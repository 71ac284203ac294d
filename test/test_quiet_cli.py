"""The CLI prints answers, not library log records, unless asked (--verbose, RAG_LOG_LEVEL)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import main

PROJECT = Path(main.__file__).resolve().parent
# Records as a run emits them: a library's DEBUG, the project's INFO and WARNING.
EMIT = """
import logging, sys
import main
main.configure_logging("--verbose" in sys.argv, __import__("os").environ.get("RAG_LOG_LEVEL", ""))
logging.getLogger("bm25s").debug("Building index from tokens")
logging.getLogger("citerag.factory").info("answers: extractive")
logging.getLogger("citerag.enrich").warning("something a user must know")
"""


def _stderr_of(*flags: str, level: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RAG_LOG_LEVEL"}
    if level is not None:
        env["RAG_LOG_LEVEL"] = level
    done = subprocess.run(
        [sys.executable, "-c", EMIT, *flags],
        cwd=PROJECT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stderr


def test_by_default_only_warnings_reach_stderr() -> None:
    err = _stderr_of()
    assert "something a user must know" in err
    assert "Building index from tokens" not in err
    assert "answers: extractive" not in err


def test_verbose_shows_library_debug_records() -> None:
    err = _stderr_of("--verbose")
    assert "Building index from tokens" in err
    assert "answers: extractive" in err


def test_rag_log_level_info_shows_info_but_not_debug() -> None:
    err = _stderr_of(level="info")
    assert "answers: extractive" in err
    assert "Building index from tokens" not in err


def test_an_unknown_rag_log_level_is_one_sentence_and_a_non_zero_exit(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("RAG_LOG_LEVEL", "loud")
    assert main.main(["list"]) != 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "RAG_LOG_LEVEL='loud' is not a log level" in err
