from __future__ import annotations

import numpy as np
import pytest

from citerag.embed.embedder import Embedder, default_model_path
from citerag.retrieve.rerank import (
    BestSentenceReranker,
    MaxSimReranker,
    NoReranker,
    RerankInput,
    find_colbert_checkpoint,
)
from citerag.types import Chunk, ScoredChunk


def chunk(chunk_id: str, text: str) -> Chunk:
    return Chunk(chunk_id, "d", "d.pdf", 1, 0, text, 0, len(text), sentences=[(0, len(text))])


def unit(*values: float) -> np.ndarray:
    vector = np.array(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_no_reranker_keeps_the_retrieval_order() -> None:
    candidates = [ScoredChunk(chunk(str(i), "t"), 1.0 / (i + 1)) for i in range(5)]
    request = RerankInput("q", unit(1, 0), candidates, {})
    assert [c.chunk.id for c in NoReranker().rerank(request, 3)] == ["0", "1", "2"]


def test_best_sentence_lifts_a_strong_match_but_blends_with_retrieval_order() -> None:
    candidates = [ScoredChunk(chunk(str(i), "t"), 0.0) for i in range(6)]
    vectors = {str(i): unit(0.1, 1) for i in range(6)}
    vectors["3"] = unit(1, 0)  # the only sentence that matches the question
    request = RerankInput("q", unit(1, 0), candidates, vectors)
    order = [c.chunk.id for c in BestSentenceReranker().rerank(request, 6)]
    assert order.index("3") < 3, "the matching chunk should move up"
    assert order[0] == "0", "one reranker vote does not beat the retrieval's first place"
    assert sorted(order) == [str(i) for i in range(6)]


@pytest.mark.slow
def test_maxsim_on_minilm_tokens_prefers_the_passage_about_the_question() -> None:
    reranker = MaxSimReranker(Embedder())
    texts = [
        "The quarterly report lists revenue by segment and operating expenses.",
        "Bananas are rich in potassium and grow in tropical climates.",
        "The first programs were written on an IBM 1401 with punched cards.",
    ]
    candidates = [ScoredChunk(chunk(str(i), t), 0.0) for i, t in enumerate(texts)]
    request = RerankInput("What computer did he first program on?", unit(1, 0), candidates, {})
    order = [c.chunk.id for c in reranker.rerank(request, 3)]
    assert order.index("2") < order.index("1")


@pytest.mark.slow
def test_colbert_reranker_runs_the_colbert_ai_code_path_on_a_local_checkpoint(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "torch_extensions"))
    from citerag.retrieve.rerank import ColbertReranker

    # A BERT backbone folder is a valid ColBERT checkpoint with an untrained projection:
    # the wiring is real, the scores are not, so only the shape of the result is checked.
    reranker = ColbertReranker(str(default_model_path()))
    candidates = [ScoredChunk(chunk(str(i), f"passage number {i} text"), 0.0) for i in range(4)]
    result = reranker.rerank(RerankInput("which passage?", unit(1, 0), candidates, {}), 3)
    assert len(result) == 3
    assert len({c.chunk.id for c in result}) == 3


def test_colbert_checkpoint_lookup_explains_what_is_missing(tmp_path) -> None:
    found, reason = find_colbert_checkpoint(str(tmp_path / "nope"))
    assert found is None and "COLBERT_CHECKPOINT" in reason
    found, reason = find_colbert_checkpoint(str(tmp_path))
    assert found == str(tmp_path)
