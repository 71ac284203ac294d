"""CLI behaviour that needs no models: argument checks and configuration errors."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import main


def test_page_range_must_be_a_b(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as caught:
        main.main(["query", "q", "--pages", "7-3"])
    assert caught.value.code != 0
    assert "page range" in capsys.readouterr().err


def test_a_broken_config_py_is_one_sentence_and_a_non_zero_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "config.py").write_text("ACTIVE_ARTICLE = 'demo'\nDEFAULT_RAG_SETTINGS = {\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "config", raising=False)
    code = main.main(["list"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "config.py has a syntax error at line" in err


def test_an_empty_question_is_refused_before_anything_loads(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main.main(["query", "   "]) != 0
    assert "No question given" in capsys.readouterr().err
