"""How the rules extractor finds named entities, measured on two hand-labelled essay pages.

Gold: the names on pages 2 and 11 of the Paul Graham essay, labelled by reading them (people,
organisations, places, products, works; not fields such as "AI"). Parts of a title
("Moon" from "The Moon is a Harsh Mistress") are neither required nor counted wrong. Three rules
for a lone capitalized word are compared; runs of several capitalized words are kept by all.
Writes benchmarks/results/enrichment.md.

    .venv/bin/python -m benchmarks.bench_entities
"""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

from citerag.enrich.rules import lower_vocabulary, mid_sentence_capitals, named_entities

PROJECT = Path(__file__).resolve().parents[1]

PDF = PROJECT.parent / "shared" / "eval" / "paul_graham" / "paul_graham_essay.pdf"
GOLD = {
    2: {
        "TRS-80",
        "Apple II",
        "Heinlein",
        "Harsh Mistress",
        "Mike",
        "PBS",
        "Terry Winograd",
        "Winograd",
        "SHRDLU",
        "Cornell",
        "Lisp",
        "PL/I",
    },
    11: {
        "Release Engineering",
        "Viaweb",
        "Idelle",
        "Julian",
        "Y Combinator",
        "Interleaf",
        "Robert",
        "Trevor Blackwell",
        "Trevor",
        "Rtm",
    },
}
NEUTRAL = {"Moon", "The Moon"}


def main() -> int:
    if not PDF.exists():
        print(f"skipped: {PDF} is absent")
        return 0
    with pymupdf.open(PDF) as document:
        pages = [page.get_text() for page in document]
    lower, capitals = lower_vocabulary(pages), mid_sentence_capitals(pages)
    variants = {
        "every capitalized run": (frozenset(), None),
        "lone word: never written in lower case": (lower, None),
        "lone word: also capitalized mid-sentence (default)": (lower, capitals),
    }
    lines = [
        "# Named entities by rules, on hand-labelled essay pages",
        "",
        f"Pages {', '.join(map(str, GOLD))} of the essay, {sum(map(len, GOLD.values()))} gold "
        "names. Written by `python -m benchmarks.bench_entities`.",
        "",
        "| rule | precision | recall | wrong ones |",
        "|---|---|---|---|",
    ]
    for name, (vocabulary, mids) in variants.items():
        found = {p: set(named_entities(pages[p - 1], vocabulary, mids)) - NEUTRAL for p in GOLD}
        right = sum(len(found[p] & GOLD[p]) for p in GOLD)
        extracted = sum(len(found[p]) for p in GOLD)
        wrong = sorted({e for p in GOLD for e in found[p] - GOLD[p]})
        lines.append(
            f"| {name} | {right / extracted:.2f} | {right / sum(map(len, GOLD.values())):.2f} "
            f"| {', '.join(wrong)} |"
        )
    report = "\n".join(lines) + "\n"
    (PROJECT / "benchmarks" / "results" / "enrichment.md").write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
