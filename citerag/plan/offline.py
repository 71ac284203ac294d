"""The deterministic planner: a compound question split into sub-questions, each routed by pattern.

Splits: a list of years ("in 1980, in 1996 and in 2019") or of labels sharing a noun ("Figure 4.1
and 4.3") gives one sub-question per item; "and compare it with ..." and "and describe ..." start
a new sub-question (the pronoun becomes the first one's label); "X? Y?" and "X. Also, Y" are two.
A plain question stays one sub-question, and so does a follow-up that points back at it ("How
were they split?", "What did that do to income?"): it asks nothing else. Routes: page or label
references go to `pages`, "summarize / overview / main points" to `summary`, "which section ..."
to `sections`, the rest to `facts`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citerag.plan.references import LabelRef, label_refs, page_spans, sheet_refs
from citerag.plan.subjects import names_in
from citerag.text.dates import YEAR

FACTS, PAGES, SUMMARY, SECTIONS = "facts", "pages", "summary", "sections"
TOOL_NAMES = (FACTS, PAGES, SUMMARY, SECTIONS)

_PREP = r"(?:in|during|for|by|since|around|of)\s+"
_YEAR = rf"{YEAR}(?!\d)"
_DATED_YEAR = rf"(?:{_PREP})?{_YEAR}"  # "in 1996" or "1996"
_YEAR_JOIN = r"\s*,\s*(?:(?:and|or)\s+)?|\s+(?:and|or)\s+"
_YEAR_LIST = re.compile(
    rf"(?P<first>{_DATED_YEAR})(?P<rest>(?:(?:{_YEAR_JOIN}){_DATED_YEAR})+)", re.I
)
_ITEM = re.compile(rf"(?P<prep>{_PREP})?(?P<year>{_YEAR})", re.I)
_LABEL_LIST = re.compile(
    r"(?<!\w)(?P<noun>figures?|figs?\.?|tables?|equations?|eqs?\.?|sections?|items?|chapters?)\s*"
    r"(?P<items>\(?\d+(?:\.\d+)*[a-z]?\)?(?:\s*(?:,|and|&)\s*(?:(?:figure|fig\.?|table|"
    r"equation|eq\.?|section|item|chapter)\s*)?\(?\d+(?:\.\d+)*[a-z]?\)?)+)",
    re.I,
)
_COMPARISON = re.compile(r"\b(compare|comparison|versus|vs\.?|differ|difference|between)\b", re.I)
_CLAUSE_VERB = (
    r"compare|contrast|describe|explain|summari[sz]e|list|show|give|tell|write|identify|"
    r"what|how|why|which|when|where|who"
)
# "and" then a question word, maybe after a short lead ("and in 2020, how much", "and by how
# much", "and in which cities") or an auxiliary that opens a question ("and does Netflix pay").
_CLAUSE = re.compile(
    rf",?\s+and\s+(?=(?:then\s+|[^,?]{{1,60}},\s*)?(?:{_CLAUSE_VERB})\b"
    r"|(?:\w+\s+){1,3}(?:what|how|which)\b"
    r"|(?:does|do|did|is|are|was|were|has|have|can)\s+(?-i:[A-Z]))",
    re.I,
)
_DOCUMENT_NOUN = (
    r"paper|document|report|essay|book|article|survey|guide|manual|brochure|slides?|"
    r"presentation|filing|figure|table|page|section|chapter|text"
)
# Words that point back at what the question before named: a clause or sentence that holds one
# asks about the same thing, not something else ("this paper" names the document instead).
_PRONOUN = re.compile(
    r"\b(?:it|its|they|their|them|he|his|him|she|her|that one)\b"
    rf"|\b(?:this|these|those)\s+(?!(?:{_DOCUMENT_NOUN})\b)[a-z]+"
    rf"|\b(?:did|does|do|was|is|were|are)\s+(?:this|that|these|those)\b(?!\s+(?:{_DOCUMENT_NOUN})\b)",
    re.I,
)
_SENTENCE = re.compile(
    r"(?<=\?)\s+(?=[A-Z])|(?<=[.!])\s+(?=(?:Also|Additionally|And|Then|Next|Finally|Separately)"
    r"\b,?)"
)
_OWN_DOCUMENT = re.compile(rf"\b(?:this|the)\s+(?:{_DOCUMENT_NOUN})\b", re.I)
# How to answer, not what: "Please write the answer as a list", "Give me an integer?"
_FORMAT_REQUEST = re.compile(
    r"please\b|(?:give|write|format|express|round|enumerate|answer|return|provide|list)\b"
    r"[^?]*\b(?:answer|format|integer|list|float|number|percent\w*|decimal|YYYY)",
    re.I,
)
_LEAD = re.compile(r"^(?:also|additionally|and|then|next|finally|separately)\b,?\s*", re.I)
_SUMMARY = re.compile(
    r"\b(summari[sz]e|summary|overview|main points|key points|key takeaways|gist|outline of|"
    r"what is (?:this|the) (?:document|paper|report|essay|book) about)\b",
    re.I,
)
_SECTIONS = re.compile(
    r"\b(which|what) (sections?|chapters?|parts?|items?)\b|\bsections? (?:about|on|discussing)\b",
    re.I,
)
_SECTION_KINDS = frozenset({"section", "item", "chapter"})


@dataclass(frozen=True)
class PlannedQuestion:
    question: str
    tool: str


def plan_offline(question: str) -> list[PlannedQuestion]:
    """Sub-questions with their tools; one for a plain question."""
    parts = [p for sentence in split_sentences(question) for p in split_clauses(sentence)]
    parts = [p for part in parts for p in split_enumerations(part)]
    planned = [PlannedQuestion(part, route(part)) for part in parts if part.strip()]
    return list({(p.question.casefold(), p.tool): p for p in planned}.values()) or [
        PlannedQuestion(question.strip(), route(question))
    ]


def route(question: str) -> str:
    """The tool a sub-question goes to, by what its text names."""
    if _SUMMARY.search(question):
        return SUMMARY
    if _SECTIONS.search(question):
        return SECTIONS
    if page_spans(question) or sheet_refs(question) or label_refs(question):
        return PAGES
    return FACTS


def split_sentences(question: str) -> list[str]:
    """ "X? Y?" and "X. Also, Y": separate questions. A context sentence stays with its
    question, and so does a request or question that leans on the one before it ("X? Describe
    each.", "How many people did Microsoft employ? How were they split by country?")."""
    pieces: list[str] = []
    for piece in (p.strip() for p in _SENTENCE.split(question.strip())):
        if not piece:
            continue
        follows_up = (
            not piece.endswith("?") or points_back(piece) or bool(_FORMAT_REQUEST.match(piece))
        )
        leans_back = pieces and not _LEAD.match(piece) and follows_up
        if leans_back:
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return [_capitalized(_LEAD.sub("", p)) for p in pieces]


def split_clauses(sentence: str) -> list[str]:
    """ "Describe Figure 1 and compare it with Table 2": two clauses; the pronoun becomes the
    first clause's label. A clause without its own subject matter (no label, no pronoun to
    resolve, under four words) stays joined."""
    pieces = _CLAUSE.split(sentence)
    if len(pieces) < 2:
        return [sentence]
    first_labels = label_refs(pieces[0])
    clauses = [pieces[0].rstrip(" ,")]
    for piece in pieces[1:]:
        has_pronoun = points_back(piece)
        if has_pronoun and not first_labels:
            clauses[-1] = f"{clauses[-1]} and {piece}"  # "what happened to it": needs the first
            continue
        if has_pronoun:
            piece = _PRONOUN.sub(str(first_labels[0]), piece, count=1)
        if len(piece.split()) < 4 and not label_refs(piece):
            clauses[-1] = f"{clauses[-1]} and {piece}"
            continue
        clauses.append(_capitalized(piece))
    return [_ended(c, sentence) for c in clauses]


def points_back(text: str) -> bool:
    """Whether `text` leans on what came before: a pronoun ("they", "its", "did that", "these
    decisions") before any name or document ("this paper") of its own."""
    pronoun = _PRONOUN.search(text)
    if pronoun is None:
        return False
    before = text[: pronoun.start()]
    return not names_in(before) and not _OWN_DOCUMENT.search(before)


def split_enumerations(question: str) -> list[str]:
    """One sub-question per listed year, or per listed label (not when comparing them)."""
    if _COMPARISON.search(question):  # "between 2019 and 2020" asks one thing of both years
        return [question]
    years = _YEAR_LIST.search(question)
    if years:
        return _per_year(question, years)
    labels = _LABEL_LIST.search(question)
    if labels:
        refs = label_refs(labels.group(0))
        if len(refs) > 1:
            return [_replace(question, labels.start(), labels.end(), _written(r)) for r in refs]
    return [question]


def _per_year(question: str, found: re.Match[str]) -> list[str]:
    items = list(_ITEM.finditer(found.group(0)))
    first_prep = items[0].group("prep") or ""
    return [
        _replace(
            question, found.start(), found.end(), (item.group("prep") or first_prep) + item["year"]
        )
        for item in items
    ]


def _written(ref: LabelRef) -> str:
    if ref.kind == "equation":
        return f"Equation ({ref.label})"
    if ref.kind in _SECTION_KINDS:
        return f"{ref.kind.capitalize()} {ref.label.upper() if ref.kind == 'item' else ref.label}"
    return str(ref)


def _replace(text: str, start: int, end: int, value: str) -> str:
    return " ".join(f"{text[:start]}{value}{text[end:]}".split())


def _capitalized(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:]


def _ended(clause: str, sentence: str) -> str:
    clause = clause.strip().rstrip(",")
    end = sentence.strip()[-1:] if sentence.strip()[-1:] in "?.!" else ""
    return clause if clause[-1:] in "?.!" else clause + end
