from __future__ import annotations

from llama_index.core.schema import NodeRelationship

from citerag.chunk.chunker import chunk_document, default_token_counter
from citerag.nodes import (
    block_type_of,
    chunk_index_of,
    label_of,
    neighbour_id,
    page_of,
    section_of,
    sentences_of,
    start_of,
)
from citerag.types import BBox, Block, Page, ParsedDocument

BOX = BBox(10, 10, 200, 40)


def words(text: str) -> int:
    return len(text.split())


def make_doc() -> ParsedDocument:
    body = " ".join(f"Sentence number {i} talks about topic {i % 7}." for i in range(60))
    table = "| Item | 2020 | 2021 |\n|---|---|---|\n" + "\n".join(
        f"| Row {i} | {i * 10} | {i * 11} |" for i in range(30)
    )
    return ParsedDocument(
        doc_id="f" * 64,
        name="sample.pdf",
        parser="test",
        pages=[
            Page(
                1,
                600,
                800,
                [Block("title", "1 Introduction", BOX, level=1), Block("text", body, BOX)],
            ),
            Page(
                2,
                600,
                800,
                [Block("title", "2 Results", BOX, level=1), Block("table", table, BOX, label="1")],
            ),
            Page(3, 600, 800, [Block("text", "A closing remark. Nothing else.", BOX)]),
        ],
    )


def test_chunks_round_trip_to_page_text_and_stay_on_their_page() -> None:
    doc = make_doc()
    chunks = chunk_document(doc, chunk_size=40, chunk_overlap=10, count_tokens=words)
    assert {page_of(c) for c in chunks} == {1, 2, 3}
    for chunk in chunks:
        page_text = doc.pages[page_of(chunk) - 1].text
        assert page_text[start_of(chunk) : chunk.end_char_idx] == chunk.text
        for a, b in sentences_of(chunk):
            assert chunk.text[a:b].strip() == chunk.text[a:b] != ""


def test_chunks_respect_size_and_overlap_whole_sentences() -> None:
    doc = make_doc()
    chunks = [c for c in chunk_document(doc, 40, 10, count_tokens=words) if page_of(c) == 1]
    assert len(chunks) > 3
    for chunk in chunks:
        assert words(chunk.text) <= 40
        assert chunk.text.rstrip().endswith((".", "Introduction"))
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert previous.end_char_idx is not None
        assert start_of(following) < previous.end_char_idx, "consecutive chunks should overlap"
        overlap = doc.pages[0].text[start_of(following) : previous.end_char_idx]
        assert 0 < words(overlap) <= 10


def test_sections_neighbours_and_ids() -> None:
    chunks = chunk_document(make_doc(), 40, 10, count_tokens=words)
    previous_of = NodeRelationship.PREVIOUS
    next_of = NodeRelationship.NEXT
    assert section_of(chunks[0]) == "1 Introduction"
    assert all(section_of(c) == "2 Results" for c in chunks if page_of(c) in (2, 3))
    assert [chunk_index_of(c) for c in chunks] == list(range(len(chunks)))
    assert len({c.node_id for c in chunks}) == len(chunks)
    assert neighbour_id(chunks[0], previous_of) is None
    assert neighbour_id(chunks[-1], next_of) is None
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert neighbour_id(previous, next_of) == following.node_id
        assert neighbour_id(following, previous_of) == previous.node_id


def test_tables_split_between_rows_and_keep_their_type_and_label() -> None:
    chunks = [c for c in chunk_document(make_doc(), 40, 0, count_tokens=words) if page_of(c) == 2]
    assert len(chunks) > 1
    for chunk in chunks:
        assert block_type_of(chunk) == "table"
        assert label_of(chunk) == "1"
        for line in chunk.text.splitlines():
            if line.startswith("| Row"):
                assert line.count("|") == 4, f"a table row was cut: {line!r}"


def test_chunking_is_deterministic() -> None:
    first = chunk_document(make_doc(), 40, 10, count_tokens=words)
    second = chunk_document(make_doc(), 40, 10, count_tokens=words)
    assert [c.to_dict() for c in first] == [c.to_dict() for c in second]


def test_a_sentence_longer_than_the_chunk_size_is_cut_at_word_boundaries_with_exact_offsets() -> (
    None
):
    words = [f"word{i}" for i in range(5_000)]
    long_sentence = " ".join(words)  # no sentence boundary anywhere
    doc = ParsedDocument(
        doc_id="d" * 64,
        name="long.pdf",
        parser="pymupdf",
        pages=[Page(1, 612, 792, [Block("text", long_sentence, BBox(0, 0, 1, 1))])],
    )
    counter = default_token_counter()
    chunks = chunk_document(doc, chunk_size=128, chunk_overlap=16, count_tokens=counter)
    page_text = doc.pages[0].text_and_spans()[0]
    assert len(chunks) > 5_000 * 2 // 128
    for chunk in chunks:
        assert counter(chunk.text) <= 128
        start = int(chunk.start_char_idx or 0)
        assert page_text[start : start + len(chunk.text)] == chunk.text
        assert not chunk.text[0].isspace() and not chunk.text[-1].isspace()
        first, last = chunk.text.split()[0], chunk.text.split()[-1]
        assert first in words and last in words  # never cut inside a word
    covered = " ".join(c.text for c in chunks)
    assert all(word in covered for word in words[::500])
