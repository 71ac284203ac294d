"""The report step: every results file and plot rendered from the stored records alone.

For each suite and variant the newest record under `benchmarks/results/records/` becomes its
results file (`library.md`, `kinds.md`, `library_onnx-int8.md`, ...) and, where it holds page
hits, a plot of them beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from benchmarks.records import RECORDS, RESULTS, Record, latest_records
from benchmarks.suites import report_module

PLOTTED_K = "hit@5"


def plot_hits(hits: Mapping[str, Mapping[str, Mapping[str, float]]], path: Path) -> Path:
    """Grouped bars of hit@5: a group per labelled set, a bar per system."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = [g for g in hits if " / " not in g]  # the sets, not the per-type breakdowns
    systems = list(dict.fromkeys(s for g in groups for s in hits[g]))
    width = 0.8 / max(1, len(systems))
    rows = (len(systems) + 2) // 3  # legend rows below the bars
    fig, ax = plt.subplots(figsize=(max(7.0, 2.4 * len(groups)), 4.2 + 0.22 * rows))
    for i, system in enumerate(systems):
        xs = [j + (i - (len(systems) - 1) / 2) * width for j in range(len(groups))]
        values = [hits[g].get(system, {}).get(PLOTTED_K, 0.0) for g in groups]
        ax.bar(xs, values, width, label=system, color=plt.get_cmap("tab20")(i % 20))
    ax.set_xticks(range(len(groups)), groups)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel(f"page {PLOTTED_K}")
    ax.grid(axis="y", alpha=0.3)
    fig.legend(*ax.get_legend_handles_labels(), loc="lower center", ncol=3, fontsize=7)
    fig.tight_layout(rect=(0, 0.04 * rows, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def render_record(record: Record, results: Path = RESULTS, plots: bool = True) -> Path:
    """Write one record's results file (and plot); returns the file's path."""
    module = report_module(record.suite)
    text = module.render(record)
    picture = results / record.results_name.replace(".md", ".png")
    if plots and hasattr(module, "plot"):  # a suite that draws its own figure
        plot = module.plot(record, picture)
        text = f"{text.rstrip()}\n\n![{record.suite}]({plot.name})\n"
    elif plots and "hits" in record.metrics:
        plot = plot_hits(record.metrics["hits"], picture)
        text = f"{text.rstrip()}\n\n![page {PLOTTED_K} per set and system]({plot.name})\n"
    out = results / record.results_name
    out.write_text(text, encoding="utf-8")
    return out


def report(records: Path = RECORDS, results: Path = RESULTS, plots: bool = True) -> list[Path]:
    """Every results file the stored records make."""
    return [render_record(r, results, plots) for r in latest_records(records).values()]
