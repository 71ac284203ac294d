"""Optional heavy dependencies are extras: the core runs without them, and a configuration
that needs a missing one gets one sentence naming the extra to install.

Absence is simulated by a `None` entry in `sys.modules`, which makes Python refuse the import.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from helpers import PROJECT_DIR

from citerag.embed.providers import build_embedder
from citerag.enrich.gliner_extractor import GlinerExtractor
from citerag.enrich.langextract_cache import langextract_model
from citerag.errors import ConfigError
from citerag.extras import MissingExtra, require
from citerag.llm.connection import build_llm
from citerag.retrieve.rerank import ColbertScorer
from citerag.settings import Settings
from citerag.store.factory import open_docstore

EXTRA_MODULES = (
    "colbert",
    "gliner",
    "langextract",
    "pymongo",
    "bson",
    "llama_index.llms.openai",
    "llama_index.llms.openai_like",
    "llama_index.llms.anthropic",
    "llama_index.llms.google_genai",
    "llama_index.llms.ollama",
    "llama_index.embeddings.openai",
    "llama_index.embeddings.ollama",
)


def absent(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_colbert_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    absent(monkeypatch, "colbert")
    with pytest.raises(MissingExtra) as caught:
        ColbertScorer("/nowhere/checkpoint")
    assert (
        str(caught.value) == "ColBERT (colbert-ai) is not installed: pip install 'citerag[colbert]'"
    )


def test_gliner_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    absent(monkeypatch, "gliner")
    with pytest.raises(MissingExtra) as caught:
        GlinerExtractor.load("/nowhere/gliner", ["person"])
    assert str(caught.value) == "GLiNER is not installed: pip install 'citerag[gliner]'"


def test_langextract_names_its_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    absent(monkeypatch, "langextract")
    with pytest.raises(MissingExtra) as caught:
        langextract_model("openai", "gpt-4o-mini", "key", "")
    assert str(caught.value) == "LangExtract is not installed: pip install 'citerag[langextract]'"


@pytest.mark.parametrize(
    ("provider", "module", "package"),
    [
        ("openai", "llama_index.llms.openai", "llama-index-llms-openai"),
        ("openai_like", "llama_index.llms.openai_like", "llama-index-llms-openai-like"),
        ("anthropic", "llama_index.llms.anthropic", "llama-index-llms-anthropic"),
        ("gemini", "llama_index.llms.google_genai", "llama-index-llms-google-genai"),
        ("ollama", "llama_index.llms.ollama", "llama-index-llms-ollama"),
    ],
)
def test_each_llm_provider_names_the_llms_extra(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str, package: str
) -> None:
    absent(monkeypatch, module)
    settings = Settings(
        llm_provider=provider, llm_model="m", llm_api_key="k", llm_base_url="http://127.0.0.1:9"
    )
    with pytest.raises(MissingExtra) as caught:
        build_llm(settings.llm, environ={})
    assert str(caught.value) == f"{package} is not installed: pip install 'citerag[llms]'"


@pytest.mark.parametrize(
    ("provider", "module", "package"),
    [
        ("openai", "llama_index.embeddings.openai", "llama-index-embeddings-openai"),
        ("ollama", "llama_index.embeddings.ollama", "llama-index-embeddings-ollama"),
    ],
)
def test_hosted_embeddings_name_the_llms_extra(
    monkeypatch: pytest.MonkeyPatch, provider: str, module: str, package: str
) -> None:
    absent(monkeypatch, module)
    settings = Settings(embedding_provider=provider, embedding_api_key="k")
    with pytest.raises(MissingExtra) as caught:
        build_embedder(settings.embedding, environ={})
    assert str(caught.value) == f"{package} is not installed: pip install 'citerag[llms]'"


def test_mongodb_names_the_mongo_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    absent(monkeypatch, "pymongo")
    settings = Settings(storage_dir=tmp_path, mongodb_uri="mongodb://127.0.0.1:9")
    with pytest.raises(MissingExtra) as caught:
        open_docstore(settings.storage)
    assert (
        str(caught.value)
        == "MongoDB support (pymongo) is not installed: pip install 'citerag[mongo]'"
    )


def test_a_missing_extra_is_a_configuration_error_the_cli_reports() -> None:
    assert issubclass(MissingExtra, ConfigError)


def test_a_broken_install_is_not_reported_as_a_missing_extra(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    (tmp_path / "half_installed.py").write_text("import a_dependency_nobody_ships\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="a_dependency_nobody_ships"):
        require("half_installed", "all", "Half")


def test_the_core_imports_and_opens_its_stores_without_any_extra(tmp_path: Path) -> None:
    """The engine, the API, the CLI and the factory import with every extra blocked, and an
    offline engine with the default settings opens its stores."""
    script = textwrap.dedent(
        f"""
        import sys
        for name in {EXTRA_MODULES!r}:
            sys.modules[name] = None
        import main, rag_factory, citerag.serve.app
        from citerag.engine import Engine
        from citerag.settings import Settings
        from citerag.store.factory import open_docstore, open_keyword_index, open_vector_index
        from pathlib import Path
        settings = Settings(storage_dir=Path({str(tmp_path)!r}))
        vectors = open_vector_index(settings.storage)
        storage = settings.storage
        for store in (open_docstore(storage), open_keyword_index(storage, vectors), vectors):
            store.close()
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
