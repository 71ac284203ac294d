"""One JSON record per benchmark run, and the reading back of the latest one per results file.

A record holds everything a results file states: the machine (CPU family and model included),
the date, the git commit, the command that reproduces it, the settings it changed, the systems
and datasets measured, the metrics and the timings. `python -m benchmarks report` renders the
Markdown from the records alone, so a figure in a results file always comes from a stored run.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from citerag.eval.machine import describe_machine

PROJECT = Path(__file__).resolve().parents[1]
RESULTS = PROJECT / "benchmarks" / "results"
RECORDS = RESULTS / "records"


@dataclass
class Record:
    """One run of one suite. `variant` names a run with changed settings ('' for the default);
    it picks the results file (`library.md`, `library_onnx-int8.md`)."""

    suite: str
    command: str
    variant: str = ""
    settings: dict[str, str] = field(default_factory=dict)
    systems: dict[str, str] = field(default_factory=dict)
    datasets: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    machine: str = ""
    date: str = ""
    commit: str = ""

    @property
    def results_name(self) -> str:
        return f"{self.suite}{'_' + self.variant if self.variant else ''}.md"


def git_commit() -> str:
    """The checkout's commit, with '+changes' when the work tree differs from it."""
    try:
        head = _git("rev-parse", "--short", "HEAD")
        dirty = _git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return f"{head}+changes" if dirty else head


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=PROJECT, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def stamped(record: Record) -> Record:
    """The record with the machine, date and commit of this run filled in."""
    record.machine = record.machine or describe_machine()
    record.date = record.date or time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    record.commit = record.commit or git_commit()
    return record


def write_record(record: Record, folder: Path = RECORDS) -> Path:
    """Store the record as `folder/<suite>/<time>[_<variant>].json`; returns its path."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    name = f"{stamp}{'_' + record.variant if record.variant else ''}.json"
    path = folder / record.suite / name
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(asdict(record), indent=1, ensure_ascii=False, default=str)
    path.write_text(text + "\n", "utf-8")
    return path


def read_record(path: Path) -> Record:
    return Record(**json.loads(path.read_text(encoding="utf-8")))


def latest_records(folder: Path = RECORDS) -> dict[str, Record]:
    """The newest record for each results file (suite and variant), keyed by its file name."""
    latest: dict[str, Record] = {}
    for path in sorted(folder.glob("*/*.json")):  # names start with the time: newest last
        record = read_record(path)
        latest[record.results_name] = record
    return latest
