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
or the environment (LLM_PROVIDER, ...). Writes benchmarks/results/answers.md.

    .venv/bin/python -m benchmarks.bench_answers [--storage DIR] [--llm] [--limit N]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import config
from benchmarks.metrics.answers import (
    TOLERANCE,
    citation_precision,
    numeric_match,
    reference_figure,
    text_match,
)
from benchmarks.records import RESULTS
from benchmarks.systems.profiles import with_finance_words
from benchmarks.systems.project import collection_for, ingest_all
from benchmarks.systems.stock_llamaindex import StockBaseline, build_stock_suite
from benchmarks.tables import publish, shared_data_missing
from citerag.answer.citations import cited_numbers
from citerag.answer.contract import Source
from citerag.answer.number_check import check_numbers
from citerag.engine import Engine
from citerag.eval.machine import describe_machine
from citerag.settings import settings_from_config

PROJECT = Path(__file__).resolve().parents[1]

EVAL = PROJECT.parent / "shared" / "eval"
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


def main() -> int:
    args = _arguments()
    if shared_data_missing([FINANCE_QA, MMLB_QA]):
        return 0
    questions = _questions()[: args.limit or None]
    pdfs = sorted({_pdf(q) for q in questions})
    with tempfile.TemporaryDirectory(prefix="citerag-answers-") as scratch:
        storage = Path(args.storage) if args.storage else Path(scratch)
        overrides: dict[str, Any] = {"storage_dir": storage}
        if not args.llm:
            overrides["llm_provider"] = ""
        engine = Engine(
            with_finance_words(settings_from_config(config).with_overrides(**overrides))
        )
        try:
            if args.llm and engine.factory.answerer is None:
                print("error: --llm needs an LLM; set LLM_PROVIDER (and its model) first.")
                return 2
            ingest_all(engine, pdfs)
            suite = build_stock_suite(pdfs, engine.embed_model)
            systems: dict[str, Callable[[Question], Answer]] = {
                PROJECT_NAME: lambda q: _project_answer(engine, q),
                **{
                    f"{b.name}, best sentence": _stock_answerer(b, engine.embed_model)
                    for b in suite.baselines
                },
            }
            scores = {name: _run(name, answer, questions) for name, answer in systems.items()}
            model = "an LLM" if args.llm else "extractive, no LLM"
            report = _render(scores, model, engine)
        finally:
            engine.close()
    publish(report, RESULTS / ("answers_llm.md" if args.llm else "answers.md"))
    return 0


def _run(name: str, answer: Callable[[Question], Answer], questions: list[Question]) -> list[Score]:
    """Every question answered and scored; one answer first, untimed, to warm the models."""
    answer(questions[0])
    scores = []
    for question in questions:
        score = _score(question, answer(question))
        scores.append(score)
        mark = "=" if score.first or score.text else ("~" if score.any else " ")
        print(f"{mark} {name[:12]:12} {question.group:9} {question.question[:70]}", flush=True)
    return scores


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--storage", help="keep the project's storage here (re-runs skip ingest)")
    parser.add_argument("--llm", action="store_true", help="answer with the configured LLM")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions")
    return parser.parse_args()


def _questions() -> list[Question]:
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


def _pdf(question: Question) -> Path:
    if question.set_name == "finance_qa":
        return EVAL / "finance" / question.document
    return EVAL / "mmlongbench_dev" / "pdfs" / question.document


def _project_answer(engine: Engine, question: Question) -> Answer:
    started = time.perf_counter()
    result = engine.query(question.question, collection_for(question.document))
    seconds = time.perf_counter() - started
    pages = {s.citation_number: s.page_number for s in result.sources}
    cited = tuple(pages[n] for n in cited_numbers(result.answer) if n in pages)
    return Answer(result.answer, cited, bool(result.metadata.unsupported_numbers), seconds)


def _stock_answerer(baseline: StockBaseline, embed_model: Any) -> Callable[[Question], Answer]:
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


def _score(question: Question, answer: Answer) -> Score:
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


def _render(scores: dict[str, list[Score]], model: str, engine: Engine) -> str:
    lines = [
        "# Answers scored: the project beside the stock best-sentence answer",
        "",
        f"Generated by `python -m benchmarks.bench_answers` in one run; project answers: {model}.",
        f"{describe_machine().rstrip('.')}.",
        "",
        "Numeric match: the answer's first number (numbers the question states left out) within",
        f"{TOLERANCE:.0%} of the reference's first figure, at any of the scales 1, 10³, 10⁶, 10⁹;",
        "*any*: some number of the answer matches. Text:",
        "normalized reference (every item of a list) inside the normalized answer. Citation",
        "precision: share of cited sources on an evidence page (answers citing nothing left out).",
        "Unsupported: share of answers with a number no cited source holds",
        "(`metadata.unsupportedNumbers`; for the stock answer the same check over its chunk).",
        "",
    ]
    for set_name, title in (
        ("finance_qa", "10-K questions (finance_qa)"),
        ("mmlongbench", "MMLongBench-Doc dev split"),
    ):
        lines += [f"## {title}", "", *_table(scores, set_name), ""]
    lines += ["## Answer time", "", "| system | p50 ms | p95 ms |", "|---|---|---|"]
    for name, rows in scores.items():
        times = sorted(s.seconds * 1000 for s in rows)
        p95 = times[min(len(times) - 1, int(0.95 * len(times)))]
        lines.append(f"| {name} | {statistics.median(times):.0f} | {p95:.0f} |")
    lines += ["", f"Settings: {json.dumps(_settings_summary(engine))}", ""]
    return "\n".join(lines)


def _table(scores: dict[str, list[Score]], set_name: str) -> list[str]:
    groups = sorted(
        {s.question.group for s in next(iter(scores.values())) if s.question.set_name == set_name}
    )
    header = "| group | system | numeric match (first / any) | text match | citation precision |"
    rows = [header + " unsupported |", "|---|---|---|---|---|---|"]
    for group in [*groups, "all"]:
        for name, every in scores.items():
            chosen = [
                s
                for s in every
                if s.question.set_name == set_name and (group == "all" or s.question.group == group)
            ]
            rows.append(f"| {group} | {name} | " + " | ".join(_cells(chosen)) + " |")
    return rows


def _cells(scores: Sequence[Score]) -> list[str]:
    numeric = [s for s in scores if s.question.numeric]
    textual = [s for s in scores if s.question.textual]
    precisions = [s.precision for s in scores if s.precision is not None]
    return [
        _share_pair(numeric, lambda s: s.first, lambda s: s.any),
        _share(textual, lambda s: s.text),
        f"{statistics.mean(precisions):.2f} ({len(precisions)})" if precisions else "–",
        _share(scores, lambda s: s.unsupported),
    ]


def _share(scores: Sequence[Score], hit: Callable[[Score], bool]) -> str:
    if not scores:
        return "–"
    return f"{sum(map(hit, scores)) / len(scores):.2f} ({sum(map(hit, scores))}/{len(scores)})"


def _share_pair(
    scores: Sequence[Score], first: Callable[[Score], bool], anywhere: Callable[[Score], bool]
) -> str:
    if not scores:
        return "–"
    count = len(scores)
    return (
        f"{sum(map(first, scores)) / count:.2f} / {sum(map(anywhere, scores)) / count:.2f} "
        f"(n={count})"
    )


def _settings_summary(engine: Engine) -> dict[str, object]:
    s = engine.settings
    return {
        "parser": s.parser,
        "reranker": s.reranker,
        "chunk_size": s.chunk_size,
        "llm_provider": s.llm_provider or "none",
    }


if __name__ == "__main__":
    sys.exit(main())
