"""Many short texts encoded in few long rows ("sequence packing"), with each text's own vectors.

A sentence of 25 word pieces encoded on its own keeps the model busy on tiny matrices; ingest
encodes thousands of them. Here texts are packed side by side into rows of up to the model's
input length, and the exported graph takes, besides the word pieces, each token's position
within its own text and which text it belongs to: a token attends only to tokens of its own text
and its positions restart at 0 for every text. Each text is then encoded exactly as alone (the
largest difference per component to SentenceTransformer's own vectors is below 1e-6, tested)
while the model runs on full rows: about twice as fast on sentences, measured on this machine.

The graph is exported once per model from its own local weights (nothing is downloaded), next
to SentenceTransformer's ONNX export, and run by ONNX Runtime or OpenVINO
(`embed.graph_runners`); `onnx-int8` quantizes it (int8 weights and matrix products, which gain
most on full rows: other vectors, cosine about 0.99 to float32).
"""

from __future__ import annotations

import bisect
import json
import logging
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from citerag.embed.graph_runners import GraphRunner
from citerag.embed.onnx_backend import move_into_place, quiet_export
from citerag.store.atomic_dirs import write_json_atomically

if TYPE_CHECKING:
    from tokenizers import Tokenizer

log = logging.getLogger(__name__)
PACKED_FILE = "onnx/model_packed.onnx"
PACKED_INT8_FILE = "onnx/model_packed_int8.onnx"
PACKED_TOKENIZER_FILE = "onnx/packed_tokenizer.json"
ROWS_PER_RUN = 16  # rows handed to ONNX Runtime at once
# Word pieces per packed row. Attention costs the square of a row's length and most sentences
# are short: rows of 128 encoded the library's sentences 8% faster than rows of 256 (64 and 160
# were slower); a longer text gets a row of its own, up to the model's input length.
ROW_LENGTH = 128
INPUTS = ("input_ids", "position_ids", "text_ids")


def packed_model_file(folder: Path, quantized: bool) -> Path:
    return folder / (PACKED_INT8_FILE if quantized else PACKED_FILE)


def export_packed(source: Path, folder: Path, quantized: bool, quantization: str) -> Path:
    """The packed graph for the SentenceTransformer in `source`, exported into `folder` once."""
    target = packed_model_file(folder, quantized)
    if target.is_file():
        return target
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{folder.name}.packed.", dir=folder.parent))
    log.info("exporting the packed embedding graph to %s (once per model)", target)
    try:
        float_file = packed_model_file(folder, quantized=False)
        with quiet_export():
            if not float_file.is_file():  # exported once; int8 is quantized from it in place
                float_file = scratch / PACKED_FILE
                float_file.parent.mkdir(parents=True)
                _export_float(source, float_file)
            if quantized:
                (scratch / PACKED_INT8_FILE).parent.mkdir(parents=True, exist_ok=True)
                _quantize(float_file, scratch / PACKED_INT8_FILE, quantization)
        move_into_place(scratch, folder)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return target


def _export_float(source: Path, target: Path) -> None:
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(source), attn_implementation="eager").eval()

    class PackedTransformer(torch.nn.Module):
        """The model with a block-diagonal attention mask built from each token's text id."""

        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(
            self, input_ids: torch.Tensor, position_ids: torch.Tensor, text_ids: torch.Tensor
        ) -> torch.Tensor:
            same_text = (text_ids[:, :, None] == text_ids[:, None, :]).to(torch.int64)
            return self.model(
                input_ids=input_ids,
                attention_mask=same_text,
                position_ids=position_ids,
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state

    example = torch.ones(2, 8, dtype=torch.int64)
    axes = {name: {0: "rows", 1: "tokens"} for name in (*INPUTS, "token_embeddings")}
    torch.onnx.export(
        PackedTransformer(),
        (example, example, example),
        str(target),
        input_names=list(INPUTS),
        output_names=["token_embeddings"],
        dynamic_axes=axes,
        opset_version=17,
        dynamo=False,
    )


def _quantize(float_file: Path, target: Path, quantization: str) -> None:
    """Dynamic int8 quantization with a scale per weight column: with one scale per tensor, as
    sentence-transformers' own int8 export does, packed rows drifted further from float32
    (cosine 0.95 instead of 0.99, measured on the library's sentences)."""
    from optimum.onnxruntime import ORTQuantizer
    from optimum.onnxruntime.configuration import AutoQuantizationConfig

    config = getattr(AutoQuantizationConfig, quantization)(is_static=False, per_channel=True)
    out = target.parent / "quantized"
    ORTQuantizer.from_pretrained(str(float_file.parent), file_name=float_file.name).quantize(
        config, save_dir=str(out)
    )
    produced = next(out.glob("*.onnx"))
    produced.replace(target)
    shutil.rmtree(out, ignore_errors=True)


def packed_tokenizer(source: Path, folder: Path, max_length: int) -> Tokenizer:
    """The tokenizer sentence-transformers uses for the model in `source`, as its Rust core,
    truncating as transformers does (longest first, on the right, special tokens added).

    The core is saved into `folder` once, from transformers' own tokenizer (which may rebuild
    the file's normalizer from its config), so later processes need not import transformers."""
    from tokenizers import Tokenizer

    target = folder / PACKED_TOKENIZER_FILE
    if not target.is_file():
        from transformers import AutoTokenizer

        core = AutoTokenizer.from_pretrained(str(source)).backend_tokenizer
        write_json_atomically(target, json.loads(core.to_str()))  # whole, whoever writes last
    tokenizer = Tokenizer.from_file(str(target))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length)
    return tokenizer


class PackedEncoder:
    """Normalized mean-pooled vectors of texts, packed into rows, as SentenceTransformer gives
    them (texts stripped, truncated to the model's input length with [CLS] and [SEP])."""

    def __init__(
        self, runner: GraphRunner, tokenizer: Tokenizer, max_length: int, dim: int
    ) -> None:
        self._runner = runner
        self._tokenizer = tokenizer
        self._max_length = max_length
        self.dim = dim
        self._lock = threading.Lock()  # the tokenizer is not safe to share between threads

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            encodings = self._tokenizer.encode_batch([text.strip() for text in texts])
        tokens = [encoding.ids for encoding in encodings]
        result = np.zeros((len(texts), self.dim), dtype=np.float32)
        rows = pack(tokens, min(ROW_LENGTH, self._max_length))
        for begin in range(0, len(rows), ROWS_PER_RUN):
            self._run(rows[begin : begin + ROWS_PER_RUN], tokens, result)
        norms = np.linalg.norm(result, axis=1, keepdims=True)
        return np.divide(result, norms, out=np.zeros_like(result), where=norms > 0)

    def _run(self, rows: Sequence[list[int]], tokens: Sequence[list[int]], out: np.ndarray) -> None:
        width = max(sum(len(tokens[i]) for i in row) for row in rows)
        ids = np.zeros((len(rows), width), dtype=np.int64)
        positions = np.zeros_like(ids)
        owners = np.full_like(ids, -1)  # padding: a text of its own, read by nobody
        placed: list[tuple[int, int, int, int]] = []
        for r, row in enumerate(rows):
            at = 0
            for i in row:
                n = len(tokens[i])
                ids[r, at : at + n] = tokens[i]
                positions[r, at : at + n] = np.arange(n)
                owners[r, at : at + n] = i
                placed.append((i, r, at, at + n))
                at += n
        feeds = dict(zip(INPUTS, (ids, positions, owners), strict=True))
        embeddings = self._runner.run(feeds)
        for i, r, start, end in placed:
            out[i] = embeddings[r, start:end].mean(axis=0)


def pack(tokens: Sequence[Sequence[int]], row_length: int) -> list[list[int]]:
    """Text indices grouped into rows of at most `row_length` word pieces: longest texts first,
    each into the row whose room fits it most tightly (best-fit decreasing), so rows are full.
    A text longer than a row comes first, in a row of its own (runs of rows of alike widths)."""
    by_length = sorted(range(len(tokens)), key=lambda i: -len(tokens[i]))
    rows: list[list[int]] = [[i] for i in by_length if len(tokens[i]) > row_length]
    rooms: list[tuple[int, int]] = []  # (free word pieces, row), kept sorted
    for i in by_length[len(rows) :]:
        size = len(tokens[i])
        at = bisect.bisect_left(rooms, (size, -1))
        if at < len(rooms):
            free, row = rooms.pop(at)
        else:
            free, row = row_length, len(rows)
            rows.append([])
        rows[row].append(i)
        bisect.insort(rooms, (free - size, row))
    return rows
