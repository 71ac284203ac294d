from __future__ import annotations

from citerag.chunk.chunker import chunk_document
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
    assert {c.page for c in chunks} == {1, 2, 3}
    for chunk in chunks:
        page_text = doc.pages[chunk.page - 1].text
        assert page_text[chunk.start : chunk.end] == chunk.text
        for a, b in chunk.sentences:
            assert chunk.text[a:b].strip() == chunk.text[a:b] != ""


def test_chunks_respect_size_and_overlap_whole_sentences() -> None:
    doc = make_doc()
    chunks = [c for c in chunk_document(doc, 40, 10, count_tokens=words) if c.page == 1]
    assert len(chunks) > 3
    for chunk in chunks:
        assert words(chunk.text) <= 40
        assert chunk.text.rstrip().endswith((".", "Introduction"))
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert following.start < previous.end, "consecutive chunks should overlap"
        overlap = doc.pages[0].text[following.start : previous.end]
        assert 0 < words(overlap) <= 10


def test_sections_neighbours_and_ids() -> None:
    chunks = chunk_document(make_doc(), 40, 10, count_tokens=words)
    assert chunks[0].section == "1 Introduction"
    assert all(c.section == "2 Results" for c in chunks if c.page in (2, 3))
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert len({c.id for c in chunks}) == len(chunks)
    assert chunks[0].prev_id is None and chunks[-1].next_id is None
    for previous, following in zip(chunks, chunks[1:], strict=False):
        assert previous.next_id == following.id and following.prev_id == previous.id


def test_tables_split_between_rows_and_keep_their_type_and_label() -> None:
    chunks = [c for c in chunk_document(make_doc(), 40, 0, count_tokens=words) if c.page == 2]
    assert len(chunks) > 1
    for chunk in chunks:
        assert chunk.block_type == "table"
        assert chunk.label == "1"
        for line in chunk.text.splitlines():
            if line.startswith("| Row"):
                assert line.count("|") == 4, f"a table row was cut: {line!r}"


def test_chunking_is_deterministic() -> None:
    first = chunk_document(make_doc(), 40, 10, count_tokens=words)
    second = chunk_document(make_doc(), 40, 10, count_tokens=words)
    assert [c.to_dict() for c in first] == [c.to_dict() for c in second]
