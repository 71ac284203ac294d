"""Load on the HTTP API: concurrent clients asking, streaming, uploading and rendering pages.

    PYTHONPATH=test python -m benchmarks.load_api     # starts its own server, 20 x 60 s
    PYTHONPATH=test python -m benchmarks.load_api --url http://127.0.0.1:8000 --collection pg

(PYTHONPATH=test: without --url it uses the test suite's server helpers.)

Without --url it starts `python main.py serve` on a free 127.0.0.1 port with a fresh storage
folder, uploads the PDF through the API and waits for its ingest. Each client runs a fixed mix
of ten turns: four `POST /api/rag/query`, four streamed `POST /v1/chat/completions`, one page
render (`GET .../pages/{n}/image`, the page and zoom varying past the image cache) and one
upload of a small PDF of its own (ingested in the background into another collection; at most
`--uploads` in all, a query otherwise), until the time is up or the request budget is spent
(both bounded). A request counts as an error unless it is a 200 whose answer has sources (a
stream: whose last chunk carries them, followed by `[DONE]`), a 200 PNG, or a 202 whose job
then finishes `done` (waited for, bounded, after the load stops). Results go to
benchmarks/results/api_load.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import httpx

from benchmarks.records import RESULTS
from citerag.eval.machine import describe_machine

PROJECT_DIR = Path(__file__).resolve().parents[1]

OUT = RESULTS / "api_load.md"
DEFAULT_PDF = PROJECT_DIR.parent / "shared" / "eval" / "paul_graham" / "paul_graham_essay.pdf"
FALLBACK_QUESTIONS = [
    "What did the author work on before college?",
    "What was Viaweb and what happened to it?",
    "Why did the author start Y Combinator?",
    "What did the author learn from painting?",
]


UPLOAD_COLLECTION = "loadup"
TURNS = ("query", "stream", "query", "stream", "page", "query", "stream", "query", "stream")
UPLOAD_TURN = 9  # the tenth turn of each client's cycle uploads (while the budget lasts)
JOB_WAIT_SECONDS = 600


@dataclass
class Sample:
    kind: str  # "query", "stream", "page" or "upload"
    ok: bool
    seconds: float
    first_delta: float | None = None  # streams: seconds to the first content piece
    error: str = ""
    job: str = ""  # uploads: the job id, checked once the load stops


@dataclass
class Target:
    """What the clients ask: a collection, its questions, and one stored PDF's pages."""

    collection: str
    questions: list[str]
    document: str
    pages: int


@dataclass
class Budget:
    requests: int
    uploads: int
    uploaded: list[str] = field(default_factory=list)


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


async def render_page(client: httpx.AsyncClient, target: Target, turn: int) -> Sample:
    page = 1 + turn % max(target.pages, 1)
    zoom = 0.8 + (turn % 13) / 20  # past the server's image cache most of the time
    url = f"/api/collections/{target.collection}/documents/{target.document}/pages/{page}/image"
    started = time.perf_counter()
    response = await client.get(url, params={"zoom": f"{zoom:.2f}"})
    seconds = time.perf_counter() - started
    ok = response.status_code == 200 and response.content.startswith(b"\x89PNG")
    return Sample("page", ok, seconds, error="" if ok else response.text[:200])


def small_pdf(number: int) -> bytes:
    """Two pages of its own sentences, so each upload is ingested, not skipped as seen."""
    import pymupdf

    with pymupdf.open() as doc:
        for page in range(2):
            doc.new_page().insert_text(
                (72, 72),
                f"Load upload {number}, page {page + 1}: revenue rose {number % 17} percent.\n"
                f"The memo {number} names segment {number % 5} and quarter {page + 1}.",
            )
        data: bytes = doc.tobytes()
    return data


async def upload_pdf(client: httpx.AsyncClient, number: int) -> Sample:
    files = {"file": (f"upload-{number}.pdf", small_pdf(number), "application/pdf")}
    started = time.perf_counter()
    response = await client.post(f"/api/collections/{UPLOAD_COLLECTION}/documents", files=files)
    seconds = time.perf_counter() - started
    ok = response.status_code == 202
    job = response.json().get("id", "") if ok else ""
    return Sample("upload", ok, seconds, error="" if ok else response.text[:200], job=job)


async def one_turn(client: httpx.AsyncClient, target: Target, turn: int, budget: Budget) -> Sample:
    question = target.questions[turn % len(target.questions)]
    if turn % 10 == UPLOAD_TURN and budget.uploads > 0:
        budget.uploads -= 1
        return await upload_pdf(client, budget.uploads)
    kind = TURNS[turn % 10] if turn % 10 < len(TURNS) else "query"
    if kind == "page":
        return await render_page(client, target, turn)
    ask = ask_query if kind == "query" else ask_stream
    return await ask(client, target.collection, question)


async def client_loop(
    client: httpx.AsyncClient,
    number: int,
    target: Target,
    deadline: float,
    budget: Budget,
    samples: list[Sample],
) -> None:
    turn = number
    while time.perf_counter() < deadline and budget.requests > 0:
        budget.requests -= 1
        started = time.perf_counter()
        try:
            samples.append(await one_turn(client, target, turn, budget))
        except (httpx.HTTPError, json.JSONDecodeError, KeyError) as error:
            samples.append(Sample("error", False, time.perf_counter() - started, error=repr(error)))
        turn += 1


async def finish_jobs(client: httpx.AsyncClient, samples: list[Sample]) -> float:
    """Wait (bounded) for every upload job; a job not `done` makes its sample an error.
    Seconds from the end of the load until the last job finished."""
    started = time.perf_counter()
    pending = {s.job: s for s in samples if s.kind == "upload" and s.ok}
    while pending and time.perf_counter() - started < JOB_WAIT_SECONDS:
        for job_id, sample in list(pending.items()):
            job = (await client.get(f"/api/uploads/{job_id}")).json()
            if job.get("status") in {"done", "failed"}:
                del pending[job_id]
                if job["status"] != "done":
                    sample.ok, sample.error = False, f"job failed: {job.get('message')}"
        await asyncio.sleep(0.5)
    for sample in pending.values():
        sample.ok, sample.error = False, f"job not finished in {JOB_WAIT_SECONDS} s"
    return time.perf_counter() - started


async def run_load(
    url: str, target: Target, clients: int, seconds: float, budget: Budget
) -> tuple[list[Sample], float, float]:
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    samples: list[Sample] = []
    async with httpx.AsyncClient(base_url=url, timeout=120, limits=limits) as client:
        started = time.perf_counter()
        deadline = started + seconds
        await asyncio.gather(
            *(client_loop(client, n, target, deadline, budget, samples) for n in range(clients))
        )
        elapsed = time.perf_counter() - started
        backlog = await finish_jobs(client, samples)
        return samples, elapsed, backlog


def target_of(url: str, collection: str, questions: list[str]) -> Target:
    """The collection's first document, whose pages the clients render."""
    listed = httpx.get(f"{url}/api/documents", params={"collection": collection}, timeout=120)
    listed.raise_for_status()
    first = listed.json()[0]
    return Target(collection, questions, first["name"], int(first["pages"]))


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


def report(
    samples: list[Sample], elapsed: float, backlog: float, args: argparse.Namespace, document: str
) -> str:
    of = {kind: [s for s in samples if s.kind == kind] for kind in ("query", "stream", "page")}
    uploads = [s for s in samples if s.kind == "upload"]
    errors = [s for s in samples if not s.ok]
    first = [s.first_delta for s in of["stream"] if s.ok and s.first_delta is not None]
    lines = [
        "# Benchmark: HTTP API under load",
        "",
        f"Measured {date.today().isoformat()} by `python -m benchmarks.load_api`, one run: "
        f"{args.clients} concurrent clients for {args.seconds:.0f} s against `python main.py "
        f"serve` on 127.0.0.1 (one process, one engine, embedded stack, extractive answers, "
        f"no LLM), collection `{args.collection}` ({document}). Each client cycles through ten "
        "turns: four `POST /api/rag/query`, four streamed `POST /v1/chat/completions`, one page "
        "render (page and zoom varying, past the image cache) and one upload of a small PDF of "
        f"its own (at most {args.uploads} uploads in all; ingested in the background, one at a "
        "time, into another collection). An error is anything but a 200 with sources (a "
        "stream: sources in its last chunk, then `[DONE]`), a 200 PNG, or a 202 whose job "
        "then finished `done`.",
        "",
        describe_machine(),
        "",
        f"**{len(samples)} requests in {elapsed:.1f} s ({len(samples) / elapsed:.1f} requests/s),"
        f" {len(errors)} errors.** This is a 2-core machine shared with other people's work "
        f"(load average {args.load_before:.1f} when the run began), and the load generator ran "
        "on the same cores as the server, so these latencies are pessimistic.",
        "",
        "| request | n | errors | p50 ms | p95 ms | max ms | mean ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
        table_row("query (`/api/rag/query`)", ok_seconds(of["query"]), failed(of["query"])),
        table_row(
            "stream, whole (`/v1/chat/completions`)",
            ok_seconds(of["stream"]),
            failed(of["stream"]),
        ),
        table_row("stream, first content piece", first, 0),
        table_row("page render (`…/pages/{n}/image`)", ok_seconds(of["page"]), failed(of["page"])),
        table_row("upload, accepted (`202`)", ok_seconds(uploads), failed(uploads)),
        table_row("all", ok_seconds(samples), len(errors)),
        "",
        f"Of the {len(uploads)} uploads, {sum(s.ok for s in uploads)} were ingested, the last "
        f"{backlog:.0f} s after the load stopped (the upload row times the `202`; the ingest "
        "runs after it, one job at a time, "
        "competing with the questions for the two cores). With "
        f"{args.clients} clients and 2 cores, {len(samples) / elapsed:.1f} requests/s means"
        f" about {2000 * elapsed / max(len(samples), 1):.0f} ms of machine time per request"
        " (server and load generator together); the rest of each latency is queueing. The"
        " engine answers at most 4 questions at once on worker threads and renders at most 2"
        " pages at once. A stream's first piece comes after retrieval, because citations are"
        " numbered against the final sources before the first delta is sent.",
    ]
    if errors:
        lines += ["", "First errors:", ""] + [f"- {s.kind}: {s.error}" for s in errors[:5]]
    return "\n".join(lines) + "\n"


def ok_seconds(samples: list[Sample]) -> list[float]:
    return [s.seconds for s in samples if s.ok]


def failed(samples: list[Sample]) -> int:
    return sum(not s.ok for s in samples)


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
    parser.add_argument("--uploads", type=int, default=40, help="uploads in all, at most")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    args.load_before = os.getloadavg()[0]
    questions = questions_for(args.collection)
    if args.url:
        samples, elapsed, backlog = load(args.url, args, questions)
    else:
        samples, elapsed, backlog = with_own_server(args, questions)
    text = report(samples, elapsed, backlog, args, args.pdf.name if not args.url else "as stored")
    args.out.write_text(text)
    print(text)
    return 0 if all(s.ok for s in samples) else 1


def load(
    url: str, args: argparse.Namespace, questions: list[str]
) -> tuple[list[Sample], float, float]:
    target = target_of(url, args.collection, questions)
    budget = Budget(args.max_requests, args.uploads)
    return asyncio.run(run_load(url, target, args.clients, args.seconds, budget))


def with_own_server(
    args: argparse.Namespace, questions: list[str]
) -> tuple[list[Sample], float, float]:
    # The test suite's server helpers: run with PYTHONPATH=test (see the module's usage).
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
        return load(url, args, questions)


if __name__ == "__main__":
    sys.exit(main())
