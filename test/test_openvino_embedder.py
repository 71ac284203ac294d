"""OpenVINO runs the packed graph: float32 gives the model's own vectors, bfloat16 (where the CPU
computes it natively) stays within a ten-thousandth of them, and `auto` prefers it on a CPU."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from citerag.embed import embedder as embedder_module
from citerag.embed.embedder import AUTO_CPU_BACKEND, Embedder
from citerag.embed.graph_runners import native_bf16, openvino_available
from citerag.errors import ModelUnavailable
from citerag.ingest.pipeline import ingest_key
from citerag.settings import Settings

TEXTS = [
    "Netflix's streaming revenues grew in 2020.",
    "What did the author work on before college?",
    "Cash provided by operating activities",
    "",
    "a table row: Other, net 1,055",
    "long " * 400,
]
needs_openvino = pytest.mark.skipif(not openvino_available(), reason="openvino is not installed")


@pytest.fixture(scope="module")
def torch_vectors() -> np.ndarray:
    return Embedder(backend="torch").embed(TEXTS)


def test_auto_prefers_openvino_then_onnx_runtime_on_a_cpu_and_pytorch_on_a_gpu(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(embedder_module, "onnx_available", lambda: True)
    monkeypatch.setattr(embedder_module, "_device", lambda: "cpu")
    monkeypatch.setattr(embedder_module, "openvino_available", lambda: True)
    assert Embedder().backend == AUTO_CPU_BACKEND
    monkeypatch.setattr(embedder_module, "openvino_available", lambda: False)
    assert Embedder().backend == "onnx"
    monkeypatch.setattr(embedder_module, "_device", lambda: "cuda")
    assert Embedder().backend == "torch"


def test_openvino_named_where_it_is_missing_is_one_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(embedder_module, "openvino_available", lambda: False)
    with pytest.raises(ModelUnavailable, match="needs OpenVINO; run `bash setup.sh`"):
        Embedder(backend="openvino", cache_dir=tmp_path).embed(["a"])
    assert not any(tmp_path.iterdir())  # refused before anything was exported


def test_openvino_keeps_the_documents_and_the_collections_model() -> None:
    """Its vectors are the model's (bfloat16: within 1e-4), so documents ingested with another
    backend are not ingested again and a collection answers from either."""
    sha = "ab" * 32
    backends = ("auto", "onnx", "openvino", "openvino-bf16")
    assert len({ingest_key(sha, Settings(embedding_backend=b)) for b in backends}) == 1
    assert len({Embedder(backend=b).model_id for b in (*backends, "torch")}) == 1


@pytest.mark.slow
@needs_openvino
def test_openvino_float32_gives_the_models_own_vectors(
    tmp_path: Path, torch_vectors: np.ndarray
) -> None:
    openvino = Embedder(backend="openvino", cache_dir=tmp_path)
    got = openvino.embed(TEXTS)
    assert openvino._packed is not None  # the packed graph ran
    assert got.dtype == np.float32 and got.shape == torch_vectors.shape
    assert np.abs(got - torch_vectors).max() < 1e-5
    assert np.abs(openvino.embed(TEXTS[:1]) - got[:1]).max() < 1e-6  # a question alone


@pytest.mark.slow
@needs_openvino
@pytest.mark.skipif(not native_bf16(), reason="this CPU has no native bfloat16")
def test_bf16_vectors_stay_within_a_ten_thousandth_of_the_models(
    tmp_path: Path, torch_vectors: np.ndarray
) -> None:
    got = Embedder(backend="openvino-bf16", cache_dir=tmp_path).embed(TEXTS)
    cosines = (got * torch_vectors).sum(axis=1)
    assert np.all(cosines > 0.9999)
    assert np.abs(got - torch_vectors).max() > 1e-5  # bfloat16 did run


@pytest.mark.slow
@needs_openvino
def test_bf16_asked_of_a_cpu_without_it_runs_float32(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, torch_vectors: np.ndarray
) -> None:
    monkeypatch.setattr("citerag.embed.graph_runners.native_bf16", lambda: False)
    embedder = Embedder(backend="openvino-bf16", cache_dir=tmp_path)
    assert np.abs(embedder.embed(TEXTS) - torch_vectors).max() < 1e-5


@pytest.mark.slow
@needs_openvino
def test_threads_sharing_one_openvino_embedder_get_each_texts_own_vectors(
    tmp_path: Path,
) -> None:
    """The API answers questions on several threads with one embedder."""
    embedder = Embedder(backend="openvino", cache_dir=tmp_path)
    alone = [embedder.embed([text])[0] for text in TEXTS]
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda text: embedder.embed([text])[0], TEXTS * 4))
    for i, vector in enumerate(together):
        assert np.abs(vector - alone[i % len(TEXTS)]).max() < 1e-6


@pytest.mark.slow
@needs_openvino
def test_an_openvino_that_cannot_compile_leaves_onnx_runtime_to_run_the_same_graph(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    torch_vectors: np.ndarray,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("CPU plugin unavailable")

    monkeypatch.setattr(embedder_module, "OpenVinoRunner", broken)
    embedder = Embedder(backend="openvino-bf16", cache_dir=tmp_path)
    got = embedder.embed(TEXTS)
    assert embedder._packed is not None  # still the packed graph, on ONNX Runtime
    assert "running it on ONNX Runtime instead" in caplog.text
    assert np.abs(got - torch_vectors).max() < 1e-5
