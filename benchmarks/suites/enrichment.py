"""How the rules extractor finds named entities, measured on two hand-labelled essay pages.

Gold: the names on pages 2 and 11 of the Paul Graham essay, labelled by reading them (people,
organisations, places, products, works; not fields such as "AI"). Parts of a title
("Moon" from "The Moon is a Harsh Mistress") are neither required nor counted wrong. Three rules
for a lone capitalized word are compared; runs of several capitalized words are kept by all.
Its results file is `enrichment.md`.
"""

from __future__ import annotations

import pymupdf

from benchmarks.datasets.library import EVAL
from benchmarks.records import Record
from benchmarks.suites import SuiteOptions
from citerag.enrich.rules import lower_vocabulary, mid_sentence_capitals, named_entities

PDF = EVAL / "paul_graham" / "paul_graham_essay.pdf"
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


def run(options: SuiteOptions) -> Record:
    with pymupdf.open(PDF) as document:
        pages = [page.get_text() for page in document]
    lower, capitals = lower_vocabulary(pages), mid_sentence_capitals(pages)
    variants = {
        "every capitalized run": (frozenset(), None),
        "lone word: never written in lower case": (lower, None),
        "lone word: also capitalized mid-sentence (default)": (lower, capitals),
    }
    gold_count = sum(map(len, GOLD.values()))
    rules = {}
    for name, (vocabulary, mids) in variants.items():
        found = {p: set(named_entities(pages[p - 1], vocabulary, mids)) - NEUTRAL for p in GOLD}
        right = sum(len(found[p] & GOLD[p]) for p in GOLD)
        extracted = sum(len(found[p]) for p in GOLD)
        rules[name] = {
            "precision": right / extracted,
            "recall": right / gold_count,
            "wrong": sorted({e for p in GOLD for e in found[p] - GOLD[p]}),
        }
    return Record(
        suite="enrichment",
        command=options.command,
        variant=options.variant,
        systems={name: "citerag.enrich.rules.named_entities" for name in variants},
        datasets={"pages": ", ".join(map(str, GOLD)), "gold": str(gold_count)},
        metrics={"rules": rules},
    )
