from __future__ import annotations

import types
from pathlib import Path

import pytest

import config
from citerag.errors import ConfigError
from citerag.query.query_factory import retrieval_settings
from citerag.retrieve.hybrid import RetrievalSettings
from citerag.settings import Settings, build_settings, settings_from_config


def test_an_unconfigured_run_gets_the_package_defaults_and_the_projects_storage() -> None:
    settings = settings_from_config(config, environ={})
    assert settings == Settings(storage_dir=Path(config.STORAGE_DIR))
    assert (settings.chunk_size, settings.chunk_overlap) == (1024, 200)
    assert (settings.similarity_top_k_fusion, settings.rrf_k, settings.fusion_top_n) == (35, 10, 25)
    assert settings.metadata == "entity" and settings.reranker == "auto"
    assert settings.milvus_uri == "" and settings.mongodb_uri == ""


def test_the_retriever_defaults_are_the_settings_defaults() -> None:
    ours, theirs = retrieval_settings(Settings()), RetrievalSettings()
    assert ours == theirs


def test_the_environment_is_read_by_name_and_empty_variables_count_as_unset(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAG_METADATA", "both")
    monkeypatch.setenv("MILVUS_URI", "")
    monkeypatch.setenv("LLM_TIMEOUT_S", "5")
    settings = settings_from_config(config)
    assert settings.metadata == "both" and settings.llm_timeout_s == 5
    assert settings.milvus_uri == ""
    monkeypatch.setenv("LLM_TIMEOUT_S", "soon")
    with pytest.raises(ConfigError, match="llm_timeout_s is 'soon'; it must be a whole number"):
        settings_from_config(config)


def test_with_overrides_is_checked_like_any_settings() -> None:
    settings = Settings().with_overrides(chunk_size=96, chunk_overlap=16)
    assert (settings.chunk_size, settings.chunk_overlap, settings.rrf_k) == (96, 16, 10)
    with pytest.raises(ConfigError, match="reranker"):
        settings.with_overrides(reranker="magic")


def test_environment_overrides_config() -> None:
    env = {"MILVUS_URI": "http://db:19530", "RAG_STORAGE_DIR": "/tmp/x", "RAG_RERANKER": "none"}
    settings = settings_from_config(config, environ=env)
    assert settings.milvus_uri == "http://db:19530"
    assert settings.storage_dir == Path("/tmp/x")
    assert settings.reranker == "none"


def test_article_overrides_apply_to_that_article_only() -> None:
    fake = types.SimpleNamespace(
        DEFAULT_RAG_SETTINGS={"chunk_size": 256, "chunk_overlap": 32},
        ARTICLE_RAG_OVERRIDES={"big": {"chunk_size": 1024}},
    )
    assert settings_from_config(fake, "big", environ={}).chunk_size == 1024  # type: ignore[arg-type]
    assert settings_from_config(fake, "other", environ={}).chunk_size == 256  # type: ignore[arg-type]


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
        assert build_settings({"mineru_tier": tier}).mineru_tier == tier
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
