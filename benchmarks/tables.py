"""Markdown tables and a PNG plot for page-level retrieval results.

Every function takes plain data: ``PageSummary`` / ``LatencySummary`` (from
``benchmarks.metrics.pages``) keyed by system name, or per-question ``PageScore`` lists.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from benchmarks.metrics.pages import (
    ALL_TYPES,
    KS,
    LatencySummary,
    PageScore,
    PageSummary,
    summarize_by_type,
)
from benchmarks.records import RESULTS, Record

PLOT_PATH = RESULTS / "finance_recall.png"


def _cells(summary: PageSummary, ks: Sequence[int]) -> list[str]:
    return [f"{summary.recall_at[k]:.3f}" for k in ks] + [f"{summary.mrr:.3f}", str(summary.n)]


def render_summary_table(rows: Mapping[str, PageSummary], ks: Sequence[int] = KS) -> str:
    """One row per system: page recall@k for each k, MRR, n."""
    header = ["system", *(f"recall@{k}" for k in ks), "MRR", "n"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
    ]
    for system, summary in rows.items():
        lines.append("| " + " | ".join([system, *_cells(summary, ks)]) + " |")
    return "\n".join(lines)


def render_type_table(
    by_system: Mapping[str, Mapping[str, PageSummary]], ks: Sequence[int] = KS
) -> str:
    """One row per (question type, system), grouped by type; ``"all"`` last."""
    types: list[str] = []
    for summaries in by_system.values():
        types.extend(t for t in summaries if t not in types)
    types = [t for t in types if t != ALL_TYPES] + ([ALL_TYPES] if ALL_TYPES in types else [])
    header = ["type", "system", *(f"recall@{k}" for k in ks), "MRR", "n"]
    lines = [
        "| " + " | ".join(header) + " |",
        "|---|---|" + "---:|" * (len(header) - 2),
    ]
    for question_type in types:
        for system, summaries in by_system.items():
            if question_type in summaries:
                cells = _cells(summaries[question_type], ks)
                lines.append("| " + " | ".join([question_type, system, *cells]) + " |")
    return "\n".join(lines)


def render_latency_table(rows: Mapping[str, LatencySummary]) -> str:
    """One row per system: p50, p95, max milliseconds and the number of calls."""
    lines = ["| system | p50 ms | p95 ms | max ms | n |", "|---|---:|---:|---:|---:|"]
    for system, lat in rows.items():
        lines.append(
            f"| {system} | {lat.p50_ms:.1f} | {lat.p95_ms:.1f} | {lat.max_ms:.1f} | {lat.n} |"
        )
    return "\n".join(lines)


def by_type(
    scores_by_system: Mapping[str, Sequence[PageScore]], ks: Sequence[int] = KS
) -> dict[str, dict[str, PageSummary]]:
    """system -> question type (and ``"all"``) -> summary."""
    return {system: summarize_by_type(scores, ks) for system, scores in scores_by_system.items()}


def render_question_set(
    title: str,
    scores_by_system: Mapping[str, Sequence[PageScore]],
    ks: Sequence[int] = KS,
    note: str = "",
) -> str:
    """A Markdown section: the overall table (rows: system) and the per-type table."""
    summaries = by_type(scores_by_system, ks)
    overall = {system: s[ALL_TYPES] for system, s in summaries.items()}
    parts = [f"## {title}", ""]
    if note:
        parts += [note, ""]
    parts += [render_summary_table(overall, ks), "", "By question type:", ""]
    parts += [render_type_table(summaries, ks), ""]
    return "\n".join(parts)


def plot_recall_by_type(
    by_system: Mapping[str, Mapping[str, PageSummary]],
    path: Path = PLOT_PATH,
    ks: Sequence[int] = (5, 10),
    title: str = "Page recall by question type",
) -> Path:
    """Grouped bars: a panel (row) per k, question types on x, a bar per system. Writes a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = list(by_system)
    types: list[str] = []
    for summaries in by_system.values():
        types.extend(t for t in summaries if t not in types)
    types = [t for t in types if t != ALL_TYPES] + ([ALL_TYPES] if ALL_TYPES in types else [])
    width = 0.8 / max(1, len(systems))
    fig, axes = plt.subplots(
        len(ks), 1, figsize=(max(7.0, 1.2 * len(types) + 2), 3.4 * len(ks)), squeeze=False
    )
    for ax, k in zip(axes[:, 0], ks, strict=True):
        for i, system in enumerate(systems):
            xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(types))]
            values = [
                by_system[system][t].recall_at[k] if t in by_system[system] else 0.0 for t in types
            ]
            bars = ax.bar(xs, values, width, label=system)
            ax.bar_label(bars, fmt="%.2f", fontsize=7, padding=1)
        ax.set_xticks(range(len(types)), types, rotation=20)
        ax.set_ylim(0, 1.08)
        ax.set_ylabel(f"page recall@{k}")
        ax.set_title(f"{title}: recall@{k}")
        ax.grid(axis="y", alpha=0.3)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(3, len(systems)), fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def shared_data_missing(paths: Sequence[Path]) -> bool:
    """Says which shared input is absent (a benchmark then skips) and returns True; False when
    all are there."""
    missing = [path for path in paths if not path.exists()]
    if missing:
        print(f"skipped: {missing[0]} is absent; put the shared evaluation data beside the project")
    return bool(missing)


def publish(report: str, out: Path) -> None:
    """Writes a benchmark's Markdown report where the README links it, and prints it."""
    out.write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {out.relative_to(RESULTS.parent.parent)}")


def record_header(title: str, record: Record, what: str) -> list[str]:
    """A results file's opening: the title, what was measured, on which machine, when, at which
    commit, and the command that measures it again."""
    changed = ", ".join(f"{k}={v}" for k, v in record.settings.items() if v)
    return [
        f"# {title}",
        "",
        what,
        "",
        f"{record.machine} Measured {record.date} at commit {record.commit}"
        + (f", with {changed}" if changed else "")
        + ".",
        "",
        f"Reproduce: `{record.command}` (the record: `benchmarks/results/records/"
        f"{record.suite}/`; `python -m benchmarks report` renders this file from it).",
        "",
    ]


def rate_cells(rates: Mapping[str, float], ks: Sequence[int]) -> str:
    return " | ".join(f"{rates[f'hit@{k}']:.3f}" for k in ks)
