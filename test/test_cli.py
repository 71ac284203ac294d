"""CLI behaviour that needs no models: argument checks and configuration errors."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest
from helpers import text_pdf

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


def test_the_bare_run_with_a_broken_config_py_is_one_sentence_and_a_non_zero_exit(
    tmp_path: Path,
) -> None:
    """`python main.py` (no subcommand) imports queries.py, which imports config.py."""
    project = Path(main.__file__).resolve().parent
    for name in ("main.py", "queries.py"):
        shutil.copy(project / name, tmp_path / name)
    (tmp_path / "config.py").write_text("ACTIVE_ARTICLE = 'demo'\nDEFAULT_RAG_SETTINGS = {\n")
    done = subprocess.run(
        [sys.executable, "main.py"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(project)},  # this checkout's citerag, not an install
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    assert done.stderr.startswith("error: config.py has a syntax error at line 2")
    assert done.stderr.count("\n") == 1 and "fix it" in done.stderr


FAKE_CONFIG = """
ARTICLE_CONFIGS = {
    "big": {"directory": ".", "filename": "big.pdf", "collection": "big_docs", "schema": "x"},
    "small": {"directory": ".", "filename": "s.pdf", "collection": "small_docs", "schema": "x"},
}
ACTIVE_ARTICLE = "small"
DEFAULT_RAG_SETTINGS = {"chunk_size": 256, "chunk_overlap": 32, "similarity_top_k_fusion": 35}
ARTICLE_RAG_OVERRIDES = {"big": {"similarity_top_k_fusion": 50, "chunk_size": 384}}
STORAGE_DIR = "@STORAGE@"
"""


class FakeEngine:
    """Stands in for citerag.engine.Engine: records the settings and collections it was given."""

    opened: list[FakeEngine] = []

    def __init__(self, settings: Any, schema: Any = None) -> None:
        self.settings = settings
        self.calls: list[tuple[str, str, Any]] = []
        FakeEngine.opened.append(self)

    def ingest(self, path: Path, collection: str, progress: Any = None) -> Any:
        self.calls.append(("ingest", collection, path))
        from citerag.ingest.pipeline import IngestOutcome

        return IngestOutcome(path.name, "d", "ingested", pages=1, chunks=1, seconds=0.0)

    def answer(self, request: Any) -> Any:
        self.calls.append(("query", request.collection, request.top_k))
        metadata = {
            "model": "m",
            "retrievalMethod": "hybrid",
            "reranked": False,
            "processingTime": 1,
        }
        answer = {"answer": "a", "sources": [], "metadata": metadata}
        return types.SimpleNamespace(to_dict=lambda: answer)

    def close(self) -> None:
        pass


@pytest.fixture
def fake_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> type[FakeEngine]:
    """A config.py with two articles (one with overrides) and an Engine that loads nothing."""
    fake_config = types.ModuleType("config")
    exec(FAKE_CONFIG.replace("@STORAGE@", str(tmp_path / "storage")), fake_config.__dict__)
    monkeypatch.setitem(sys.modules, "config", fake_config)  # removed again afterwards
    engine_module = types.ModuleType("citerag.engine")
    engine_module.Engine = FakeEngine  # type: ignore[attr-defined]
    engine_module.check_collection_name = lambda name: name  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "citerag.engine", engine_module)
    monkeypatch.setattr(FakeEngine, "opened", [])
    text_pdf(tmp_path / "big.pdf")  # what `ingest big.pdf` finds (in the working folder)
    monkeypatch.chdir(tmp_path)
    return FakeEngine


@pytest.mark.parametrize("command", [["query", "q?"], ["ingest", "big.pdf"]])
def test_article_option_selects_its_collection_and_its_overrides(
    fake_project: type[FakeEngine], command: list[str]
) -> None:
    assert main.main([*command, "--article", "big"]) == 0
    [engine] = fake_project.opened
    assert engine.settings.retrieval.similarity_top_k_fusion == 50
    assert engine.settings.ingest.chunk_size == 384
    assert [collection for _, collection, _ in engine.calls] == ["big_docs"]


@pytest.mark.parametrize("command", [["query", "q?"], ["ingest", "big.pdf"]])
def test_collection_of_an_article_gets_that_articles_overrides(
    fake_project: type[FakeEngine], command: list[str]
) -> None:
    assert main.main([*command, "--collection", "big_docs"]) == 0
    assert main.main([*command, "--collection", "elsewhere"]) == 0
    big, other = fake_project.opened
    assert (big.settings.retrieval.similarity_top_k_fusion, big.settings.ingest.chunk_size) == (
        50,
        384,
    )
    assert (other.settings.retrieval.similarity_top_k_fusion, other.settings.ingest.chunk_size) == (
        35,
        256,
    )
    assert [c for _, c, _ in big.calls + other.calls] == ["big_docs", "elsewhere"]


def test_an_unknown_article_is_one_sentence_naming_the_known_ones(
    fake_project: type[FakeEngine], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main.main(["query", "q?", "--article", "huge"])
    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error:") and err.count("\n") == 1
    assert "'huge'" in err and "big" in err and "small" in err
    assert fake_project.opened == []


@pytest.mark.parametrize("value", ["0", "-3", "two"])
def test_top_k_must_be_a_positive_integer(
    fake_project: type[FakeEngine], capsys: pytest.CaptureFixture[str], value: str
) -> None:
    with pytest.raises(SystemExit) as caught:
        main.main(["query", "q?", f"--top-k={value}"])
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert "--top-k" in err and "positive whole number" in err
    assert fake_project.opened == []


def test_a_positive_top_k_reaches_the_query(fake_project: type[FakeEngine]) -> None:
    assert main.main(["query", "q?", "--top-k", "4"]) == 0
    assert fake_project.opened[0].calls == [("query", "default", 4)]


@pytest.fixture
def entry_points() -> tuple[types.ModuleType, types.ModuleType]:
    """rag_factory and the API server, imported before `fake_project` replaces the engine."""
    import rag_factory
    from citerag.serve import server

    return rag_factory, server


def test_the_cli_the_api_and_rag_factory_load_an_article_alike(
    entry_points: tuple[types.ModuleType, types.ModuleType],
    fake_project: type[FakeEngine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rag_factory, server = entry_points
    served: list[tuple[Any, Any]] = []
    monkeypatch.setattr(server, "serve", lambda settings, *_a, **_k: served.append((settings, _a)))
    monkeypatch.setattr(rag_factory, "config", sys.modules["config"])
    monkeypatch.setattr(rag_factory, "Engine", FakeEngine)
    assert main.main(["query", "q?", "--article", "big"]) == 0
    assert main.main(["serve", "--article", "big"]) == 0
    factory_engine = rag_factory.build_engine(article="big")
    [cli_engine] = fake_project.opened[:1]
    [(api_settings, api_args)] = served
    assert cli_engine.settings == api_settings == factory_engine.settings
    assert (
        api_settings.retrieval.similarity_top_k_fusion == 50
        and api_settings.ingest.chunk_size == 384
    )
    api_article = api_args[-1]
    assert cli_engine.calls[0][1] == api_article.collection == "big_docs"
    assert rag_factory.load("big").collection == "big_docs"


def test_serve_with_an_unknown_article_is_one_sentence_and_a_non_zero_exit(
    fake_project: type[FakeEngine], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main.main(["serve", "--article", "huge", "--port", "8765"])
    err = capsys.readouterr().err
    assert code != 0 and err.startswith("error: Unknown article 'huge'") and err.count("\n") == 1
    assert fake_project.opened == []


def test_serve_without_an_article_gets_no_articles_overrides_or_schema(
    entry_points: tuple[types.ModuleType, types.ModuleType],
    fake_project: type[FakeEngine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, server = entry_points
    served: list[Any] = []
    monkeypatch.setattr(server, "serve", lambda settings, *args: served.append((settings, args)))
    assert main.main(["serve"]) == 0
    [(settings, (_host, _port, _folders, article))] = served
    assert article.name is None and article.schema is None
    assert (settings.ingest.chunk_size, settings.retrieval.similarity_top_k_fusion) == (256, 35)
