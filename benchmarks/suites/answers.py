"""Answers scored, not pages: the project's answer beside the stock best-sentence answer.

On the 50 questions over the two 10-Ks (../shared/eval/finance/finance_qa.json) and the 58 of
the MMLongBench-Doc dev split: numeric answers matched by value (benchmarks/metrics/answers.py:
the answer's first number within 1% of the reference's figure, and "any" number), short text
and list answers by normalized match, citation precision (share of cited sources on an evidence
page) and the share of answers with a number no cited source holds. The stock answer is the
best sentence (MiniLM cosine with the question, LlamaIndex's sentence tokenizer) of the best
chunk of each stock LlamaIndex baseline (benchmarks/systems/stock_llamaindex.py), citing that
chunk's page.

Offline by default (extractive answers); `--llm` answers with the LLM configured in config.py
or the environment (LLM_PROVIDER, ...), into `answers_llm.md`; `--limit N` asks the first N.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

import config
from benchmarks.datasets.library import EVAL
from benchmarks.metrics.answers import (
    citation_precision,
    numeric_match,
    reference_figure,
    text_match,
)
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import collection_for, ingest_all
from benchmarks.systems.stock_llamaindex import StockBaseline, build_stock_suite
from citerag.answer.citations import cited_numbers
from citerag.answer.contract import Source
from citerag.answer.number_check import check_numbers
from citerag.engine import Engine
from citerag.settings import settings_from_config

FINANCE_QA = EVAL / "finance" / "finance_qa.json"
MMLB_QA = EVAL / "mmlongbench_dev" / "questions.json"
PROJECT_NAME = "project"
# The stock retrievers' usual depth: their best chunk is their first of ten (with one, a fusion
# of two one-item lists is a tie that the dense list always wins).
STOCK_TOP_K = 10
_STARTS_WITH_NUMBER = re.compile(r"^(?:about|approximately|roughly|up|no\.)?\s*[$]?\d", re.I)


@dataclass(frozen=True)
class Question:
    set_name: str  # "finance_qa" or "mmlongbench"
    group: str  # finance_qa: table / prose / reasoning; MMLongBench: the answer format
    document: str
    question: str
    reference: str
    evidence_pages: tuple[int, ...]

    @property
    def numeric(self) -> bool:
        if reference_figure(self.reference) is None:
            return False
        if self.set_name == "mmlongbench":
            return self.group in ("Int", "Float")
        return self.group != "prose" or bool(_STARTS_WITH_NUMBER.match(self.reference))

    @property
    def textual(self) -> bool:
        return self.set_name == "mmlongbench" and self.group in ("Str", "List")


@dataclass(frozen=True)
class Answer:
    text: str
    cited_pages: tuple[int, ...]
    unsupported: bool
    seconds: float


@dataclass(frozen=True)
class Score:
    question: Question
    first: bool
    any: bool
    text: bool
    precision: float | None
    unsupported: bool
    seconds: float


def run_system(
    name: str, answer: Callable[[Question], Answer], questions: list[Question]
) -> list[Score]:
    """Every question answered and scored; one answer first, untimed, to warm the models."""
    answer(questions[0])
    scores = []
    for question in questions:
        scored = score(question, answer(question))
        scores.append(scored)
        mark = "=" if scored.first or scored.text else ("~" if scored.any else " ")
        print(f"{mark} {name[:12]:12} {question.group:9} {question.question[:70]}", flush=True)
    return scores


def questions() -> list[Question]:
    finance = json.loads(FINANCE_QA.read_text(encoding="utf-8"))
    mmlb = json.loads(MMLB_QA.read_text(encoding="utf-8"))
    return [
        Question(
            "finance_qa",
            q["type"],
            q["document"],
            q["question"],
            str(q["answer"]),
            tuple(q["evidence_pages"]),
        )
        for q in finance
    ] + [
        Question(
            "mmlongbench",
            q["answer_format"],
            q["document"],
            q["question"],
            str(q["answer"]).strip(),
            tuple(q["evidence_pages"]),
        )
        for q in mmlb
    ]


def pdf_of(question: Question) -> Path:
    if question.set_name == "finance_qa":
        return EVAL / "finance" / question.document
    return EVAL / "mmlongbench_dev" / "pdfs" / question.document


def project_answer(engine: Engine, question: Question) -> Answer:
    started = time.perf_counter()
    result = engine.query(question.question, collection_for(question.document))
    seconds = time.perf_counter() - started
    pages = {s.citation_number: s.page_number for s in result.sources}
    cited = tuple(pages[n] for n in cited_numbers(result.answer) if n in pages)
    return Answer(result.answer, cited, bool(result.metadata.unsupported_numbers), seconds)


def stock_answerer(baseline: StockBaseline, embed_model: Any) -> Callable[[Question], Answer]:
    from llama_index.core.node_parser.text.utils import split_by_sentence_tokenizer

    split = split_by_sentence_tokenizer()

    def answer(question: Question) -> Answer:
        started = time.perf_counter()
        hits = baseline.retrieve(question.question, question.document, STOCK_TOP_K)
        if not hits:
            return Answer("", (), False, time.perf_counter() - started)
        sentences = [s.strip() for s in split(hits[0].text) if s.strip()] or [hits[0].text]
        vectors = np.asarray(embed_model.get_text_embedding_batch(sentences))
        query = np.asarray(embed_model.get_query_embedding(question.question))
        cosines = vectors @ query / (np.linalg.norm(vectors, axis=1) * np.linalg.norm(query) + 1e-9)
        text = f"{sentences[int(np.argmax(cosines))]} [1]"
        seconds = time.perf_counter() - started
        source = Source("stock", question.document, hits[0].page, "", hits[0].text, 1.0, 1)
        unsupported = bool(check_numbers(question.question, text, [source]).unsupported)
        return Answer(text, (hits[0].page,), unsupported, seconds)

    return answer


def score(question: Question, answer: Answer) -> Score:
    first, anywhere = (
        numeric_match(question.question, answer.text, question.reference)
        if question.numeric
        else (False, False)
    )
    return Score(
        question=question,
        first=first,
        any=anywhere,
        text=question.textual and text_match(answer.text, question.reference),
        precision=citation_precision(answer.cited_pages, question.evidence_pages),
        unsupported=answer.unsupported,
        seconds=answer.seconds,
    )


def settings_summary(engine: Engine) -> dict[str, object]:
    s = engine.settings
    return {
        "parser": s.parse.parser,
        "reranker": s.retrieval.reranker,
        "chunk_size": s.ingest.chunk_size,
        "llm_provider": s.llm.llm_provider or "none",
    }


def score_row(score: Score) -> dict[str, Any]:
    """One scored answer as the record keeps it: the question's set and group, what matched."""
    row = asdict(score)
    question = row.pop("question")
    return {
        "set": question["set_name"],
        "group": question["group"],
        "numeric": score.question.numeric,
        "textual": score.question.textual,
        **row,
    }


def run(options: SuiteOptions) -> Record:
    asked = questions()[: options.limit or None]
    pdfs = sorted({pdf_of(q) for q in asked})
    overrides: dict[str, Any] = {"storage_dir": options.storage_for("answers")}
    if not options.llm:
        overrides["llm_provider"] = ""
    engine = Engine(with_finance_words(settings_from_config(config).with_overrides(**overrides)))
    try:
        if options.llm and engine.factory.answerer is None:
            raise SystemExit("--llm needs an LLM; set LLM_PROVIDER (and its model) first.")
        ingest_all(engine, pdfs)
        stock = build_stock_suite(pdfs, engine.embed_model)
        systems: dict[str, Callable[[Question], Answer]] = {
            PROJECT_NAME: lambda q: project_answer(engine, q),
            **{
                f"{b.name}, best sentence": stock_answerer(b, engine.embed_model)
                for b in stock.baselines
            },
        }
        scores = {name: run_system(name, answer, asked) for name, answer in systems.items()}
        summary = settings_summary(engine)
    finally:
        engine.close()
    return Record(
        suite="answers",
        command=options.command,
        variant="_".join(p for p in ("llm" if options.llm else "", options.variant) if p),
        settings=dict(options.settings),
        systems={name: "" for name in systems} | {"project answers": str(summary["llm_provider"])},
        datasets={"finance_qa": FINANCE_QA.name, "mmlongbench": MMLB_QA.name},
        metrics={
            "scores": {name: [score_row(s) for s in rows] for name, rows in scores.items()},
            "model": "an LLM" if options.llm else "extractive, no LLM",
            "settings": summary,
        },
    )
