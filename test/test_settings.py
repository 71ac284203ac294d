from __future__ import annotations

import logging
import re
import types
from pathlib import Path

import pytest

import config
from citerag.errors import ConfigError
from citerag.settings import (
    KNOWN_VARIABLES,
    MilvusScheme,
    RetrievalSettings,
    Settings,
    build_settings,
    settings_from_config,
)

README = Path(__file__).resolve().parent.parent / "README.md"


def test_an_unconfigured_run_gets_the_package_defaults_and_the_projects_storage() -> None:
    settings = settings_from_config(config, environ={})
    assert settings == Settings(storage_dir=Path(config.STORAGE_DIR))
    assert (settings.ingest.chunk_size, settings.ingest.chunk_overlap) == (1024, 200)
    assert (
        settings.retrieval.similarity_top_k_fusion,
        settings.retrieval.rrf_k,
        settings.retrieval.fusion_top_n,
    ) == (35, 10, 25)
    assert settings.ingest.metadata == "entity"
    assert settings.retrieval.reranker == "colbert-if-installed"
    assert settings.storage.milvus_uri == "" and settings.storage.mongodb_uri == ""


def test_every_variable_the_readme_documents_is_read() -> None:
    text = README.read_text(encoding="utf-8")
    start = text.index("Environment variables override")
    table = text[start : text.index("\n## ", start)]
    documented = set(re.findall(r"^\| `([A-Z_]+)`(?:, `([A-Z_]+)`)?", table, re.MULTILINE))
    names = {name for row in documented for name in row if name}
    assert len(names) > 20 and names <= KNOWN_VARIABLES


@pytest.mark.parametrize(
    ("variable", "value", "group", "name", "expected"),
    [
        ("RAG_STORAGE_DIR", "/tmp/x", "storage", "storage_dir", Path("/tmp/x")),
        ("RAG_KEYWORD_BACKEND", "milvus", "storage", "keyword_backend", "milvus"),
        ("SENTENCE_VECTOR_ENCODING", "int8", "storage", "sentence_vector_encoding", "int8"),
        ("MILVUS_INDEX_TYPE", "ivf_flat", "storage", "milvus_index_type", "ivf_flat"),
        ("RAG_PARSER", "mineru", "parse", "parser", "mineru"),
        ("RAG_OCR_PICTURES", "true", "parse", "ocr_pictures", True),
        ("EMBEDDING_BACKEND", "onnx", "embedding", "embedding_backend", "onnx"),
        ("RAG_RERANKER", "sentence", "retrieval", "reranker", "sentence"),
        (
            "COLBERT_CHECKPOINT",
            "/models/colbert",
            "retrieval",
            "colbert_checkpoint",
            "/models/colbert",
        ),
        ("LLM_TIMEOUT_S", "5", "llm", "llm_timeout_s", 5),
        ("RAG_MAX_UPLOAD_MB", "8", "server", "max_upload_mb", 8.0),
    ],
)
def test_a_variable_sets_its_field_in_its_group(
    variable: str, value: str, group: str, name: str, expected: object
) -> None:
    settings = settings_from_config(config, environ={variable: value})
    assert getattr(getattr(settings, group), name) == expected


def test_config_values_apply_by_their_flat_names_and_the_environment_wins() -> None:
    fake = types.SimpleNamespace(
        DEFAULT_RAG_SETTINGS={"rrf_k": 5, "reranker": "none", "retrieval": {"fusion_top_n": 7}},
        MILVUS_URI="/data/milvus.db",
        LLM_PROVIDER="ollama",
    )
    settings = settings_from_config(fake, environ={"LLM_PROVIDER": "openai"})  # type: ignore[arg-type]
    assert (settings.retrieval.rrf_k, settings.retrieval.fusion_top_n) == (5, 7)
    assert settings.retrieval.reranker == "none"
    assert settings.storage.milvus_uri == "/data/milvus.db"
    assert settings.llm.llm_provider == "openai"


def test_a_component_gets_its_own_group_with_the_same_defaults() -> None:
    assert Settings().retrieval == RetrievalSettings()
    changed = Settings(rrf_k=3).with_overrides(page_weight=0.5).retrieval
    assert (changed.rrf_k, changed.page_weight) == (3, 0.5)


@pytest.mark.parametrize(
    ("group", "name", "old", "new"),
    [
        ("storage", "keyword_backend", "bm25s", "bm25-files"),
        ("retrieval", "reranker", "auto", "colbert-if-installed"),
    ],
)
def test_a_renamed_choice_is_still_accepted_with_a_warning_naming_the_new_value(
    group: str, name: str, old: str, new: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="citerag.settings"):
        settings = build_settings({name: old})
    assert getattr(getattr(settings, group), name) == new
    assert [r.getMessage() for r in caplog.records] == [
        f"{name} {old!r} is now called {new!r} (it means the same); write {new!r} in config.py "
        "or the environment."
    ]


def test_the_environment_is_read_by_name_and_empty_variables_count_as_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_METADATA", "both")
    monkeypatch.setenv("MILVUS_URI", "")
    monkeypatch.setenv("LLM_TIMEOUT_S", "5")
    settings = settings_from_config(config)
    assert settings.ingest.metadata == "both" and settings.llm.llm_timeout_s == 5
    assert settings.storage.milvus_uri == ""
    monkeypatch.setenv("LLM_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="llm_timeout_s is 'soon'; it must be a whole number"):
        settings_from_config(config)


def test_with_overrides_is_checked_like_any_settings() -> None:
    settings = Settings().with_overrides(chunk_size=96, chunk_overlap=16)
    assert (
        settings.ingest.chunk_size,
        settings.ingest.chunk_overlap,
        settings.retrieval.rrf_k,
    ) == (96, 16, 10)
    with pytest.raises(ConfigError, match="reranker"):
        settings.with_overrides(reranker="magic")


def test_environment_overrides_config() -> None:
    env = {"MILVUS_URI": "http://db:19530", "RAG_STORAGE_DIR": "/tmp/x", "RAG_RERANKER": "none"}
    settings = settings_from_config(config, environ=env)
    assert settings.storage.milvus_uri == "http://db:19530"
    assert settings.storage.storage_dir == Path("/tmp/x")
    assert settings.retrieval.reranker == "none"


def test_article_overrides_apply_to_that_article_only() -> None:
    fake = types.SimpleNamespace(
        DEFAULT_RAG_SETTINGS={"chunk_size": 256, "chunk_overlap": 32},
        ARTICLE_RAG_OVERRIDES={"big": {"chunk_size": 1024}},
    )
    assert settings_from_config(fake, "big", environ={}).ingest.chunk_size == 1024  # type: ignore[arg-type]
    assert settings_from_config(fake, "other", environ={}).ingest.chunk_size == 256  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "values, fragment",
    [
        ({"chunk_size": "big"}, "whole number"),
        ({"chunk_overlap": 1100}, "chunk_overlap"),
        ({"filing_keyword_weight": 0}, "filing_keyword_weight"),
        ({"reranker": "magic"}, "reranker"),
        ({"llm_provider": "skynet"}, "llm_provider"),
        ({"chunk_sise": 10}, "Unknown setting"),
        ({"max_upload_mb": "lots"}, "max_upload_mb is 'lots'; it must be a number"),
        ({"milvus_uri": 19530}, "milvus_uri is 19530; it must be a string"),
        ({"ocr_pictures": "maybe"}, "ocr_pictures is 'maybe'; it must be true or false"),
        ({"retrieval": {"rrf_k": "x"}}, "rrf_k is 'x'; it must be a whole number"),
        ({"retrieval": {"chunk_size": 10}}, "Unknown setting"),
    ],
)
def test_malformed_settings_raise_one_clear_config_error(values: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment) as caught:
        build_settings(values)
    assert "\n" not in str(caught.value)


def test_mineru_tier_must_be_a_real_mineru_tier() -> None:
    from mineru_wrapper import TIERS

    assert TIERS == ("flash", "basic", "standard", "advanced")  # MinerU 4.x's public tiers
    for tier in TIERS:
        assert build_settings({"mineru_tier": tier}).parse.mineru_tier == tier
    for wrong in ("pipeline", "vlm", "Flash "):
        with pytest.raises(ConfigError, match="mineru_tier") as caught:
            build_settings({"mineru_tier": wrong})
        message = str(caught.value)
        assert "\n" not in message and all(repr(t) in message for t in TIERS)
    with pytest.raises(ConfigError, match="mineru_tier"):
        settings_from_config(config, environ={"MINERU_TIER": "vlm"})


def test_each_choice_list_is_checked_with_the_same_sentence_everywhere() -> None:
    from citerag.embed.embedder import Embedder
    from mineru_wrapper import MineruParser

    with pytest.raises(ConfigError) as from_settings:
        build_settings({"embedding_backend": "gpu"})
    with pytest.raises(ConfigError) as from_embedder:
        Embedder(backend="gpu")
    assert str(from_settings.value) == str(from_embedder.value)
    with pytest.raises(ConfigError) as from_settings:
        build_settings({"mineru_tier": "turbo"})
    with pytest.raises(ConfigError) as from_parser:
        MineruParser(tier="turbo")
    assert str(from_settings.value) == str(from_parser.value)


@pytest.mark.parametrize(
    ("uri", "scheme"),
    [
        ("http://127.0.0.1:19530", MilvusScheme.HTTP),
        ("HTTPS://cloud.example:443", MilvusScheme.HTTPS),
        ("unix:/run/milvus.sock", MilvusScheme.UNIX),
        ("storage/milvus.db", MilvusScheme.LITE),
        ("C:\\data\\milvus.db", MilvusScheme.LITE),  # a drive letter is not a scheme pymilvus has
    ],
)
def test_the_milvus_uri_scheme_decides_server_or_lite(uri: str, scheme: MilvusScheme) -> None:
    assert MilvusScheme.of(uri) is scheme
    assert scheme.is_server == (scheme is not MilvusScheme.LITE)
