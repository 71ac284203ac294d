"""The offline planner and what a question's own text names (pages, labels, years, entities)."""

from __future__ import annotations

import pytest

from citerag.plan.offline import plan_offline, route
from citerag.plan.question_filters import filters_for, metadata_filters
from citerag.plan.references import LabelRef, label_refs, page_spans
from citerag.plan.subjects import with_subjects
from citerag.store.base import PageRange
from citerag.text.dates import years
from citerag.text.mentions import EntityMatcher


def planned(question: str) -> list[tuple[str, str]]:
    return [(p.question, p.tool) for p in plan_offline(question)]


def test_the_seed_example_becomes_three_year_questions() -> None:
    assert planned("What did the author do in 1980, in 1996 and in 2019?") == [
        ("What did the author do in 1980?", "facts"),
        ("What did the author do in 1996?", "facts"),
        ("What did the author do in 2019?", "facts"),
    ]
    assert len(plan_offline("What did Paul Graham do in 1980, 1996 and 2019?")) == 3


def test_labels_sharing_a_noun_split_and_go_to_pages() -> None:
    assert planned("What do Figure 4.1 and 4.3 show?") == [
        ("What do Figure 4.1 show?", "pages"),
        ("What do Figure 4.3 show?", "pages"),
    ]


def test_a_clause_with_a_pronoun_gets_the_first_clause_label() -> None:
    assert planned("Describe Figure 1 and compare it with Table 2") == [
        ("Describe Figure 1", "pages"),
        ("Compare Figure 1 with Table 2", "pages"),
    ]


@pytest.mark.parametrize(
    "question",
    [
        "What portion of Netflix's revenue came in non-USD currencies, and by how much did "
        "Microsoft's operating income grow?",
        "How much higher was the dividend in 2002 than in 2001, and approximately how many "
        "members did Netflix have?",
        "For the year ended March 31, 2003, what were the shareholders' funds, and in which "
        "cities are Netflix's offices?",
        "What is the revenue of Netflix, and does Microsoft pay a dividend?",
    ],
)
def test_and_then_another_question_is_two(question: str) -> None:
    assert len(plan_offline(question)) == 2


def test_a_follow_up_naming_the_document_is_another_question() -> None:
    assert len(plan_offline("What is the title of this paper? How many figures does it have?")) == 1
    assert len(plan_offline("What is Table 2 about? What dataset is this paper built on?")) == 2


def test_pronouns_get_the_subject_of_the_sub_question_before() -> None:
    assert (
        with_subjects(
            [
                "Discuss the role of Hacker News (HN) in the context of Y Combinator (YC).",
                "What was its significance in the overall work of YC?",
            ]
        )[1]
        == "What was Hacker News's significance in the overall work of YC?"
    )
    assert with_subjects(["Describe Figure 1", "What does it show?"])[1] == (
        "What does Figure 1 show?"
    )
    assert with_subjects(["What did Netflix earn in 2020?", "How much did they spend?"])[1] == (
        "How much did Netflix spend?"
    )


@pytest.mark.parametrize(
    "second",
    [
        "How did Microsoft change its server lives?",  # its own name comes first
        "What is the revenue?",  # nothing points back
        "Why did he leave?",  # a person pronoun: the name before may be a company
    ],
)
def test_a_sub_question_with_its_own_subject_is_kept(second: str) -> None:
    assert with_subjects(["What did Netflix earn in 2020?", second])[1] == second


def test_separate_questions_and_also_split() -> None:
    assert planned("What is the revenue? Also, who is the CEO?") == [
        ("What is the revenue?", "facts"),
        ("Who is the CEO?", "facts"),
    ]
    assert len(plan_offline("Why did he start YC. Also, what happened to Viaweb?")) == 2


@pytest.mark.parametrize(
    "question",
    [
        "About how many people did Microsoft employ full time in mid-2021? How were they split "
        "between the US and other countries?",
        "How did Microsoft change the depreciable lives of its servers? What did that do to "
        "operating income?",
        "How much did Netflix's operating margin expand between 2019 and 2020?",
        "What was the author's role at Interleaf? How did his work habits differ from a "
        "programming job?",
        "What share of seniors own a tablet? Please write the answer as a percentage?",
        "What is the date of the document? Format your answer as YYYY-MM-DD?",
        "Does Netflix pay its shareholders a cash dividend, and does it expect to start?",
        "What was Viaweb and what happened to it?",
        "In the essay, the author mentions his early experiences with programming. Describe the "
        "first computer he used, the language he used, and the challenges he faced.",
        "Compare Figure 1 and Table 1.",
        "What did the author work on before college?",
    ],
)
def test_a_plain_question_stays_one_sub_question(question: str) -> None:
    assert len(plan_offline(question)) == 1


@pytest.mark.parametrize(
    ("question", "tool"),
    [
        ("What does Figure 1 show?", "pages"),
        ("What does equation (1) say?", "pages"),
        ("What do pages 30-32 say about liquidity?", "pages"),
        ("What does Item 7 say about liquidity?", "pages"),
        ("Summarize the essay.", "summary"),
        ("Give me an overview of the main points", "summary"),
        ("Which sections discuss risk?", "sections"),
        ("What did the author do at Viaweb?", "facts"),
    ],
)
def test_routes_by_pattern(question: str, tool: str) -> None:
    assert route(question) == tool


def test_page_spans_and_labels_are_normalized() -> None:
    assert page_spans("see pages 3-5 and 9, or pp. 10–12") == [
        PageRange(3, 5),
        PageRange(9, 9),
        PageRange(10, 12),
    ]
    assert label_refs("fig. 2, Eq. (3), Table 1, Section 2.1 and Item 7A") == [
        LabelRef("figure", "2"),
        LabelRef("equation", "3"),
        LabelRef("table", "1"),
        LabelRef("section", "2.1"),
        LabelRef("item", "7a"),
    ]
    assert label_refs("What does equation (1) say?") == [LabelRef("equation", "1")]
    assert label_refs("What happened in (1996)?") == []


def test_years_and_decades() -> None:
    assert years("in 1980, in 1996 and in $2019 million") == ["1980", "1996"]
    assert years("the 1990s") == ["1990s"]
    assert "1996" in years("in the 1990s", expand_decades=True)


def test_filters_come_from_the_sub_question_text() -> None:
    known = ["Viaweb", "Robert Morris", "Robert", "YC", "Lisp"]
    found = filters_for(
        "What did Robert Morris do at Viaweb in 1996?", EntityMatcher(known).mentions
    )
    assert found.years == ["1996"]
    assert found.entities == ["Robert Morris", "Viaweb"]  # "Robert" is inside a longer match
    assert filters_for("What is lisping?", EntityMatcher(known).mentions).entities == []
    assert filters_for("Describe Figure 3 on page 4").to_dict() == {
        "labels": ["figure:3"],
        "pages": [[4, 4]],
    }
    metadata = metadata_filters(found)
    assert metadata is not None
    assert [(f.key, f.value) for f in metadata.filters] == [  # type: ignore[union-attr]
        ("years", ["1996"]),
        ("entities", ["Robert Morris", "Viaweb"]),
    ]
