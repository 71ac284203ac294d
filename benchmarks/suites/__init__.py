"""The suites the runner knows: each a module with `run(options) -> Record`, and beside it a
`<suite>_report` module with `render(record) -> str` (the Markdown of its results file), light
to import, so the report step never loads the engine."""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from benchmarks.systems.process import PROJECT

SUITES = {
    "library": "benchmarks.suites.library",
    "kinds": "benchmarks.suites.kinds",
    "shelf": "benchmarks.suites.shelf",
    "ocr": "benchmarks.suites.ocr",
    "scale": "benchmarks.suites.scale",
    "retrieval": "benchmarks.suites.retrieval",
    "answers": "benchmarks.suites.answers",
    "compound": "benchmarks.suites.compound",
    "enrichment": "benchmarks.suites.enrichment",
    "list_filters": "benchmarks.suites.list_filters",
    "servers": "benchmarks.suites.servers",
    "subquestions": "benchmarks.suites.subquestions",
    "tree": "benchmarks.suites.tree",
}
# Where each suite keeps its ingests unless told otherwise: kinds asks the library's.
STORAGE = {
    "library": "bench_library",
    "kinds": "bench_library",
    "shelf": "bench_shelf",
    "ocr": "bench_ocr",
    "scale": "bench_scale",
    "retrieval": "bench_retrieval",
    "answers": "bench_answers",
    "compound": "bench_library",  # it asks the library suite's collection
    "enrichment": "bench_enrichment",
    "list_filters": "bench_list_filters",
    "servers": "bench_servers",
    "subquestions": "bench_subquestions",
    "tree": "bench_tree",
}


@dataclass
class SuiteOptions:
    """What a run may change. `settings` and `disabled_rankers` act on the project side only
    (its ingest process and its engine); the stock systems never read them."""

    storage: Path | None = None
    reuse: bool = False
    settings: dict[str, str] = field(default_factory=dict)
    disabled_rankers: list[str] = field(default_factory=list)
    levers: list[str] = field(default_factory=list)
    rounds: int = 2
    fresh_caches: bool = True
    documents: int | None = None  # ocr: the first N documents of each set
    pictures: bool = False  # ocr: also a collection with the text inside pictures read
    sizes: list[int] = field(default_factory=lambda: [10_000, 100_000])  # scale: chunks
    questions: int = 40  # scale: questions answered in each collection
    milvus: list[str] = field(default_factory=lambda: ["lite"])  # scale: deployments
    compare: str = ""  # retrieval: the default beside this one change ("key=value")
    skip_latency: bool = False  # retrieval: quality only
    llm: bool = False  # answers: answer with the configured LLM
    limit: int = 0  # answers: only the first N questions (0: all)
    budgets: list[int] = field(default_factory=lambda: [10, 20])  # compound: sources per answer
    command: str = ""

    def storage_for(self, suite: str) -> Path:
        """The storage folder given, else the suite's own under the project's `storage/`."""
        return self.storage or PROJECT / "storage" / STORAGE[suite]

    @property
    def variant(self) -> str:
        """The results file's suffix: the changed settings' values and the rankers off."""
        parts = [*self.settings.values(), *(f"no-{name}" for name in self.disabled_rankers)]
        return "_".join(parts)


def suite_module(name: str) -> ModuleType:
    """The module that runs suite `name`."""
    if name not in SUITES:
        raise KeyError(f"no suite {name!r}; the suites are {', '.join(SUITES)}")
    return importlib.import_module(SUITES[name])


def report_module(name: str) -> ModuleType:
    """The module that renders suite `name`'s records."""
    if name not in SUITES:
        raise KeyError(f"no suite {name!r}; the suites are {', '.join(SUITES)}")
    return importlib.import_module(f"{SUITES[name]}_report")
