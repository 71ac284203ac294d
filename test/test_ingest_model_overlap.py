"""The embedding model loads while the first file is parsed, not after it."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers import text_pdf

from citerag.embed.embedder import Embedder
from citerag.engine import Engine
from citerag.ingest import reading_steps
from citerag.settings import Settings

DIM = 8


class RecordingEmbedder(Embedder):
    """Records the thread its model was loaded on; embeds without a model."""

    def __init__(self, fails: bool = False) -> None:
        super().__init__()
        self.fails = fails
        self.loaded_on: list[str] = []
        self.started = threading.Event()

    def load(self) -> None:
        self.loaded_on.append(threading.current_thread().name)
        self.started.set()
        if self.fails:
            raise RuntimeError("no model here")

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        out[:, 0] = 1.0
        return out


def parse_after_the_model_started(embedder: RecordingEmbedder) -> Any:
    parse = reading_steps.parse_document

    def waiting_parse(*args: Any, **kwargs: Any) -> Any:
        assert embedder.started.wait(timeout=30), "the model load did not start during the parse"
        return parse(*args, **kwargs)

    return waiting_parse


@pytest.mark.parametrize("fails", [False, True])
def test_the_model_loads_in_a_thread_while_the_first_file_is_parsed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fails: bool
) -> None:
    embedder = RecordingEmbedder(fails)
    monkeypatch.setattr(reading_steps, "parse_document", parse_after_the_model_started(embedder))
    engine = Engine(Settings(storage_dir=tmp_path / "storage"), embedder=embedder)
    try:
        first = engine.ingest(text_pdf(tmp_path / "a.pdf"), "c")
        second = engine.ingest(text_pdf(tmp_path / "b.pdf", subject="b"), "c")
    finally:
        engine.close()
    assert (first.status, second.status) == ("ingested", "ingested")
    # once per process, never on the ingesting thread; a failed early load costs nothing
    assert embedder.loaded_on == ["load-embedder"]
