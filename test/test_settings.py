from __future__ import annotations

import types
from pathlib import Path

import pytest

import config
from citerag.errors import ConfigError
from citerag.settings import build_settings, settings_from_config


def test_defaults_come_from_config_py() -> None:
    settings = settings_from_config(config, environ={})
    assert settings.chunk_size == config.DEFAULT_RAG_SETTINGS["chunk_size"]
    assert settings.rrf_k == config.DEFAULT_RAG_SETTINGS["rrf_k"]
    assert settings.filing_keyword_weight == config.DEFAULT_RAG_SETTINGS["filing_keyword_weight"]
    assert settings.milvus_uri == "" and settings.mongodb_uri == ""


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


def test_config_py_names_only_real_mineru_tiers() -> None:
    import re

    from mineru_wrapper import TIERS

    [line] = [
        line
        for line in Path(config.__file__).read_text().splitlines()
        if line.strip().startswith('"mineru_tier"')
    ]
    named = re.findall(r'"([a-z_]+)"', line.split("#", 1)[1])
    assert named and set(named) <= set(TIERS), line
