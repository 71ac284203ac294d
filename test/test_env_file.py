"""`.env` at start-up: read when present, never overriding a variable already set."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import main
from citerag.env_file import env_file_variables, find_env_file
from citerag.errors import ConfigError


def test_variables_the_environment_lacks_are_set_and_set_ones_are_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "# keys for the hosted models\nCITERAG_T_KEY=sk-from-file\n"
        "export CITERAG_T_MODEL='gpt-4o-mini'\nCITERAG_T_SET=from-file\n"
    )
    monkeypatch.delenv("CITERAG_T_KEY", raising=False)
    monkeypatch.delenv("CITERAG_T_MODEL", raising=False)
    monkeypatch.setenv("CITERAG_T_SET", "from-shell")
    added = env_file_variables(env)
    assert added == {"CITERAG_T_KEY": "sk-from-file", "CITERAG_T_MODEL": "gpt-4o-mini"}
    assert "CITERAG_T_KEY" not in os.environ  # the entry point sets them, not the library
    assert os.environ["CITERAG_T_SET"] == "from-shell"


def test_a_line_that_is_not_key_value_is_one_sentence_and_sets_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = tmp_path / ".env"
    env.write_text("CITERAG_T_FIRST=1\nOPENAI_API_KEY sk-missing-equals\n")
    monkeypatch.delenv("CITERAG_T_FIRST", raising=False)
    with pytest.raises(ConfigError, match=r"line 2 is not KEY=VALUE") as caught:
        env_file_variables(env)
    assert str(caught.value).count(".") >= 1 and "\n" not in str(caught.value)
    assert "CITERAG_T_FIRST" not in os.environ


def test_the_current_directorys_file_comes_first(tmp_path: Path) -> None:
    assert find_env_file(tmp_path) in (None, Path(main.__file__).resolve().parent / ".env")
    (tmp_path / ".env").write_text("A=1\n")
    assert find_env_file(tmp_path) == tmp_path / ".env"


def _run_main(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    project = Path(main.__file__).resolve().parent
    clean = {k: v for k, v in os.environ.items() if k not in {"RAG_PARSER", "RAG_STORAGE_DIR"}}
    return subprocess.run(
        [sys.executable, str(project / "main.py"), *args],
        cwd=cwd,
        env={**clean, "PYTHONPATH": str(project), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_main_reads_the_env_file_before_the_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / ".env").write_text("RAG_PARSER=no-such-parser\n")
    monkeypatch.chdir(tmp_path)
    # setenv first so monkeypatch records the variable's state and removes what .env sets
    monkeypatch.setenv("RAG_PARSER", "pymupdf")
    monkeypatch.delenv("RAG_PARSER")
    assert main.main(["list"]) == ConfigError.exit_code
    assert "parser is 'no-such-parser'" in capsys.readouterr().err


@pytest.mark.slow
def test_main_reads_the_env_file_and_the_shell_wins(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(
        f"RAG_PARSER=no-such-parser\nRAG_STORAGE_DIR={tmp_path / 'storage'}\n"
    )
    from_file = _run_main(tmp_path, "list", "--json")
    assert from_file.returncode == ConfigError.exit_code
    assert "parser is 'no-such-parser'" in from_file.stderr
    shell_wins = _run_main(tmp_path, "list", "--json", RAG_PARSER="pymupdf")
    assert shell_wins.returncode == 0, shell_wins.stderr
    assert shell_wins.stdout.strip() == "[]"
    assert (tmp_path / "storage").is_dir()  # RAG_STORAGE_DIR came from the file
