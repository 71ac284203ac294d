"""Hosted embeddings by configuration (OpenAI and Ollama through LlamaIndex, against the
loopback server), their failures and hostile replies, and a collection that refuses vectors
from a second model."""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pymupdf
import pytest
from fake_openai_server import FakeOpenAIServer, running_server

from citerag.embed.collection_model import CollectionModel, stored_model
from citerag.embed.embedder import Embedder
from citerag.embed.providers import HostedEmbedder, build_embedder
from citerag.engine import Engine
from citerag.errors import BackendUnavailable, ConfigError, LLMResponseError
from citerag.settings import EmbeddingSettings, Settings, settings_from_config

OPENAI_MODEL = "text-embedding-3-small"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with running_server(embedding_dim=48) as fake:
        yield fake


def _openai(server: FakeOpenAIServer, **changes: Any) -> Settings:
    values = dict(
        embedding_provider="openai",
        embedding_model=OPENAI_MODEL,
        embedding_base_url=server.base_url,
        embedding_api_key="sk-test",
    )
    values.update(changes)
    return Settings(**values)


def test_the_local_default_needs_no_endpoint_and_names_its_model() -> None:
    embedder = build_embedder(Settings().embedding)
    assert type(embedder) is Embedder
    assert embedder.model_id == "local:all-MiniLM-L6-v2"
    assert build_embedder(EmbeddingSettings(embedding_model="/models/e5-small")).model_id == (
        "local:e5-small"
    )


@pytest.mark.parametrize("provider", ["openai", "ollama"])
def test_hosted_vectors_are_normalized_float32_rows_from_the_endpoint(
    server: FakeOpenAIServer, provider: str
) -> None:
    base = server.base_url if provider == "openai" else f"http://127.0.0.1:{server.port}"
    model = OPENAI_MODEL if provider == "openai" else "nomic-embed-text"
    settings = _openai(server, embedding_provider=provider, embedding_base_url=base)
    embedder = build_embedder(settings.embedding.with_overrides(embedding_model=model))
    assert isinstance(embedder, HostedEmbedder)
    assert embedder.model_id == f"{provider}:{model}"
    texts = ["revenues grew in 2020", "revenues fell in 2019", "the anvil supplier"]
    vectors = embedder.embed(texts)
    assert vectors.dtype == np.float32 and vectors.shape == (3, 48) and embedder.dim == 48
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])  # shared words
    assert server.embedded[:3] == texts  # the texts went to the endpoint as given


def test_the_provider_comes_from_the_environment() -> None:
    config = types.SimpleNamespace(DEFAULT_RAG_SETTINGS={})
    environ = {"EMBEDDING_PROVIDER": "ollama", "EMBEDDING_BASE_URL": "http://127.0.0.1:1"}
    settings = settings_from_config(config, environ=environ)  # type: ignore[arg-type]
    assert settings.embedding.embedding_provider == "ollama"
    assert settings.embedding.embedding_base_url == "http://127.0.0.1:1"
    assert build_embedder(settings.embedding).model_id == "ollama:nomic-embed-text"


@pytest.mark.parametrize(
    ("changes", "environ", "message"),
    [
        ({"embedding_api_key": ""}, {}, "needs an API key; set EMBEDDING_API_KEY"),
        ({"embedding_model": "emb-1"}, {}, "'emb-1' is not an OpenAI embedding model"),
    ],
)
def test_configuration_mistakes_are_one_sentence(
    server: FakeOpenAIServer, changes: dict[str, str], environ: dict[str, str], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        build_embedder(_openai(server, **changes).embedding, environ)
    with pytest.raises(ConfigError, match="embedding_provider is 'cohere'"):
        Settings(embedding_provider="cohere")


def test_a_failing_endpoint_is_one_sentence_naming_it(server: FakeOpenAIServer) -> None:
    server.embedding_status = 500
    embedder = build_embedder(_openai(server).embedding)
    with pytest.raises(BackendUnavailable, match=r"embedding endpoint http://127\.0\.0\.1") as e:
        embedder.embed(["a"])
    assert "\n" not in str(e.value) and OPENAI_MODEL in str(e.value)


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (lambda texts: [[0.1, 0.2]], "not one vector per text"),  # one row for several texts
        (lambda texts: [[float("nan")] * 4 for _ in texts], "non-finite"),
        (lambda texts: [[0.0] * 4 for _ in texts], "empty or non-finite"),
        (lambda texts: [[1.0] * (3 + i) for i, _ in enumerate(texts)], "not one vector"),
    ],
)
def test_hostile_embedding_replies_are_refused(
    server: FakeOpenAIServer, reply: Any, message: str
) -> None:
    server.embedding_reply = reply
    with pytest.raises(LLMResponseError, match=message):
        build_embedder(_openai(server).embedding).embed(["first text", "second text"])


def test_a_change_of_dimension_between_calls_is_refused(server: FakeOpenAIServer) -> None:
    embedder = build_embedder(_openai(server).embedding)
    assert embedder.dim == 48
    server.embedding_dim = 32
    with pytest.raises(LLMResponseError, match="32-dimensional vectors"):
        embedder.embed(["text"])


def _pdf(path: Path, text: str) -> Path:
    with pymupdf.open() as document:
        page = document.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), text, fontsize=11)
        document.save(path)
    return path


@pytest.mark.slow
def test_a_collection_answers_with_hosted_vectors_and_refuses_another_model(
    tmp_path: Path, server: FakeOpenAIServer
) -> None:
    settings = _openai(server, storage_dir=tmp_path / "storage", reranker="none")
    pdf = _pdf(tmp_path / "acme.pdf", "Acme revenues in 2020 were 4.2 billion dollars.")
    engine = Engine(settings)
    try:
        assert engine.ingest(pdf, "hosted").status == "ingested"
        assert stored_model(engine.docstore, "hosted") == CollectionModel(
            f"openai:{OPENAI_MODEL}", 48
        )
        asked = len(server.embedded)
        result = engine.query("What were Acme's revenues?", "hosted", plan=False)
        assert result.to_dict()["sources"][0]["documentName"] == "acme.pdf"
        assert "What were Acme's revenues?" in server.embedded[asked:]  # the query, hosted
    finally:
        engine.close()
    other = Engine(settings.with_overrides(embedding_model="text-embedding-3-large"))
    try:
        with pytest.raises(ConfigError, match="Cannot ask collection 'hosted'") as caught:
            other.query("What were Acme's revenues?", "hosted", plan=False)
        assert f"openai:{OPENAI_MODEL} (48 dimensions)" in str(caught.value)
        assert "openai:text-embedding-3-large" in str(caught.value)
        with pytest.raises(ConfigError, match="Cannot ingest into collection 'hosted'"):
            other.ingest(_pdf(tmp_path / "globex.pdf", "Globex risks."), "hosted")
        assert [r.name for r in other.docstore.list_documents("hosted")] == ["acme.pdf"]
        assert other.ingest(tmp_path / "globex.pdf", "large").status == "ingested"
    finally:
        other.close()
