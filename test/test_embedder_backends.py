"""The embedder's backends: ONNX Runtime gives PyTorch's vectors, exports once, and int8 is
keyed apart (its vectors differ), so a collection never mixes them."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from citerag.embed.embedder import Embedder, _packable, default_model_path
from citerag.embed.onnx_backend import FLOAT_FILE, export_folder, onnx_available
from citerag.embed.packed import pack
from citerag.errors import ConfigError
from citerag.ingest.pipeline import ingest_key
from citerag.settings import Settings

TEXTS = [
    "Netflix's streaming revenues grew in 2020.",
    "What did the author work on before college?",
    "Cash provided by operating activities",
]


def test_an_unknown_backend_is_named_with_the_choices() -> None:
    with pytest.raises(ConfigError, match="embedding_backend is 'tensorrt'; choose one of"):
        Embedder(backend="tensorrt")


def test_settings_refuse_an_unknown_backend() -> None:
    with pytest.raises(ConfigError, match="embedding_backend"):
        Settings(embedding_backend="gpu")


def test_only_int8_changes_the_document_key() -> None:
    sha = "ab" * 32
    keys = {b: ingest_key(sha, Settings(embedding_backend=b)) for b in ("auto", "torch", "onnx")}
    assert len(set(keys.values())) == 1
    assert ingest_key(sha, Settings(embedding_backend="onnx-int8")) != keys["auto"]


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="onnxruntime/optimum are not installed")
def test_onnx_gives_torch_vectors_and_exports_once(tmp_path: Path) -> None:
    onnx = Embedder(backend="onnx", cache_dir=tmp_path)
    torch = Embedder(backend="torch")
    assert onnx.backend == "onnx"
    got, want = onnx.embed(TEXTS), torch.embed(TEXTS)
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.abs(got - want).max() < 1e-5
    folder = export_folder(default_model_path(), tmp_path)
    model_file = folder / FLOAT_FILE
    stamp = model_file.stat().st_mtime_ns
    again = Embedder(backend="onnx", cache_dir=tmp_path)
    assert np.abs(again.embed(TEXTS) - want).max() < 1e-5
    assert model_file.stat().st_mtime_ns == stamp  # reused, not exported again
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no scratch folder left


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="onnxruntime/optimum are not installed")
def test_int8_vectors_are_close_but_not_the_same(tmp_path: Path) -> None:
    exact = Embedder(backend="onnx", cache_dir=tmp_path).embed(TEXTS)
    quantized = Embedder(backend="onnx-int8", cache_dir=tmp_path).embed(TEXTS)
    cosines = (exact * quantized).sum(axis=1)
    assert np.all(cosines > 0.95)
    assert np.abs(exact - quantized).max() > 1e-4


def test_int8_vectors_are_recorded_as_another_model() -> None:
    assert Embedder(backend="onnx").model_id == Embedder(backend="torch").model_id
    assert Embedder(backend="onnx-int8").model_id != Embedder(backend="onnx").model_id


def _word_pieces(count: int) -> list[int]:
    return [7] * count


def test_packing_fills_rows_without_splitting_or_losing_a_text() -> None:
    sizes = [250, 12, 130, 126, 3, 256, 40, 40, 90, 1]
    rows = pack([_word_pieces(n) for n in sizes], 256)
    placed = sorted(i for row in rows for i in row)
    assert placed == list(range(len(sizes)))
    assert all(sum(sizes[i] for i in row) <= 256 for row in rows)
    assert len(rows) == -(-sum(sizes) // 256)  # as few rows as the word pieces need


class Transformer:  # named as sentence-transformers' modules are
    def __init__(self, model_type: str) -> None:
        self.auto_model = SimpleNamespace(config=SimpleNamespace(model_type=model_type))


class Pooling:
    def __init__(self, mode: str) -> None:
        self.pooling_mode = mode


class Dense:
    pass


@pytest.mark.parametrize(
    ("modules", "packable"),
    [
        ([Transformer("bert"), Pooling("mean")], True),
        ([Transformer("bert"), Pooling("cls")], False),  # pooled otherwise
        ([Transformer("xlm-roberta"), Pooling("mean")], False),  # positions start past padding
        ([Transformer("bert"), Pooling("mean"), Dense()], False),  # a projection after pooling
    ],
)
def test_only_models_the_packed_graph_reproduces_are_packed(
    modules: list[object], packable: bool
) -> None:
    assert _packable(modules) is packable  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="onnxruntime/optimum are not installed")
def test_packed_texts_get_the_vectors_they_get_alone(tmp_path: Path) -> None:
    texts = [*TEXTS, "", "   ", "a table row: Other, net 1,055", "long " * 400, " padded  "]
    torch = Embedder(backend="torch")
    onnx = Embedder(backend="onnx", cache_dir=tmp_path)
    got = onnx.embed(texts)
    assert onnx._packed is not None  # the packed graph ran, not SentenceTransformer's loop
    assert np.abs(got - torch.embed(texts)).max() < 1e-5
    # One text at a time (a question) and many at once agree.
    assert np.abs(onnx.embed(texts[:1]) - got[:1]).max() < 1e-6


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="onnxruntime/optimum are not installed")
def test_a_failed_packed_export_falls_back_to_the_same_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object) -> Path:
        raise RuntimeError("exporter unavailable")

    monkeypatch.setattr("citerag.embed.embedder.export_packed", broken)
    onnx = Embedder(backend="onnx", cache_dir=tmp_path)
    got = onnx.embed(TEXTS)
    assert onnx._packed is None
    assert "encoding texts one by one" in caplog.text
    assert np.abs(got - Embedder(backend="torch").embed(TEXTS)).max() < 1e-5
