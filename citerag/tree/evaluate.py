"""Heading precision and recall of a tree against a labelled outline, and page-span agreement.

A labelled outline (`test/data/outlines/*.json`) lists headings with level and page span. A
tree node matches a label when both start on the same page and their titles agree (one's words
begin the other's, or they share most words); each label matches at most one node. The preface
node (level 0, the pages before the first heading) is not a heading and is not counted. With
scope "levels<=N" only nodes of level 1 to N are compared (deeper headings were not labelled).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NotRequired, TypedDict

from citerag.text.tokens import WORD
from citerag.tree.model import DocumentTree, TreeNode

TITLE_OVERLAP = 0.6


@dataclass(frozen=True)
class OutlineScore:
    precision: float
    recall: float
    span_accuracy: float  # share of matched headings whose end page agrees too
    predicted: int
    labelled: int
    matched: int
    unmatched_predictions: tuple[str, ...]
    missed_labels: tuple[str, ...]


class HeadingLabel(TypedDict):
    title: str
    start_index: int
    end_index: int


class Outline(TypedDict):
    """A labelled outline file: the headings a person marked, down to `scope`."""

    headings: list[HeadingLabel]
    scope: NotRequired[str]  # "all" (the default) or "levels<=N"


def load_outline(path: Path) -> Outline:
    data: Outline = json.loads(path.read_text(encoding="utf-8"))
    return data


def _words(title: str) -> list[str]:
    return WORD.findall(title.casefold())


def _cut_words(title: str) -> list[str]:
    """The title's words; a title cut short ("... PURSU…") without its cut last word."""
    words = _words(title.rstrip("…"))
    return words[:-1] if title.endswith("…") and len(words) > 1 else words


def titles_agree(a: str, b: str) -> bool:
    wa, wb = _cut_words(a), _cut_words(b)
    if not wa or not wb:
        return False
    shorter, longer = sorted((wa, wb), key=len)
    if longer[: len(shorter)] == shorter:
        return True
    sa, sb = set(wa), set(wb)
    return len(sa & sb) / len(sa | sb) >= TITLE_OVERLAP


def _in_scope(node: TreeNode, scope: str) -> bool:
    """Scope "all", or "levels<=N": only headings down to level N were labelled."""
    if node.level == 0:
        return False
    found = re.fullmatch(r"levels<=(\d+)", scope)
    return node.level <= int(found.group(1)) if found else True


def score_tree(tree: DocumentTree, outline: Outline) -> OutlineScore:
    scope = str(outline.get("scope", "all"))
    predicted = [node for node in tree.walk() if _in_scope(node, scope)]
    labels = list(outline["headings"])
    used: set[int] = set()
    matched_spans = 0
    unmatched: list[str] = []
    for node in predicted:
        hit = next(
            (
                i
                for i, label in enumerate(labels)
                if i not in used
                and int(label["start_index"]) == node.start_index
                and titles_agree(node.title, str(label["title"]))
            ),
            None,
        )
        if hit is None:
            unmatched.append(f"p{node.start_index} {node.title}")
            continue
        used.add(hit)
        matched_spans += int(labels[hit]["end_index"]) == node.end_index
    matched = len(used)
    missed = tuple(
        f"p{label['start_index']} {label['title']}"
        for i, label in enumerate(labels)
        if i not in used
    )
    return OutlineScore(
        precision=matched / len(predicted) if predicted else float(not labels),
        recall=matched / len(labels) if labels else 1.0,
        span_accuracy=matched_spans / matched if matched else 0.0,
        predicted=len(predicted),
        labelled=len(labels),
        matched=matched,
        unmatched_predictions=tuple(unmatched),
        missed_labels=missed,
    )
