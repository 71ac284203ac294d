"""Sub-questions end to end on real PDFs: routing to `pages` on the demo and a 10-K, the seed's
year question on the essay, one citation numbering, and `list --json` showing enrichment."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pymupdf
import pytest
from helpers import DEMO_PDF, shared_eval_file

from citerag.answer.contract import AnswerResult
from citerag.engine import Engine
from citerag.settings import Settings

pytestmark = pytest.mark.slow
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    storage = tmp_path_factory.mktemp("storage")
    engine = Engine(Settings(storage_dir=storage, metadata="entity", reranker="none"))
    engine.ingest(DEMO_PDF, "demo")
    yield engine
    engine.close()


def only_part(result: AnswerResult) -> dict:
    parts = result.metadata.sub_questions
    assert len(parts) == 1, parts
    return parts[0]


def test_figure_question_routes_to_pages_and_cites_the_figure_page(engine: Engine) -> None:
    result = engine.query("What does Figure 1 show?", "demo")
    part = only_part(result)
    assert part["tool"] == "pages" and part["filters"]["labels"] == ["figure:1"]
    assert result.sources[0].page_number == 2
    assert "Figure 1" in result.sources[0].content
    assert "[1]" in result.answer


def test_equation_question_routes_to_pages_and_cites_the_equation_page(engine: Engine) -> None:
    result = engine.query("What does equation (1) say?", "demo")
    part = only_part(result)
    assert part["tool"] == "pages" and part["filters"]["labels"] == ["equation:1"]
    assert result.sources[0].page_number == 2
    assert "score(d)" in result.sources[0].content


def test_a_compound_label_question_has_one_numbering(engine: Engine) -> None:
    result = engine.query("Describe Figure 1 and compare it with Table 1", "demo")
    parts = result.metadata.sub_questions
    assert [p["tool"] for p in parts] == ["pages", "pages"]
    numbers = [s.citation_number for s in result.sources]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(numbers) <= 10  # the default budget holds for the whole answer
    assert {1, 2} <= {s.page_number for s in result.sources}
    cited = {int(n) for n in CITATION.findall(result.answer)}
    assert cited <= set(numbers)
    assert all(set(p["citations"]) <= set(numbers) for p in parts)


def test_summary_cites_every_page_of_the_demo(engine: Engine) -> None:
    result = engine.query("Summarize the document.", "demo")
    assert only_part(result)["tool"] == "summary"
    assert {s.page_number for s in result.sources} == {1, 2, 3}


def test_the_seed_year_question_cites_pages_that_mention_each_year(engine: Engine) -> None:
    pdf = shared_eval_file("paul_graham", "paul_graham_essay.pdf")
    engine.ingest(pdf, "pg")
    result = engine.query("What did the author do in 1980, in 1996 and in 2019?", "pg")
    parts = result.metadata.sub_questions
    assert [p["filters"]["years"] for p in parts] == [["1980"], ["1996"], ["2019"]]
    by_number = {s.citation_number: s for s in result.sources}
    blocks = result.answer.split("\n\n")
    assert len(blocks) == 3
    with pymupdf.open(pdf) as document:
        for year, part, block in zip(("1980", "1996", "2019"), parts, blocks, strict=True):
            assert part["citations"], part
            cited = {int(n) for n in CITATION.findall(block)}
            assert cited and cited <= set(part["citations"])
            for number in cited:
                page = by_number[number].page_number
                assert year in document[page - 1].get_text(), (year, page)


def test_a_page_range_question_on_a_10k_routes_to_pages(engine: Engine) -> None:
    engine.ingest(shared_eval_file("finance", "NETFLIX_2020_10K.pdf"), "fin")
    result = engine.query(
        "According to pages 30-31, how much cash did operations provide in 2020?", "fin"
    )
    part = only_part(result)
    assert part["tool"] == "pages" and part["filters"]["pages"] == [[30, 31]]
    # the pages asked for first; the rest of the budget from the rest of the filing
    inside = [30 <= s.page_number <= 31 for s in result.sources]
    assert inside and inside == sorted(inside, reverse=True)
    assert result.sources[0].page_number == 30  # the cash flow discussion and its table
    assert "2,427,077" in " ".join(s.content for s in result.sources if s.page_number == 30)


def test_list_json_shows_what_each_document_carries(engine: Engine) -> None:
    listed = [d.to_dict() for d in engine.list_documents(["demo"])]
    carried = listed[0]["metadata"]
    assert carried["enrichedBy"] == "labels+rules"
    assert {"figure:1", "table:1", "equation:1"} <= set(carried["fields"]["labels"]["top"])
    assert carried["fields"]["entities"]["chunks"] >= 1


def test_with_an_llm_the_plan_and_the_answer_come_from_it(engine: Engine) -> None:
    from fake_openai_server import ScriptedReply, running_server

    from citerag.answer.llm_answer import LLMAnswerer
    from citerag.llm.connection import build_llm

    plan = {
        "items": [
            {"sub_question": "What does Figure 1 show?", "tool_name": "page_filter_tool"},
            {"sub_question": "How is the fused score computed?", "tool_name": "keyphrase_tool"},
        ]
    }
    answer = "The pipeline fuses two rankers <doc=citerag_demo.pdf;page=2> [9]."
    replies = [ScriptedReply(json.dumps(plan)), ScriptedReply(answer, 100, 20)]
    factory = engine.factory
    saved = factory.answerer
    with running_server(replies) as server:
        settings = Settings(llm_provider="openai_like", llm_model="m", llm_base_url=server.base_url)
        llm = build_llm(settings.llm)
        assert llm is not None
        factory.answerer = LLMAnswerer(llm)
        try:
            result = engine.query("What does Figure 1 show, and how is the score fused?", "demo")
        finally:
            factory.answerer = saved
    parts = result.metadata.sub_questions
    assert [(p["tool"], p["planner"]) for p in parts] == [("pages", "llm"), ("facts", "llm")]
    page2 = next(s.citation_number for s in result.sources if s.page_number == 2)
    assert result.answer == f"The pipeline fuses two rankers [{page2}]."  # [9] does not exist
    assert result.metadata.tokens_used == 120
    prompt = server.requests[1]["messages"][-1]["content"]
    assert "Answer each part in turn" in prompt and "How is the fused score computed?" in prompt
    assert "enriched_by" not in prompt and "labels+rules" not in prompt and "x0" not in prompt


def test_summary_stays_within_the_callers_page_range(engine: Engine) -> None:
    from citerag.retrieve.filters import page_filters

    result = engine.query("Summarize the document.", "demo", filters=page_filters(2, 3))
    assert result.sources and {s.page_number for s in result.sources} <= {2, 3}
