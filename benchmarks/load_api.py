"""Load on the HTTP API: concurrent clients asking for whole and streamed answers.

    .venv/bin/python benchmarks/load_api.py                  # starts its own server, 20 x 60 s
    .venv/bin/python benchmarks/load_api.py --url http://127.0.0.1:8000 --collection pg

Without --url it starts `python main.py serve` on a free 127.0.0.1 port with a fresh storage
folder, uploads the PDF through the API and waits for its ingest. Each client alternates
`POST /api/rag/query` and a streamed `POST /v1/chat/completions` over the article's questions
until the time is up or the request budget is spent (both bounded). A request counts as an
error unless it is a 200 whose answer has sources (a stream: whose last chunk carries them,
followed by `[DONE]`). Results go to benchmarks/results/api_load.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import httpx

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(PROJECT_DIR), str(PROJECT_DIR / "test")]

from citerag.eval.machine import describe_machine  # noqa: E402

RESULTS = PROJECT_DIR / "benchmarks" / "results" / "api_load.md"
DEFAULT_PDF = PROJECT_DIR.parent / "shared" / "eval" / "paul_graham" / "paul_graham_essay.pdf"
FALLBACK_QUESTIONS = [
    "What did the author work on before college?",
    "What was Viaweb and what happened to it?",
    "Why did the author start Y Combinator?",
    "What did the author learn from painting?",
]


@dataclass
class Sample:
    kind: str  # "query" or "stream"
    ok: bool
    seconds: float
    first_delta: float | None = None  # streams: seconds to the first content piece
    error: str = ""


async def ask_query(client: httpx.AsyncClient, collection: str, question: str) -> Sample:
    started = time.perf_counter()
    response = await client.post(
        "/api/rag/query", json={"query": question, "collection": collection}
    )
    seconds = time.perf_counter() - started
    ok = response.status_code == 200 and bool(response.json().get("sources"))
    return Sample("query", ok, seconds, error="" if ok else response.text[:200])


async def ask_stream(client: httpx.AsyncClient, collection: str, question: str) -> Sample:
    body = {
        "model": collection,
        "stream": True,
        "messages": [{"role": "user", "content": question}],
    }
    started = time.perf_counter()
    first: float | None = None
    sources, done = False, False
    async with client.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            await response.aread()
            return Sample("stream", False, time.perf_counter() - started, error=response.text[:200])
        async for line in response.aiter_lines():
            if not line.startswith("data: "):
                continue
            if line == "data: [DONE]":
                done = True
                break
            chunk = json.loads(line[6:])
            if first is None and chunk["choices"][0]["delta"].get("content"):
                first = time.perf_counter() - started
            sources = sources or bool(chunk.get("sources"))
    ok = done and sources and first is not None
    return Sample("stream", ok, time.perf_counter() - started, first, "" if ok else "incomplete")


async def client_loop(
    client: httpx.AsyncClient,
    number: int,
    collection: str,
    questions: list[str],
    deadline: float,
    budget: list[int],
    samples: list[Sample],
) -> None:
    turn = number
    while time.perf_counter() < deadline and budget[0] > 0:
        budget[0] -= 1
        question = questions[turn % len(questions)]
        ask = ask_query if turn % 2 == 0 else ask_stream
        started = time.perf_counter()
        try:
            samples.append(await ask(client, collection, question))
        except (httpx.HTTPError, json.JSONDecodeError, KeyError) as error:
            kind = "query" if ask is ask_query else "stream"
            samples.append(Sample(kind, False, time.perf_counter() - started, error=repr(error)))
        turn += 1


async def run_load(
    url: str, collection: str, questions: list[str], clients: int, seconds: float, budget: int
) -> tuple[list[Sample], float]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    samples: list[Sample] = []
    remaining = [budget]
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(
                client_loop(client, n, collection, questions, deadline, remaining, samples)
                for n in range(clients)
            )
        )
        return samples, time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def table_row(name: str, values: list[float], errors: int) -> str:
    ms = [v * 1000 for v in values]
    if not ms:
        return f"| {name} | 0 | {errors} | | | | |"
    return (
        f"| {name} | {len(ms)} | {errors} | {percentile(ms, 0.5):.0f} | {percentile(ms, 0.95):.0f}"
        f" | {max(ms):.0f} | {statistics.fmean(ms):.0f} |"
    )


def report(samples: list[Sample], elapsed: float, args: argparse.Namespace, document: str) -> str:
    queries = [s for s in samples if s.kind == "query"]
    streams = [s for s in samples if s.kind == "stream"]
    errors = [s for s in samples if not s.ok]
    first = [s.first_delta for s in streams if s.ok and s.first_delta is not None]
    lines = [
        "# Benchmark: HTTP API under load",
        "",
        f"Measured {date.today().isoformat()} by `benchmarks/load_api.py`, one run: "
        f"{args.clients} concurrent clients for {args.seconds:.0f} s against `python main.py "
        f"serve` on 127.0.0.1 (one process, one engine, embedded stack, extractive answers, "
        f"no LLM), collection `{args.collection}` ({document}). Each client alternates "
        "`POST /api/rag/query` and a streamed `POST /v1/chat/completions` over the article's "
        "questions; a request counts as an error unless it is a 200 with sources (a stream: "
        "sources in its last chunk, then `[DONE]`).",
        "",
        describe_machine(),
        "",
        f"**{len(samples)} requests in {elapsed:.1f} s ({len(samples) / elapsed:.1f} requests/s),"
        f" {len(errors)} errors.** The load generator ran on the same 2 cores as the server.",
        "",
        "| request | n | errors | p50 ms | p95 ms | max ms | mean ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
        table_row(
            "query (`/api/rag/query`)",
            [s.seconds for s in queries if s.ok],
            sum(not s.ok for s in queries),
        ),
        table_row(
            "stream, whole (`/v1/chat/completions`)",
            [s.seconds for s in streams if s.ok],
            sum(not s.ok for s in streams),
        ),
        table_row("stream, first content piece", first, 0),
        table_row("all", [s.seconds for s in samples if s.ok], len(errors)),
        "",
        f"With {args.clients} clients and 2 cores, {len(samples) / elapsed:.1f} requests/s means"
        f" about {2000 * elapsed / max(len(samples), 1):.0f} ms of machine time per request"
        " (server and load generator together); the rest of each latency is queueing. The"
        " engine answers at most 4 questions at once on worker threads. A stream's first piece"
        " comes after retrieval, because citations are numbered against the final sources"
        " before the first delta is sent.",
    ]
    if errors:
        lines += ["", "First errors:", ""] + [f"- {s.kind}: {s.error}" for s in errors[:5]]
    return "\n".join(lines) + "\n"


def questions_for(collection: str) -> list[str]:
    try:
        import queries

        article = {"pg": "paul_graham_essay", "demo": "demo"}.get(collection, collection)
        found = list(queries.QUERIES_BY_ARTICLE.get(article, []))
    except ImportError:
        found = []
    return found or FALLBACK_QUESTIONS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", help="a running server; default: start one")
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF, help="uploaded when starting")
    parser.add_argument("--collection", default="pg")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--max-requests", type=int, default=20_000)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    questions = questions_for(args.collection)
    if args.url:
        samples, elapsed = asyncio.run(
            run_load(
                args.url, args.collection, questions, args.clients, args.seconds, args.max_requests
            )
        )
    else:
        samples, elapsed = with_own_server(args, questions)
    text = report(samples, elapsed, args, args.pdf.name if not args.url else "as stored")
    args.out.write_text(text)
    print(text)
    return 0 if all(s.ok for s in samples) else 1


def with_own_server(args: argparse.Namespace, questions: list[str]) -> tuple[list[Sample], float]:
    from serve_helpers import running_server, upload_and_wait

    pdf = args.pdf if args.pdf.exists() else PROJECT_DIR / "demo" / "citerag_demo.pdf"
    args.pdf = pdf
    with tempfile.TemporaryDirectory() as folder, running_server(Path(folder) / "storage") as url:
        job = upload_and_wait(url, pdf, args.collection)
        if job["status"] != "done":
            raise SystemExit(f"ingesting {pdf.name} failed: {job['message']}")
        httpx.post(
            f"{url}/api/rag/query",
            json={"query": questions[0], "collection": args.collection},
            timeout=120,
        )
        return asyncio.run(
            run_load(url, args.collection, questions, args.clients, args.seconds, args.max_requests)
        )


if __name__ == "__main__":
    sys.exit(main())
