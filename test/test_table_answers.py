"""Table answers without an LLM: the answering row or cell, stated and highlighted, or a plain
"no row answers" that cites the table, never a guess."""

from __future__ import annotations

from pathlib import Path

import pymupdf
import pytest
from llama_index.core.schema import NodeWithScore

from citerag.answer.compose import extractive_from_nodes
from citerag.answer.source_tables import tables_in
from citerag.answer.table_answers import TableSource, answer_from_tables
from citerag.nodes import HIGHLIGHTS, chunk_node
from citerag.parse.pymupdf_parser import PyMuPDFParser
from citerag.retrieve.highlights import select_highlights

PARSERS = """Table 1 compares the two parsers on the evaluation documents.

Table 1: Parser comparison on the evaluation documents

|Parser|Table fidelity|Headings found|Pages per second|
|---|---|---|---|
|PyMuPDF|0.97|41|35.0|
|MinerU flash|0.12|58|6.1|
|Plain text layer|0.00|0|2500.0|"""

# As ingest writes a 10-K statement: years in the header, "$" joined to values, label rows.
STATEMENT = """CONSOLIDATED STATEMENTS OF OPERATIONS

(in thousands, except per share data)

|Year ended December 31,|2020|2019|2018|
|---|---|---|---|
|Revenues|$ 24,996,056|$ 20,156,447|$ 15,794,341|
|Deferred revenue|1,117,992|924,745|
|Operating income|4,585,289|2,604,254|1,605,226|
|Net income|$ 2,761,395|$ 1,866,916|$ 1,211,242|
|Earnings per share:||||
|Diluted|$ 6.08|$ 4.13|$ 2.68|"""

# A header of empty cells: the years are on the lines above, the section in a label row.
SEGMENTS = """SEGMENT RESULTS OF OPERATIONS

(In millions, except percentages) 2021 2020

Percentage Change

Revenue

|||||
|---|---|---|---|
|Productivity and Business Processes|$53,915|$46,398|16%|
|Intelligent Cloud|60,080|48,366|24%|
|Total|$168,088|$143,015|18%|
|Operating Income||||
|Productivity and Business Processes|$24,351|$18,724|30%|
|Intelligent Cloud|26,126|18,324|43%|
|Total|$69,916|$52,959|32%|"""


def _answer(question: str, content: str) -> str:
    found = answer_from_tables(question, [TableSource(1, content, "", ["|table line|"])])
    assert found is not None
    return found.text


def test_a_superlative_is_computed_over_the_named_column() -> None:
    assert _answer("Which parser had the highest table fidelity in Table 1?", PARSERS) == (
        "PyMuPDF has the highest table fidelity, 0.97 [1]."
    )
    assert _answer("Which parser is the slowest, with the lowest pages per second?", PARSERS) == (
        "MinerU flash has the lowest pages per second, 6.1 [1]."
    )


def test_a_comparison_lists_the_rows_past_the_bound() -> None:
    text = _answer("Which parsers have a table fidelity of more than 0.1?", PARSERS)
    assert "PyMuPDF (0.97)" in text and "MinerU flash (0.12)" in text
    assert "Plain text layer" not in text


def test_the_named_year_chooses_the_column_and_the_unit_comes_from_the_title() -> None:
    assert _answer("What were the revenues in 2019?", STATEMENT) == (
        "Revenues (2019): $20,156,447 thousand [1]."
    )
    assert _answer("What was net income for 2018?", STATEMENT) == (
        "Net income (2018): $1,211,242 thousand [1]."
    )


def test_per_share_figures_take_no_thousands() -> None:
    assert _answer("What was diluted EPS in 2020?", STATEMENT) == "Diluted (2020): $6.08 [1]."


def test_a_row_whose_label_the_question_only_half_names_is_not_chosen() -> None:
    """ "revenue" alone does not pick "Deferred revenue"; "Revenues" is the row."""
    assert _answer("How much total revenue was reported for 2020?", STATEMENT).startswith(
        "Revenues (2020): $24,996,056"
    )


def test_years_from_the_period_line_and_the_section_row_pick_the_cell() -> None:
    assert _answer(
        "What revenue did the Productivity and Business Processes segment generate in 2021?",
        SEGMENTS,
    ) == ("Productivity and Business Processes (2021): $53,915 million [1].")
    assert _answer("What operating income did Intelligent Cloud earn in 2020?", SEGMENTS) == (
        "Intelligent Cloud (2020): 18,324 million [1]."
    )


def test_a_year_the_table_lacks_or_an_unnamed_row_says_so_and_cites_the_table() -> None:
    for question in ("What were the revenues in 2016?", "Who audits the company?"):
        found = answer_from_tables(question, [TableSource(2, STATEMENT, "", ["|Revenues|"])])
        assert found is not None and not found.confident
        assert found.text == "No row of the table answers this with confidence; see the table [2]."


def test_a_source_whose_table_was_not_highlighted_is_no_table_evidence() -> None:
    source = TableSource(1, STATEMENT, "", ["CONSOLIDATED STATEMENTS OF OPERATIONS"])
    assert answer_from_tables("What were the revenues in 2019?", [source]) is None


def test_a_table_chunk_answers_even_unhighlighted_but_says_nothing_when_it_cannot() -> None:
    prose = TableSource(1, "Netflix has offices in Los Gatos.", "", ["Netflix has offices."])
    table = TableSource(2, STATEMENT, "", ["CONSOLIDATED STATEMENTS"], has_table=True)
    found = answer_from_tables("What were the revenues in 2019?", [prose, table])
    assert found is not None and found.text == "Revenues (2019): $20,156,447 thousand [2]."
    assert answer_from_tables("Where are the offices?", [prose, table]) is None


def test_the_companys_name_a_generic_label_or_an_excluded_row_is_not_a_match() -> None:
    subsidiaries = "|Subsidiary|Owned %|\n|---|---|\n|Netflix G.K.|100|\n|Netflix Ltd.|100|"
    source = TableSource(1, subsidiaries, "", ["|Netflix G.K.|100|"], document_name="NETFLIX.pdf")
    found = answer_from_tables("What legal claims does Netflix face?", [source])
    assert found is not None and not found.confident
    debt = (
        "|June 30,|2021|2020|\n|---|---|---|\n|Current portion of long-term debt|8,072|3,749|\n"
        "|Long-term debt|50,074|59,578|\n|Total|58,146|63,327|"
    )
    question = "How much long-term debt, excluding the current portion, was there in 2021?"
    assert _answer(question, debt) == "Long-term debt (2021): 50,074 [1]."
    assert not _answer("What was the total in 2021?", debt).startswith("Total")


def test_an_abbreviation_names_the_row_its_words_spell() -> None:
    """ "EPS" is "earnings per share": the Diluted row under it, not the diluted share count."""
    shares = STATEMENT + "\n|Weighted-average shares:||||\n|Diluted|462,858|454,487|451,244|"
    assert _answer("What was diluted EPS in 2019?", shares) == "Diluted (2019): $4.13 [1]."


def test_rows_keep_exact_offsets() -> None:
    (table,) = tables_in(STATEMENT)
    for row in table.rows:
        line = STATEMENT[row.start : row.end]
        assert line.startswith("|" + row.cells[0]) and line.endswith("|")


def _node(content: str, score: float, question: str) -> NodeWithScore:
    node = chunk_node(
        node_id=f"n{score}",
        doc_id="d",
        doc_name="r.pdf",
        page=3,
        chunk_index=0,
        text=content,
        start=0,
    )
    chosen = select_highlights(question, content, [], None, None)
    node.metadata[HIGHLIGHTS] = [
        {
            "text": h.highlight.text,
            "startOffset": h.highlight.startOffset,
            "endOffset": h.highlight.endOffset,
            "score": h.score,
        }
        for h in chosen
    ]
    return NodeWithScore(node=node, score=score)


def test_the_answering_row_becomes_the_sources_highlight() -> None:
    question = "Which parser had the highest table fidelity in Table 1?"
    prose = "The engine runs fully offline on a laptop with a parser of its own."
    numbered = [(1, _node(prose, 0.4, question)), (2, _node(PARSERS, 0.9, question))]
    assert extractive_from_nodes(question, numbered) == (
        "PyMuPDF has the highest table fidelity, 0.97 [2]."
    )
    (highlight,) = numbered[1][1].node.metadata[HIGHLIGHTS]
    assert highlight["text"] == "|PyMuPDF|0.97|41|35.0|"
    start, end = highlight["startOffset"], highlight["endOffset"]
    assert PARSERS[start:end] == highlight["text"]


def test_without_a_table_the_answer_is_the_best_sentences() -> None:
    question = "Where does the engine run?"
    numbered = [(1, _node("The engine runs fully offline on a laptop.", 0.5, question))]
    assert extractive_from_nodes(question, numbered) == (
        "The engine runs fully offline on a laptop. [1]"
    )


EVAL = Path(__file__).resolve().parents[2] / "shared" / "eval" / "finance"
# (file, statement page, question, the cell's text, a cell of another year in the same row)
NETFLIX_QUESTION = "What were Netflix's revenues in 2019?"
MICROSOFT_QUESTION = "What was Microsoft's net income in fiscal year 2020?"
STATEMENT_PAGES = [
    ("NETFLIX_2020_10K.pdf", 44, NETFLIX_QUESTION, "$20,156,447", "24,996,056"),
    ("MICROSOFT_2021_10K.pdf", 57, MICROSOFT_QUESTION, "$44,281", "61,271"),
]


@pytest.mark.parametrize(("name", "page", "question", "cell", "other_year"), STATEMENT_PAGES)
def test_a_10k_statement_page_answers_a_named_years_cell(
    tmp_path: Path, name: str, page: int, question: str, cell: str, other_year: str
) -> None:
    pdf = EVAL / name
    if not pdf.is_file():
        pytest.skip(f"{pdf} is absent (the shared evaluation data, ../shared/eval)")
    single = tmp_path / f"page{page}.pdf"
    with pymupdf.open(pdf) as document:
        document.select([page - 1])
        document.save(single)
    content = PyMuPDFParser().parse(single, "d").pages[0].text
    numbered = [(1, _node(content, 1.0, question))]
    answer = extractive_from_nodes(question, numbered)
    assert cell in answer and other_year not in answer, answer
    assert answer.endswith("million [1].") or answer.endswith("thousand [1].")
    (highlight,) = numbered[0][1].node.metadata[HIGHLIGHTS]
    assert cell.lstrip("$") in highlight["text"] and other_year in highlight["text"]
