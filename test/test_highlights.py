"""Highlights: exact offsets always, and the answering sentence chosen over unrelated ones."""

from __future__ import annotations

import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from llama_index.core.schema import NodeWithScore, TextNode

from citerag.answer.contract import AnswerMetadata, AnswerResult, sources_from_nodes
from citerag.nodes import HIGHLIGHTS, chunk_node
from citerag.retrieve.highlights import select_highlights
from citerag.text.sentences import sentence_spans
from citerag.types import BBox, Highlight

WORDS = st.sampled_from(["revenue", "grew", "Netflix", "é", "ümlaut", "the", "2020", "日本", "."])


def _assert_exact(content: str, highlights: list, k: int) -> None:
    assert len(highlights) <= k
    starts = [h.highlight.startOffset for h in highlights]
    assert starts == sorted(starts)
    for scored in highlights:
        h = scored.highlight
        assert 0 <= h.startOffset < h.endOffset <= len(content)
        assert content[h.startOffset : h.endOffset] == h.text


@st.composite
def _content(draw: st.DrawFn) -> str:
    pieces = draw(st.lists(st.one_of(st.text(max_size=40), WORDS), max_size=12))
    repeated = draw(st.lists(st.sampled_from(pieces or ["x"]), max_size=4))
    separators = draw(st.lists(st.sampled_from([". ", "\n", "\n\n", "! ", " "]), min_size=1))
    parts = pieces + repeated
    return "".join(p + separators[i % len(separators)] for i, p in enumerate(parts))


@settings(max_examples=300, deadline=None)
@given(
    content=_content(),
    query=st.text(max_size=40) | st.lists(WORDS, max_size=5).map(" ".join),
    k=st.integers(min_value=0, max_value=5),
    min_score=st.floats(min_value=0.0, max_value=1.0),
)
def test_highlights_round_trip_for_any_text(
    content: str, query: str, k: int, min_score: float
) -> None:
    found = select_highlights(query, content, [], None, None, k=k, min_score=min_score)
    _assert_exact(content, found, k)


@settings(max_examples=200, deadline=None)
@given(
    content=_content(),
    query=st.lists(WORDS, max_size=5).map(" ".join),
    spans=st.lists(st.tuples(st.integers(-5, 200), st.integers(-5, 200)), max_size=8),
    seed=st.integers(0, 2**16),
)
def test_arbitrary_spans_and_vectors_never_break_offsets(
    content: str, query: str, spans: list[tuple[int, int]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(len(spans), 8)) if spans else None
    found = select_highlights(query, content, spans, vectors, rng.normal(size=8), min_score=-1.0)
    _assert_exact(content, found, 3)


CONTENT = (
    "Netflix was founded in 1997 in California. "
    "Streaming revenues increased to $25.0 billion in 2020, up 24% from 2019. "
    "The company has offices in many countries."
)


def test_terms_only_chooses_the_sentence_that_answers() -> None:
    found = select_highlights(
        "How much did streaming revenue increase in 2020?", CONTENT, [], None, None, k=1
    )
    assert [h.highlight.text for h in found] == [
        "Streaming revenues increased to $25.0 billion in 2020, up 24% from 2019."
    ]


def test_vectors_choose_the_sentence_with_matching_meaning() -> None:
    spans = sentence_spans(CONTENT)
    # Hand-built vectors: the third sentence points the same way as the query, though the
    # query shares no term with it.
    vectors = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.2, 0.1, 0.97]])
    found = select_highlights(
        "Where is it located?", CONTENT, spans, vectors, np.array([0.0, 0.0, 2.0]), k=1
    )
    assert [h.highlight.text for h in found] == ["The company has offices in many countries."]
    assert found[0].sentence_index == 2


def test_unrelated_question_gets_no_highlight() -> None:
    assert select_highlights("photosynthesis chlorophyll", CONTENT, [], None, None) == []


def test_results_come_in_reading_order_and_respect_k() -> None:
    found = select_highlights(
        "Netflix revenues 2020 company offices",
        CONTENT,
        [],
        None,
        None,
        k=2,
        min_score=0.0,
        relative_cutoff=0.0,
    )
    assert len(found) == 2
    assert found[0].highlight.startOffset < found[1].highlight.startOffset


def test_mismatched_vectors_fall_back_to_terms() -> None:
    spans = sentence_spans(CONTENT)
    wrong_rows = np.ones((len(spans) + 1, 3))
    found = select_highlights("streaming revenue 2020", CONTENT, spans, wrong_rows, np.ones(3), k=1)
    assert found[0].highlight.text.startswith("Streaming revenues")


def test_ten_sources_with_vectors_take_under_two_ms_each() -> None:
    rng = np.random.default_rng(0)
    content = " ".join([CONTENT] * 4)  # 12 sentences, a typical chunk
    spans = sentence_spans(content)
    vectors = rng.normal(size=(len(spans), 384)).astype(np.float32)
    query_vector = rng.normal(size=384).astype(np.float32)
    select_highlights("streaming revenue", content, spans, vectors, query_vector)
    started = time.perf_counter()
    for _ in range(100):
        select_highlights(
            "How did streaming revenue grow in 2020?", content, spans, vectors, query_vector
        )
    assert (time.perf_counter() - started) / 100 < 0.002


def _highlight_entry(highlight: Highlight) -> dict[str, object]:
    return {
        "text": highlight.text,
        "startOffset": highlight.startOffset,
        "endOffset": highlight.endOffset,
    }


def test_contract_sources_keep_only_highlights_that_round_trip() -> None:
    def node(highlights: list[Highlight]) -> TextNode:
        chunk = chunk_node(
            node_id="n1",
            doc_id="d",
            doc_name="x.pdf",
            page=4,
            chunk_index=0,
            text=CONTENT,
            start=0,
            section="Overview",
            boxes=[BBox(1.0, 2.0, 3.0, 4.0)],
        )
        chunk.metadata[HIGHLIGHTS] = [_highlight_entry(h) for h in highlights]
        return chunk

    good = select_highlights("streaming revenue 2020", CONTENT, [], None, None)[0].highlight
    stale = Highlight(text="Netflix", startOffset=5, endOffset=12)
    sources = sources_from_nodes(
        [
            NodeWithScore(node=node([good, stale]), score=0.75),
            NodeWithScore(node=node([]), score=0.5),
        ]
    )
    result = AnswerResult("Revenue rose [1].", sources, AnswerMetadata(model="extractive"))
    data = result.to_dict()
    first = data["sources"][0]
    assert [s["citationNumber"] for s in data["sources"]] == [1, 2]
    assert [s["score"] for s in data["sources"]] == [0.75, 0.5]
    assert data["sources"][1]["highlights"] == []
    assert first["highlights"] == [
        {"text": good.text, "startOffset": good.startOffset, "endOffset": good.endOffset}
    ]
    assert first["content"][good.startOffset : good.endOffset] == good.text
    assert first["boxes"] == [{"page": 4, "x0": 1.0, "y0": 2.0, "x1": 3.0, "y1": 4.0}]
    assert (first["documentName"], first["pageNumber"], first["title"]) == ("x.pdf", 4, "Overview")
    assert set(data["metadata"]) == {
        "processingTime",
        "model",
        "tokensUsed",
        "retrievalMethod",
        "numChunksRetrieved",
        "reranked",
        "subQuestions",
        "numbersChecked",
        "unsupportedNumbers",
    }
