"""The extractive answer over numbered, highlighted nodes: a table's answering row or cell when
a table is the best evidence, else (and beside a table that answers nothing) the best
highlighted sentences. `CitedQueryEngine` and the sub-question synthesis both answer this way.
"""

from __future__ import annotations

from collections.abc import Sequence

from llama_index.core.schema import NodeWithScore

from citerag.answer.extractive import NO_ANSWER, ExtractiveCandidate, extractive_answer
from citerag.answer.source_tables import Row
from citerag.answer.table_answers import TableAnswer, TableSource, answer_from_tables
from citerag.nodes import (
    HIGHLIGHTS,
    NodeHighlight,
    block_type_of,
    doc_name_of,
    page_of,
    table_context_of,
)

Numbered = Sequence[tuple[int, NodeWithScore]]  # (citation number, node), as cited


def extractive_from_nodes(question: str, numbered: Numbered) -> str:
    """The offline answer; a table's answering rows become their sources' highlights."""
    by_rank = sorted(numbered, key=lambda item: -(item[1].score or 0.0))
    table = answer_from_tables(question, [_table_source(n, scored) for n, scored in by_rank])
    if table is not None and table.confident:
        _highlight_rows(table, numbered)
        return table.text
    candidates = _candidates(numbered, skip_table_lines=table is not None)
    sentences = extractive_answer(candidates) if candidates else NO_ANSWER
    if table is None:
        return sentences
    return table.text if sentences == NO_ANSWER else f"{table.text} {sentences}"


def _table_source(number: int, scored: NodeWithScore) -> TableSource:
    highlights = sorted(
        scored.node.metadata.get(HIGHLIGHTS, []), key=lambda h: -float(h.get("score", 0.0))
    )
    return TableSource(
        citation_number=number,
        content=scored.node.get_content(),
        table_context=table_context_of(scored.node),
        highlights=[str(h["text"]) for h in highlights],
        has_table=block_type_of(scored.node) == "table",
        document_name=doc_name_of(scored.node),
    )


def _highlight_rows(answer: TableAnswer, numbered: Numbered) -> None:
    """The answering rows replace the highlights of the source they are in."""
    nodes = dict(numbered)
    for number, rows in answer.rows.items():
        node = nodes[number].node
        scores = [float(h.get("score", 0.0)) for h in node.metadata.get(HIGHLIGHTS, [])]
        best = max(scores, default=1.0)
        node.metadata[HIGHLIGHTS] = [_row_highlight(node.get_content(), row, best) for row in rows]


def _row_highlight(content: str, row: Row, score: float) -> NodeHighlight:
    return {
        "text": content[row.start : row.end],
        "startOffset": row.start,
        "endOffset": row.end,
        "score": score,
    }


def _candidates(numbered: Numbered, skip_table_lines: bool) -> list[ExtractiveCandidate]:
    return [
        ExtractiveCandidate(
            number,
            page_of(scored.node),
            int(h["startOffset"]),
            str(h["text"]),
            float(h.get("score", 0.0)),
        )
        for number, scored in numbered
        for h in scored.node.metadata.get(HIGHLIGHTS, [])
        if not (skip_table_lines and str(h["text"]).lstrip().startswith("|"))
    ]
