"""A question steered to the documents it names, by their cards.

A question that names an organisation ("Adobe", "AMCOR's", "JP Morgan", a ticker such as
"BBY") is retrieved within that organisation's documents first; among them the period it names
picks the filing ("FY2019" the annual report for fiscal 2019, "Q2 FY2023" the quarterly report,
"between FY2022 and FY2023" both annual reports, the later first, since it also prints the
earlier year). Nothing named, nothing routed: the whole collection is searched. A question
naming two organisations gets each one's filing. Routing narrows where retrieval looks first;
when the routed documents hold too few chunks, the same organisations' other documents fill the
list (`citerag.retrieve.hybrid`). A hard filter is only ever the user's (`--where`).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from citerag.enrich.cards import FILING_KINDS
from citerag.errors import InputError
from citerag.retrieve.fusion import TiedRanking
from citerag.text.periods import NamedPeriod, named_period
from citerag.types import DocumentCard

_WORD = re.compile(r"[A-Za-z0-9&]+")
# Words a company's name carries that do not tell it from another.
_LEGAL_WORDS = (
    "inc incorporated corp corporation co company plc ltd limited llc lp sa nv ag se the"
    " holdings group"
)
_LEGAL = frozenset(_LEGAL_WORDS.split())
# A first word that names too many companies to stand for one ("American Water Works").
_GENERIC_WORDS = (
    "american general united first national international global new north south east west"
    " best great royal bank standard central pacific atlantic southern northern"
)
_GENERIC_FIRST_WORDS = frozenset(_GENERIC_WORDS.split())
MAX_NGRAM = 5


@dataclass(frozen=True)
class Routing:
    scope: tuple[str, ...] = ()  # document ids searched first, in order of preference
    reason: str = ""  # why, for the answer's metadata ("" when nothing was routed)
    names: tuple[str, ...] = ()  # the question's words that named the documents
    # Filings of the fiscal period a question names when it names no organisation: preferred
    # softly (one more ranking in the fusion), never searched alone.
    preferred: tuple[str, ...] = ()
    # Every document of the organisations named: what fills the list when `scope` holds too
    # few chunks (another company's filing is no answer to a question about this one).
    fallback: tuple[str, ...] = ()
    # Named by the whole question, not by this part of it: holds only while the part's own
    # best match is a document of the kind routed to (`HybridRetriever._holds`).
    inherited: bool = False

    def without_names(self, question: str) -> str:
        """The question less the words that named its documents: within them, every page
        prints the name, so it no longer tells one page from another."""
        if not self.names:
            return question
        pattern = r"\b(?:" + "|".join(map(re.escape, self.names)) + r")(?:['’]s)?\b"
        return " ".join(re.sub(pattern, " ", question, flags=re.IGNORECASE).split())

    @property
    def routed(self) -> bool:
        return bool(self.scope)


NOT_ROUTED = Routing()
WHERE_KEYS = ("company", "year", "quarter", "kind", "ticker", "title")  # `query --where KEY=VALUE`
# The question being answered, while its sub-questions are retrieved: a part that names no
# document ("Based on the second chapter") is routed as the whole question is.
_ASKED: ContextVar[str] = ContextVar("citerag_question_asked", default="")


def checked_where(where: Mapping[str, str]) -> dict[str, str]:
    """`where` when every key is a card field and every value says something, else the
    InputError sentence that says which to use."""
    for key, value in where.items():
        if key not in WHERE_KEYS:
            raise InputError(
                f"Cannot filter documents on {key!r}; use one of {', '.join(WHERE_KEYS)}."
            )
        if not str(value).strip():
            raise InputError(f"The filter {key}= has no value; write it as {key}=VALUE.")
    return {key: str(value) for key, value in where.items()}


@contextmanager
def answering(question: str) -> Iterator[None]:
    """Within this block, retrieval knows the whole question its sub-questions come from."""
    token = _ASKED.set(question)
    try:
        yield
    finally:
        _ASKED.reset(token)


def question_asked() -> str:
    return _ASKED.get()


class DocumentRouter:
    """Routes questions over one collection's cards (document id -> card)."""

    def __init__(self, cards: Mapping[str, DocumentCard], names: Mapping[str, str]) -> None:
        self._cards = dict(cards)
        self._names = dict(names)
        self._aliases: dict[str, set[str]] = defaultdict(set)  # squashed alias -> company keys
        self._tickers: dict[str, str] = {}  # ticker -> company key
        self._docs_of: dict[str, list[str]] = defaultdict(list)  # company key -> doc ids
        self._company_of: dict[str, str] = {}  # doc id -> company key
        self._shown: dict[str, str] = {}  # company key -> a name as printed
        same = _same_companies({d: card.organisation for d, card in self._cards.items()})
        for doc_id, card in sorted(self._cards.items()):
            key = same.get(doc_id, "")
            if not key:
                continue
            self._docs_of[key].append(doc_id)
            self._company_of[doc_id] = key
            self._shown.setdefault(key, card.organisation)
            for alias in company_aliases(card.organisation):
                self._aliases[alias].add(key)
            if len(card.ticker) >= 2:
                self._tickers[card.ticker] = key

    def route(self, question: str, reports: Callable[[str], str] | None = None) -> Routing:
        """The documents the question names, best first; `reports` tells the kind of document
        that reports what it asks (the domain profile's `document_kind`)."""
        if len(self._cards) < 2:
            return NOT_ROUTED  # one document: nothing to route between
        mentions = self._mentions(question)
        companies = sorted(mentions, key=lambda key: mentions[key][0])
        period = named_period(question)
        if not companies:
            return self._by_period(period)
        kind = _wanted_kind(period, reports(question) if reports else "")
        scope: list[str] = []
        reasons: list[str] = []
        for key in companies:
            picked, why = self._pick(self._docs_of[key], period, kind)
            scope += [d for d in picked if d not in scope]
            files = ", ".join(self._names.get(d, d) for d in picked)
            reasons.append(f"{self._shown[key]} named{why}: {files}")
        words = tuple(dict.fromkeys(w for key in companies for w in mentions[key][1]))
        others = tuple(d for key in companies for d in self._docs_of[key] if d not in scope)
        return Routing(tuple(scope), "; ".join(reasons), words, fallback=others)

    def _by_period(self, period: NamedPeriod) -> Routing:
        """The filings of the fiscal period named ("Q2 of FY2024"), for a question that names
        no organisation; nothing when it names no fiscal year or quarter."""
        if not period.years or not (period.fiscal or period.quarter):
            return NOT_ROUTED
        matching = [
            d
            for d, card in sorted(self._cards.items())
            if card.kind in FILING_KINDS
            and card.fiscal_year in period.years
            and (period.quarter is None or card.quarter == period.quarter)
        ]
        if not matching or len(matching) == len(self._cards):
            return NOT_ROUTED
        files = ", ".join(self._names.get(d, d) for d in matching)
        years = ", ".join(map(str, period.years))
        return Routing(
            reason=f"fiscal {years} named, preferred: {files}", preferred=tuple(matching)
        )

    def documents_where(self, where: Mapping[str, str]) -> list[str]:
        """The documents whose cards match every condition (`WHERE_KEYS`), in id order: a
        company by its name, first word or ticker; a year, quarter or kind exactly; a title by
        its words."""
        return [d for d, card in sorted(self._cards.items()) if self._matches(d, card, where)]

    def _matches(self, doc_id: str, card: DocumentCard, where: Mapping[str, str]) -> bool:
        return all(self._holds(doc_id, card, key, value.strip()) for key, value in where.items())

    def _holds(self, doc_id: str, card: DocumentCard, key: str, wanted: str) -> bool:
        if key == "company":
            named = self.companies_named(wanted) or self.companies_named(wanted.upper())
            return self._company_of.get(doc_id, "") in named
        held = {
            "year": str(card.fiscal_year or ""),
            "quarter": f"Q{card.quarter}" if card.quarter else "",
            "kind": card.kind,
            "ticker": card.ticker,
        }
        if key == "title":
            return wanted.casefold() in card.title.casefold()
        if key == "quarter" and wanted.isdigit():
            wanted = f"Q{wanted}"
        return held.get(key, "").casefold() == wanted.casefold()

    def companies_named(self, question: str) -> list[str]:
        """Company keys the question names, in the order it names them."""
        found = self._mentions(question)
        return sorted(found, key=lambda key: found[key][0])

    def _mentions(self, question: str) -> dict[str, tuple[int, list[str]]]:
        """Company key -> (word position of its first mention, the words of its mentions)."""
        words = _WORD.findall(question)  # "AMCOR's" gives "AMCOR" and "s"
        found: dict[str, tuple[int, list[str]]] = {}
        for start in range(len(words)):
            if not words[start][:1].isupper() and not words[start][:1].isdigit():
                continue  # a name is written with a capital: "life" is no "Life Insurance"
            for size in range(1, MAX_NGRAM + 1):
                span = words[start : start + size]
                for key in self._aliases.get("".join(w.lower() for w in span), ()):
                    found.setdefault(key, (start, []))[1].extend(span)
            ticker = self._tickers.get(words[start])
            if ticker is not None:
                found.setdefault(ticker, (start, []))[1].append(words[start])
        return found

    def _pick(self, docs: Sequence[str], period: NamedPeriod, kind: str) -> tuple[list[str], str]:
        """The company's documents for the period named, best first, and why."""
        cards = {d: self._cards[d] for d in docs}
        why = ""
        chosen = list(docs)
        if period.years:
            exact = [d for d in docs if cards[d].fiscal_year in period.years]
            later = [d for d in docs if (cards[d].fiscal_year or 0) - 1 in period.years]
            if exact or later:
                chosen = exact or later
                why = f" for {', '.join(map(str, period.years))}"
        same_kind = [d for d in chosen if cards[d].kind == kind]
        if same_kind:
            chosen = same_kind
        if period.quarter is not None:
            in_quarter = [d for d in chosen if cards[d].quarter == period.quarter]
            chosen = in_quarter or chosen
        newest_first = sorted(chosen, key=lambda d: (-(cards[d].fiscal_year or 0), d))
        return newest_first, why


def _same_companies(organisations: Mapping[str, str]) -> dict[str, str]:
    """Each document's company key, one key for names of one company: a renamed issuer keeps
    its first words ("Adobe Systems Incorporated", later "Adobe Inc.")."""
    cores = {d: tuple(_core_words(name)) for d, name in organisations.items()}
    shortest: dict[tuple[str, ...], tuple[str, ...]] = {}
    for core in sorted({c for c in cores.values() if c}, key=len):
        shortest[core] = next((shortest[s] for s in shortest if core[: len(s)] == s), core)
    return {d: "".join(shortest[core]) for d, core in cores.items() if core}


def company_aliases(organisation: str) -> set[str]:
    """What a question may call the organisation, squashed: its core name ("adobesystems"), and
    its first word where that names it alone ("adobe", not "american")."""
    core = _core_words(organisation)
    if not core:
        return set()
    aliases = {"".join(core)}
    first = core[0]
    if len(core) > 1 and len(first) >= 3 and first not in _GENERIC_FIRST_WORDS:
        aliases.add(first)
    return aliases


def _core_words(organisation: str) -> list[str]:
    words = [w.lower() for w in _WORD.findall(organisation.replace("&", " "))]
    while words and words[-1] in _LEGAL:
        words.pop()
    while words and words[0] == "the":
        words.pop(0)
    return words


def _wanted_kind(period: NamedPeriod, reported_in: str) -> str:
    if period.kind or reported_in:
        return period.kind or reported_in
    if period.quarter is not None:
        return "quarterly report"
    return "annual report"


def by_document(
    order: Sequence[str], scope: Sequence[str], doc_of: Callable[[str], str]
) -> TiedRanking:
    """`order`'s chunks grouped by document in `scope`'s order: the newest routed filing, which
    also prints the year before, leads; within a document the other rankings decide."""
    groups = [tuple(c for c in order if doc_of(c) == d) for d in scope]
    return TiedRanking(tuple(group for group in groups if group))


def filled_after(
    first: list[tuple[str, float]], rest: list[tuple[str, float]], wanted: int
) -> list[tuple[str, float]]:
    """`rest`'s chunks not in `first`, scored below `first`'s last, up to `wanted` in all."""
    have = {chunk_id for chunk_id, _ in first}
    floor = min((score for _, score in first), default=1.0)
    extra = [(c, s) for c, s in rest if c not in have][: max(0, wanted - len(first))]
    top = max((s for _, s in extra), default=1.0) or 1.0
    return [(c, floor * 0.5 * s / top) for c, s in extra]
