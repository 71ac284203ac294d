"""Answers read from a table, without an LLM: the answering row or cell in a sentence of its own.

When a cited source's best evidence is a table, the question picks a row by its terms (weighted
by how rare each is among the table's row labels), a column by its year or measure, and
superlatives ("highest", "lowest") and comparisons ("more than 40") are computed over the
column's parsed numbers. The unit comes from the table ("in thousands", a "%" header). Where no
row answers with confidence, the answer says so and cites the table instead of guessing. The
answering row becomes the source's highlight (its exact offsets in the source's content).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from citerag.answer.numbers import Quantity, quantities
from citerag.answer.source_tables import Row, Table, is_per_share, tables_in
from citerag.text.dates import TABLE_YEAR
from citerag.text.stemming import light_stem as stem
from citerag.text.tokens import WORD

MAX_TABLE_SOURCES = 4  # the best few sources are read for tables, never more
MIN_LABEL_SHARE = 0.5  # a row's label must share more than this part of its terms
PREFIX = 6  # letters of a stemmed term compared
_NO_COLUMN = -1  # the question names a period the table does not have

_HIGHEST = re.compile(r"\b(highest|largest|most|greatest|maximum|biggest|top)\b", re.I)
_LOWEST = re.compile(r"\b(lowest|smallest|least|fewest|minimum)\b", re.I)
_ABOVE = re.compile(
    r"\b(?:more than|greater than|higher than|larger than|over|above|at least|exceeding)\s+"
    r"(?P<number>[$€£]?\d[\d,]*(?:\.\d+)?\s*%?)",
    re.I,
)
_BELOW = re.compile(
    r"\b(?:less than|fewer than|lower than|smaller than|under|below|at most)\s+"
    r"(?P<number>[$€£]?\d[\d,]*(?:\.\d+)?\s*%?)",
    re.I,
)
_YEAR = re.compile(rf"\b{TABLE_YEAR}\b")
_TOTAL = re.compile(r"^total\b", re.I)
_EXCLUDING = re.compile(r"\b(?:excluding|except|other than|not including)\s+(?:the\s+)?([\w\s-]+)")
# Filing abbreviations a question uses for a row label's words.
_ABBREVIATIONS = {
    "eps": "earnings per share",
    "capex": "capital expenditures",
    "r&d": "research and development",
    "sg&a": "selling general and administrative",
}
_GENERIC_LABELS = frozenset({"total", "other", "net", "subtot"})
_ABBREVIATION = re.compile(r"\b(?:eps|capex|r&d|sg&a)\b", re.I)
_FUNCTION_WORDS = frozenset(
    {"a", "an", "and", "as", "at", "by", "for", "from", "in", "into", "of", "on", "or", "per"}
    | {"the", "to", "with", "what", "which", "who", "how", "was", "were", "is", "are", "did"}
    | {"does", "do", "much", "many"}
)


@dataclass(frozen=True)
class TableSource:
    """What the table answer reads of one cited source."""

    citation_number: int
    content: str
    table_context: str = ""
    highlights: Sequence[str] = ()  # the texts highlighted on it, best first
    has_table: bool = False  # the chunk holds a table (its block type), highlighted or not
    document_name: str = ""  # its words ("Netflix") name no row: every row is the company's


@dataclass
class TableAnswer:
    text: str  # the sentence(s), each ending in its [N]
    confident: bool  # False: the table was the best evidence but no row answered
    rows: dict[int, list[Row]] = field(default_factory=dict)  # citation number -> answering rows


@dataclass(frozen=True)
class _Question:
    terms: frozenset[str]
    years: tuple[str, ...]
    extreme: str  # "highest", "lowest" or ""
    extreme_word: str
    bound: tuple[str, Quantity] | None  # ("above" | "below", the number)
    excluded: frozenset[str] = frozenset()  # "excluding the current portion": not these rows


def answer_from_tables(question: str, sources: Sequence[TableSource]) -> TableAnswer | None:
    """The table answer from the tables of the best sources (in rank order); when none answers
    and a highlighted table was the evidence, a sentence that says so and cites it."""
    names = " ".join(re.sub(r"[_\W]+", " ", s.document_name) for s in sources)
    asked = _read_question(question, _match_terms(names))
    best = sources[:MAX_TABLE_SOURCES]
    found: list[tuple[int, Table]] = [
        (source.citation_number, table)
        for source in best
        if source.has_table or _table_highlighted(source)
        for table in tables_in(source.content, source.table_context)
    ]
    if not found:
        return None
    ranked = bool(asked.extreme or asked.bound)
    answer = _ranked_answer(asked, found) if ranked else _lookup_answer(asked, found)
    if answer is not None:
        return answer
    top = best[0]
    if not (top.highlights and top.highlights[0].lstrip().startswith("|")):
        return None  # the best evidence is not a table: the sentences answer
    return TableAnswer(
        text="No row of the table answers this with confidence; see the table "
        f"[{top.citation_number}].",
        confident=False,
    )


def _table_highlighted(source: TableSource) -> bool:
    """Whether the retrieval found the table: one of the source's highlights is a table line."""
    return any(text.lstrip().startswith("|") for text in source.highlights)


def _read_question(question: str, names: set[str] | None = None) -> _Question:
    highest, lowest = _HIGHEST.search(question), _LOWEST.search(question)
    extreme = "highest" if highest else "lowest" if lowest else ""
    superlative = highest or lowest
    word = superlative.group(1).lower() if superlative else ""
    bound: tuple[str, Quantity] | None = None
    for direction, pattern in (("above", _ABOVE), ("below", _BELOW)):
        match = pattern.search(question)
        found = quantities(match.group("number"), skip_references=False) if match else []
        if found:
            bound = (direction, found[0])
            break
    years = tuple(dict.fromkeys(_YEAR.findall(question)))
    excluded = frozenset().union(*(_match_terms(m) for m in _EXCLUDING.findall(question)))
    ignored = _match_terms(f"{word} highest lowest table") | excluded | (names or set())
    expanded = _ABBREVIATION.sub(
        lambda m: f"{m.group(0)} {_ABBREVIATIONS[m.group(0).lower()]}", question
    )
    terms = frozenset(_match_terms(expanded) - ignored)
    return _Question(terms, years, extreme, word, bound, excluded)


def _lookup_answer(asked: _Question, found: Sequence[tuple[int, Table]]) -> TableAnswer | None:
    """The row the question names, over every table found: the best match wins, the better
    ranked source on a tie; two rows of one table that match equally with different numbers
    answer nothing."""
    best: tuple[tuple[float, int, float], int, Table, Row, int | None] | None = None
    for number, table in found:
        column = _column(asked, table)
        if column == _NO_COLUMN:
            continue
        matched = _best_row(asked, table, column)
        if matched is not None and (best is None or matched[0] > best[0]):
            best = (matched[0], number, table, matched[1], column)
    if best is None:
        return None
    _, number, table, row, column = best
    return TableAnswer(_cell_sentence(table, row, column, number), True, {number: [row]})


def _column(asked: _Question, table: Table) -> int | None:
    """The value column the question names by year or measure; None when it names none."""
    positions = table.value_positions
    if asked.years:
        dated = [p for p in positions if any(y in table.column_name(p) for y in asked.years)]
        if not dated:
            return _NO_COLUMN
        return min(dated, key=lambda p: len(table.column_name(p)))
    scored = [(len(asked.terms & _match_terms(table.column_name(p))), p) for p in positions]
    best = max(scored, default=(0, 0))
    return best[1] if best[0] > 0 else (positions[0] if len(positions) == 1 else None)


def _best_row(
    asked: _Question, table: Table, column: int | None
) -> tuple[tuple[float, int, float], Row] | None:
    """The row whose label the question names clearly, with its score: terms shared times the
    share of the label they make ("Cash dividends declared per common share" over a bare
    "Total"), then how many words of its section the question names, then that share."""
    if not asked.terms:
        return None
    scored: list[tuple[tuple[float, int, float], Row]] = []
    for row in table.rows:
        if not row.label or not _has_value(row, column):
            continue
        label_terms = _match_terms(row.label)
        if label_terms & asked.excluded:
            continue
        shared = label_terms & asked.terms
        if not label_terms or len(shared) / len(label_terms) <= MIN_LABEL_SHARE:
            continue
        section = len(_match_terms(table.section_of(row)) & asked.terms)
        if len(shared) < 2 and not section and not _whole_label(label_terms, shared):
            continue  # one word in common needs the label to be that word, or its section
        precision = len(shared) / len(label_terms)
        scored.append(((len(shared) * precision, section, precision), row))
    if not scored:
        return None
    scored.sort(key=lambda s: s[0], reverse=True)
    top_score, top_row = scored[0]
    rivals = [row for score, row in scored[1:] if score == top_score]
    if any(_cells(row, column) != _cells(top_row, column) for row in rivals):
        return None  # two rows answer equally well with different numbers: do not guess
    return top_score, top_row


def _whole_label(label_terms: set[str], shared: set[str]) -> bool:
    """A one-word label the question names ("Revenues"), unless the word says nothing alone."""
    return label_terms == shared and not label_terms & _GENERIC_LABELS


def _match_terms(text: str) -> set[str]:
    """Words stemmed and cut to their first letters, so "operations" meets "operating"; only
    function words are dropped: "Other income, net" is not "Net income"."""
    words = WORD.findall(text.lower())
    kept = [w for w in words if len(w) > 1 and w not in _FUNCTION_WORDS and not w.isdigit()]
    return {stem(w)[:PREFIX] for w in kept}


def _has_value(row: Row, column: int | None) -> bool:
    if column is None:
        return any(row.value_at(p) for p in range(len(row.cells)))
    return row.value_at(column) is not None


def _cells(row: Row, column: int | None) -> tuple[str, ...]:
    return row.cells[1:] if column is None else (row.cells[len(row.cells) - 1 - column],)


def _ranked_answer(asked: _Question, found: Sequence[tuple[int, Table]]) -> TableAnswer | None:
    """A superlative or comparison over the first table (in rank order) whose column the
    question names; totals are not rows to rank."""
    for number, table in found:
        column = _column(asked, table)
        if column is None or column == _NO_COLUMN:
            continue
        candidates = [
            (row, cell)
            for row in table.rows
            if row.label and not _TOTAL.match(row.label) and (cell := row.value_at(column))
        ]
        if candidates:
            return _ranked_sentence(asked, table, column, number, candidates)
    return None


def _ranked_sentence(
    asked: _Question,
    table: Table,
    column: int,
    number: int,
    candidates: Sequence[tuple[Row, tuple[str, Quantity]]],
) -> TableAnswer:
    measure = _measure(asked, table, column)
    if asked.bound is not None:
        direction, limit = asked.bound
        sign = 1.0 if direction == "above" else -1.0
        passing = [(r, c) for r, c in candidates if sign * (c[1].value - limit.value) > 0]
        if not passing:
            text = f"No row of the table has {measure} {direction} {limit.text} [{number}]."
            return TableAnswer(text, True, {})
        listed = ", ".join(f"{row.label} ({cell[0]})" for row, cell in passing)
        text = f"{measure[:1].upper()}{measure[1:]} {direction} {limit.text}: {listed} [{number}]."
        return TableAnswer(text, True, {number: [row for row, _ in passing]})
    pick = max if asked.extreme == "highest" else min
    row, cell = pick(candidates, key=lambda c: c[1][1].value)
    unit = _unit(table, row, column)
    text = f"{row.label} has the {asked.extreme_word} {measure}, {cell[0]}{unit} [{number}]."
    return TableAnswer(text, True, {number: [row]})


def _measure(asked: _Question, table: Table, column: int) -> str:
    name = table.column_name(column)
    if asked.years and any(y in name for y in asked.years):
        return f"figure for {name}"
    return name[:1].lower() + name[1:] if name[1:2].islower() else name


def _cell_sentence(table: Table, row: Row, column: int | None, number: int) -> str:
    if column is not None:
        found = row.value_at(column)
        assert found is not None  # _best_row keeps only rows with a value there
        name = table.column_name(column)
        where = f" ({name})" if name else ""
        return f"{row.label}{where}: {found[0]}{_unit(table, row, column)} [{number}]."
    parts = []
    for position in table.value_positions:
        found = row.value_at(position)
        if found is not None:
            name = table.column_name(position)
            parts.append(f"{name} {found[0]}" if name else found[0])
    unit = _unit(table, row, table.value_positions[0]) if table.value_positions else ""
    return f"{row.label}: {'; '.join(parts)}{unit} [{number}]."


def _unit(table: Table, row: Row, column: int) -> str:
    """ " thousand" for a money table in thousands, "%" for a percent column; per-share figures
    and cells that carry their own % keep none."""
    found = row.value_at(column)
    if found is None or found[1].percent:
        return ""
    if table.is_percent_column(column):
        return "%"
    if table.scale_word and not is_per_share(row, table):
        return f" {table.scale_word}"
    return ""
