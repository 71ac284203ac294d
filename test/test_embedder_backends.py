"""The embedder's backends: ONNX Runtime gives PyTorch's vectors, exports once, and int8 is
keyed apart (its vectors differ), so a collection never mixes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from citerag.embed.embedder import Embedder, _gpu_possible, default_model_path
from citerag.embed.graph_runners import openvino_available
from citerag.embed.model_folder import read_layout
from citerag.embed.onnx_backend import export_folder, onnx_available
from citerag.embed.packed import pack, packed_model_file
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
    model_file = packed_model_file(folder, quantized=False)
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


def test_a_text_longer_than_a_row_gets_a_row_of_its_own_first() -> None:
    sizes = [40, 200, 90, 129, 128, 30, 256]
    rows = pack([_word_pieces(n) for n in sizes], 128)
    assert rows[:3] == [[6], [1], [3]]  # longest first: runs of rows of alike widths
    assert sorted(i for row in rows for i in row) == list(range(len(sizes)))
    assert all(sum(sizes[i] for i in row) <= 128 for row in rows[3:])


def write_model_folder(
    folder: Path,
    modules: tuple[str, ...] = ("Transformer", "Pooling", "Normalize"),
    pooling: str = "mean_tokens",
    model_type: str = "bert",
    lowercase: bool = False,
    prompt: str = "",
) -> Path:
    """The description files of a SentenceTransformer folder (no weights)."""
    folder.mkdir(parents=True)
    entries = [
        {"idx": i, "name": str(i), "path": "" if i == 0 else f"{i}_{name}", "type": f"st.{name}"}
        for i, name in enumerate(modules)
    ]
    (folder / "modules.json").write_text(json.dumps(entries))
    config = {"max_seq_length": 256, "do_lower_case": lowercase}
    (folder / "sentence_bert_config.json").write_text(json.dumps(config))
    (folder / "config.json").write_text(json.dumps({"model_type": model_type}))
    (folder / "1_Pooling").mkdir()
    modes = ("cls_token", "mean_tokens", "max_tokens", "mean_sqrt_len_tokens")
    pooling_config = {f"pooling_mode_{mode}": mode == pooling for mode in modes}
    pooling_config["word_embedding_dimension"] = 384
    (folder / "1_Pooling" / "config.json").write_text(json.dumps(pooling_config))
    if prompt:
        extras = {"prompts": {"query": prompt}, "default_prompt_name": "query"}
        (folder / "config_sentence_transformers.json").write_text(json.dumps(extras))
    return folder


def test_the_shipped_model_is_described_by_its_folder() -> None:
    layout = read_layout(default_model_path())
    assert layout is not None and layout.packable
    assert (layout.dim, layout.max_seq_length) == (384, 256)


@pytest.mark.parametrize(
    ("changes", "packable"),
    [
        ({}, True),
        ({"modules": ("Transformer", "Pooling")}, True),
        ({"pooling": "cls_token"}, False),  # pooled otherwise
        ({"model_type": "xlm-roberta"}, False),  # positions start past padding
        ({"modules": ("Transformer", "Pooling", "Dense")}, False),  # a projection after pooling
        ({"lowercase": True}, False),  # texts lowercased before tokenizing
        ({"prompt": "query: "}, False),  # a prompt put before every text
    ],
)
def test_only_models_the_packed_graph_reproduces_are_packed(
    tmp_path: Path, changes: dict[str, Any], packable: bool
) -> None:
    layout = read_layout(write_model_folder(tmp_path / "model", **changes))
    assert layout is not None and layout.packable is packable


def test_a_folder_that_does_not_describe_its_model_is_not_packed(tmp_path: Path) -> None:
    folder = write_model_folder(tmp_path / "model")
    (folder / "1_Pooling" / "config.json").write_text("{not json")
    assert read_layout(folder) is None
    assert read_layout(tmp_path / "missing") is None


@pytest.mark.slow
@pytest.mark.skipif(not onnx_available(), reason="onnxruntime/optimum are not installed")
@pytest.mark.parametrize(
    "backend",
    [
        "onnx",
        pytest.param(
            "openvino-bf16",
            marks=pytest.mark.skipif(not openvino_available(), reason="openvino not installed"),
        ),
    ],
)
def test_a_process_with_the_packed_graph_exported_loads_neither_torch_nor_transformers(
    tmp_path: Path, backend: str
) -> None:
    """Those imports are seconds of every process that embeds (an ingest, a CLI question)."""
    probe = (
        "import sys; from pathlib import Path; from citerag.embed.embedder import Embedder; "
        f"embedder = Embedder(backend={backend!r}, cache_dir=Path({str(tmp_path)!r})); "
        "vector = embedder.embed(['a'])[0]; "
        "heavy = {'torch', 'transformers', 'sentence_transformers', 'optimum.onnxruntime'}; "
        "print(sorted(heavy & set(sys.modules)), round(float(vector @ vector), 4))"
    )
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    first = subprocess.run(  # exports the graph (which needs PyTorch) and saves the tokenizer
        [sys.executable, "-c", probe], capture_output=True, text=True, env=environment, check=True
    )
    second = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=environment, check=True
    )
    assert first.stdout.split()[-1] == second.stdout.split()[-1] == "1.0"
    if not _gpu_possible():  # elsewhere PyTorch is asked which device to use
        assert second.stdout.startswith("[]"), second.stdout


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
