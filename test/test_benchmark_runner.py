"""The benchmark runner's options: what a command line asks of the project side of a run."""

from __future__ import annotations

from pathlib import Path

from benchmarks.__main__ import build_parser, options_from
from benchmarks.suites import SuiteOptions


def options(*arguments: str) -> SuiteOptions:
    argv = ["python -m benchmarks", "run", *arguments]
    return options_from(build_parser().parse_args(argv[1:]), argv)


def test_rankers_switched_off_and_settings_name_the_results_file() -> None:
    chosen = options(
        "--suite",
        "kinds",
        "--set",
        "embedding_backend=onnx-int8",
        "--disable-ranker",
        "entities",
        "--disable-ranker",
        "years",
    )

    assert chosen.settings == {"embedding_backend": "onnx-int8"}
    assert chosen.disabled_rankers == ["entities", "years"]
    assert chosen.variant == "onnx-int8_no-entities_no-years"
    assert chosen.command == (
        "python -m benchmarks run --suite kinds --set embedding_backend=onnx-int8 "
        "--disable-ranker entities --disable-ranker years"
    )


def test_the_project_side_reads_rankers_off_and_settings_from_its_environment() -> None:
    from benchmarks.systems.project import project_environment

    env = project_environment(Path("store"), {"sentence_vectors": "pooled"}, ["entities", "years"])

    assert env == {
        "RAG_STORAGE_DIR": "store",
        "SENTENCE_VECTORS": "pooled",
        "DISABLED_RANKERS": "entities,years",
    }


def test_a_default_run_keeps_the_results_file_name_and_its_suite_storage() -> None:
    chosen = options("--suite", "library")

    assert chosen.variant == ""
    assert chosen.fresh_caches
    assert chosen.storage_for("kinds") == chosen.storage_for("library")
    assert chosen.storage_for("shelf").name == "bench_shelf"
