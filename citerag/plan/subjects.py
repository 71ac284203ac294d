"""Pronouns that point back get their subject: a sub-question is retrieved on its own, so "What
was its significance in the overall work of YC?" would search for nothing in particular.

When a sub-question's first "it", "its", "they", "their" or "them" comes before any name of its
own, it is replaced by the subject of the sub-question before it: that one's first figure,
table or section label, else its first name (a run of capitalised words such as "Hacker News"
or "Netflix", not a question word). Person pronouns (he, she, his) are left alone: the name before
them is as often a company as a person. Applied to every plan, the offline planner's and an
LLM's.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citerag.plan.references import label_refs

_BACK = re.compile(r"\b(it|its|they|their|them)\b", re.I)
_NAME = re.compile(r"(?<![\w'’])[A-Z][\w&-]*(?:\s+(?:of\s+|&\s+)?[A-Z][\w&-]*)*")
_POSSESSIVE = re.compile(r"['’]s?$")
_NOT_NAME_WORDS = (
    "what how why when where who whom whose which is are was were do does did can could "
    "would should will in on at by as to of for from with and or but the a an also then "
    "describe discuss explain list give tell please according among based if compare "
    "summarize summarise show provide identify name find state i figure fig table equation "
    "section chapter item page pages"
)
_NOT_NAMES = frozenset(_NOT_NAME_WORDS.split())


def with_subjects(questions: Sequence[str]) -> list[str]:
    """The sub-questions, each pointing-back pronoun replaced by the subject before it."""
    resolved: list[str] = []
    for question in questions:
        subject = subject_of(resolved[-1]) if resolved else None
        resolved.append(_resolved(question, subject) if subject else question)
    return resolved


def subject_of(question: str) -> str | None:
    """The question's first label ("Figure 1"), else its first name, else None."""
    labels = label_refs(question)
    if labels:
        return str(labels[0])
    names = names_in(question)
    return names[0][1] if names else None


def names_in(text: str) -> list[tuple[int, str]]:
    """(offset, name) of each run of capitalised words that is not a question or lead word (nor
    a lone first word, capitalised because it starts the text)."""
    found: list[tuple[int, str]] = []
    for match in _NAME.finditer(text):
        words = match.group(0).split()
        while words and words[0].casefold() in _NOT_NAMES:
            words = words[1:]
        at = match.end() - len(" ".join(words))
        if not words or (at == 0 and len(words) == 1):
            continue  # a sentence's first word is capitalised anyway
        found.append((at, _POSSESSIVE.sub("", " ".join(words))))
    return found


def _resolved(question: str, subject: str) -> str:
    pronoun = _BACK.search(question)
    if pronoun is None or any(at < pronoun.start() for at, _ in names_in(question)):
        return question
    word = pronoun.group(0).casefold()
    replacement = f"{subject}'s" if word in ("its", "their") else subject
    return f"{question[: pronoun.start()]}{replacement}{question[pronoun.end() :]}"
