"""The benchmark runner and report step.

    python -m benchmarks run --suite library [--reuse] [--levers onnx-int8 pooled]
    python -m benchmarks run --suite kinds --reuse [--disable-ranker NAME ...]
    python -m benchmarks run --suite library --set embedding_backend=onnx-int8
    python -m benchmarks report

`run` measures one suite, stores one JSON record under `benchmarks/results/records/<suite>/`
and renders that suite's results file from it; `report` renders every results file (and plot)
from the newest stored records. Suites not yet on the runner run as modules
(`python -m benchmarks.bench_keywords`, ...; see benchmarks/README.md).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.suites import SUITES, SuiteOptions
from benchmarks.systems.process import OFFLINE

RUN = "python -m benchmarks"


def setting(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r} is not a setting; write it as KEY=VALUE")
    return key.strip().lower(), value.strip()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="measure one suite and store its record")
    run.add_argument("--suite", required=True, choices=sorted(SUITES))
    run.add_argument(
        "--storage", type=Path, help="where the suite keeps its ingests (storage/bench_<suite>)"
    )
    run.add_argument("--reuse", action="store_true", help="keep the stored ingests and timings")
    run.add_argument(
        "--set",
        dest="settings",
        type=setting,
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a project setting for the whole run (ingest and questions); repeatable",
    )
    run.add_argument(
        "--disable-ranker",
        dest="disabled_rankers",
        action="append",
        default=[],
        metavar="NAME",
        help="switch one of the project's rankers off by name (DISABLED_RANKERS); repeatable",
    )
    run.add_argument(
        "--levers",
        nargs="*",
        default=[],
        help="library: other project ingests timed: an embedding backend, 'pooled' or "
        "'separate', or both joined by '+' (onnx-int8+pooled)",
    )
    run.add_argument("--rounds", type=int, default=2, help="library: latency passes")
    run.add_argument("--documents", type=int, help="ocr: the first N documents of each set")
    run.add_argument(
        "--pictures", action="store_true", help="ocr: also read the text inside pictures"
    )
    run.add_argument(
        "--sizes", type=int, nargs="+", default=[10_000, 100_000], help="scale: chunks"
    )
    run.add_argument("--questions", type=int, default=40, help="scale: questions answered")
    run.add_argument(
        "--milvus",
        nargs="+",
        choices=("lite", "server"),
        default=["lite"],
        help="scale: the deployments (Milvus Lite; a Milvus standalone server started here)",
    )
    run.add_argument(
        "--compare", default="", metavar="KEY=VALUE", help="retrieval: the default beside this"
    )
    run.add_argument("--skip-latency", action="store_true", help="retrieval: quality only")
    run.add_argument("--llm", action="store_true", help="answers: answer with the configured LLM")
    run.add_argument("--limit", type=int, default=0, help="answers: only the first N questions")
    run.add_argument(
        "--budgets", type=int, nargs="+", default=[10, 20], help="compound: sources per answer"
    )
    run.add_argument(
        "--warm-caches",
        action="store_true",
        help="time the project's ingest with its exported models already cached",
    )
    commands.add_parser("report", help="render every results file from the stored records")
    return parser


def reproduce_command(argv: Sequence[str]) -> str:
    return f"{RUN} {shlex.join(argv[1:])}".strip()


def options_from(args: argparse.Namespace, argv: Sequence[str]) -> SuiteOptions:
    return SuiteOptions(
        storage=args.storage,
        reuse=args.reuse,
        settings=dict(args.settings),
        disabled_rankers=list(args.disabled_rankers),
        levers=list(args.levers),
        rounds=args.rounds,
        fresh_caches=not args.warm_caches,
        documents=args.documents,
        pictures=args.pictures,
        sizes=list(args.sizes),
        questions=args.questions,
        milvus=list(args.milvus),
        compare=args.compare,
        skip_latency=args.skip_latency,
        llm=args.llm,
        limit=args.limit,
        budgets=list(args.budgets),
        command=reproduce_command(argv),
    )


def run_suite(options: SuiteOptions, suite: str) -> int:
    from benchmarks.datasets.library import PDF_FOLDERS, missing_inputs
    from benchmarks.records import git_commit, stamped, write_record
    from benchmarks.report import render_record
    from benchmarks.suites import suite_module

    missing = missing_inputs(list(PDF_FOLDERS))
    if missing:
        print(f"skipped: {missing[0]} is absent; put the shared evaluation data beside the project")
        return 0
    # The runner is the process boundary: the project side of this run reads its settings and
    # switched-off rankers from the environment, as `main.py` would.
    os.environ.update(OFFLINE)
    os.environ.update({k.upper(): v for k, v in options.settings.items()})
    if options.disabled_rankers:
        os.environ["DISABLED_RANKERS"] = ",".join(options.disabled_rankers)
    commit = git_commit()  # the code that runs: taken before the run, as edits may follow
    record = suite_module(suite).run(options)
    record.commit = commit
    record = stamped(record)
    path = write_record(record)
    out = render_record(record)
    print(f"record: {path}\nresults: {out}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv if argv is None else argv)
    args = build_parser().parse_args(argv[1:])
    if args.command == "report":
        from benchmarks.report import report

        for path in report():
            print(f"written {path}")
        return 0
    return run_suite(options_from(args, argv), args.suite)


if __name__ == "__main__":
    sys.exit(main())
