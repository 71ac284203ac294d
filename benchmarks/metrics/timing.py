"""Warm per-question latency, measured so that a burst of other work falls on all systems alike."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence

REPEATS = 3  # each question is timed this often per system and its fastest run kept
Call = Callable[[str], object]


def fastest_in_turns(
    calls: Mapping[str, Call], questions: Sequence[str], repeats: int = REPEATS
) -> dict[str, list[float]]:
    """Milliseconds per question and system: the fastest of `repeats` warm runs. The systems
    take turns on each question, so a burst of other work on a shared machine falls on all of
    them alike (the load average is reported beside the figures)."""
    for call in calls.values():
        call(questions[0])  # warm: models loaded, indexes in memory
    timings: dict[str, list[float]] = {name: [] for name in calls}
    for question in questions:
        runs: dict[str, list[float]] = {name: [] for name in calls}
        for _ in range(repeats):
            for name, call in calls.items():
                started = time.perf_counter()
                call(question)
                runs[name].append((time.perf_counter() - started) * 1000)
        for name in calls:
            timings[name].append(min(runs[name]))
    return timings
