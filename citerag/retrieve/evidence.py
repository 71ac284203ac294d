"""Soft evidence from what the question names: rankings fused beside the dense and keyword ones.

Nothing is filtered out here; each signal is one more ranking in the chunk fusion, weighted
like the others (`EvidenceWeights`; 0 switches a signal off and nothing is computed for it):

* entities: the documents that carry a stored entity the question names (capitalised there, so
  "dividend" does not name a heading's "Dividend"), rarer entities first; the ranking is the
  fused candidates of those documents, a document's candidates tied. An entity such as a company
  name stands for its whole document, not only for the chunks that print it, so within a
  document the order is unchanged and only documents move.
* years: the chunks that carry a year the question names, rarer years first.
* quotes: the chunks whose text matches a phrase the question quotes, by keywords.
* topics: the chunks that carry a LangExtract topic ("attribute=value") whose value the question
  names, rarer first (topics are stored only when ingest ran LangExtract).

Chunks the evidence cannot tell apart (the carriers of the one year named, the candidates of
the named document) share one rank (`TiedRanking`): the evidence raises them alike and leaves
their order to the other rankings. Listed one after another in the fused order, they only
repeated that order (a named report's summary pages, first already, gained the most). A value
carried by more than half of the chunks (of the documents, for entities) is no evidence: inside
one 10-K its own year is on most pages. Measured on and off on every labelled set:
benchmarks/results/kinds.md.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from citerag.enrich.fields import ENTITIES, TOPICS, YEARS
from citerag.retrieve.fusion import Ranking, TiedRanking
from citerag.retrieve.rankers import RankContext, Ranker, Stage
from citerag.settings import EvidenceWeights
from citerag.text.dates import years

# (list field, case-folded values) -> each of those values carried -> the ids of its chunks.
Carriers = Callable[[str, Sequence[str]], Mapping[str, set[str]]]
# (list field, text) -> the field's stored values the text names (`RankSource.mentions`).
Mentions = Callable[[str, str], list[str]]
KeywordSearch = Callable[[str, Collection[str] | None], list[str]]

_QUOTED = re.compile(r"[\"“”]([^\"“”]{3,200})[\"“”]")
MIN_QUOTED_WORDS = 2
MAX_SHARE = 0.5  # a value carried by more of the chunks (or documents) than this is no evidence
_NOTHING = TiedRanking(())


@dataclass(frozen=True)
class CollectionView:
    """What the signals read from a collection."""

    mentions: Mentions
    carriers: Carriers
    doc_of: Callable[[str], str]
    chunk_count: int
    keyword_search: KeywordSearch


def evidence_rankings(
    question: str,
    weights: EvidenceWeights,
    view: CollectionView,
    order: Sequence[str],
    allowed: Collection[str] | None,
    limit: int,
) -> dict[str, TiedRanking]:
    """Each active signal's ranking, its first `limit` chunks (signals with nothing named are
    left out)."""
    found: dict[str, TiedRanking] = {}
    for signal in weights.active():
        ranking = _RANKERS[signal](question, view, order, allowed).head(limit)
        if ranking.groups:
            found[signal] = ranking
    return found


def named_entities(question: str, mentions: Sequence[str]) -> list[str]:
    """Of the stored entities the question names (`mentions`), those written with a capital
    there; case-folded."""
    folded = question.casefold()
    named = []
    for value in mentions:
        at = folded.find(value.casefold())
        if at >= 0 and question[at : at + 1].isupper():
            named.append(value.casefold())
    return named


def quoted_phrases(question: str) -> list[str]:
    return [q for q in _QUOTED.findall(question) if len(q.split()) >= MIN_QUOTED_WORDS]


def _by_entities(
    question: str, view: CollectionView, order: Sequence[str], allowed: Collection[str] | None
) -> TiedRanking:
    values = named_entities(question, view.mentions(ENTITIES, question))
    if not values:
        return _NOTHING
    chunks_of = view.carriers(ENTITIES, values)
    docs_of = {v: {view.doc_of(c) for c in chunks_of.get(v, ())} for v in values}
    all_docs = {view.doc_of(c) for c in order}.union(*docs_of.values())
    doc_score = _rarity_sums(docs_of.values(), len(all_docs))
    position = {c: i for i, c in enumerate(order)}
    score = {c: doc_score[view.doc_of(c)] for c in order if view.doc_of(c) in doc_score}
    return TiedRanking.by_score(sorted(score, key=lambda c: (-score[c], position[c])), score)


def _by_years(
    question: str, view: CollectionView, order: Sequence[str], allowed: Collection[str] | None
) -> TiedRanking:
    return _carriers(years(question), YEARS, view, order, allowed)


def _by_topics(
    question: str, view: CollectionView, order: Sequence[str], allowed: Collection[str] | None
) -> TiedRanking:
    topics = [topic.casefold() for topic in view.mentions(TOPICS, question)]
    return _carriers(topics, TOPICS, view, order, allowed)


def _by_quotes(
    question: str, view: CollectionView, order: Sequence[str], allowed: Collection[str] | None
) -> TiedRanking:
    ranking: list[str] = []
    for phrase in quoted_phrases(question):
        ranking += [c for c in view.keyword_search(phrase, allowed) if c not in ranking]
    return TiedRanking.untied(ranking)


def _carriers(
    values: Sequence[str],
    field: str,
    view: CollectionView,
    order: Sequence[str],
    allowed: Collection[str] | None,
) -> TiedRanking:
    """Chunks carrying any of `values`, by the summed rarity of those they carry; chunks of one
    rarity tie (listed in `order`, then by id, for the cut at the limit)."""
    if not values:
        return _NOTHING
    chunks_of = view.carriers(field, values)
    carriers = [chunks_of.get(v, set()) for v in values]
    scores = _rarity_sums(carriers, view.chunk_count)
    if allowed is not None:
        scores = {c: s for c, s in scores.items() if c in allowed}
    position = {chunk_id: i for i, chunk_id in enumerate(order)}
    last = len(position)
    ordered = sorted(scores, key=lambda c: (-scores[c], position.get(c, last), c))
    return TiedRanking.by_score(ordered, scores)


def _rarity_sums(groups: Iterable[set[str]], total: int) -> dict[str, float]:
    """Each member's summed rarity over the groups it is in: log(1 + total / group size). A
    value most of the collection carries (a 10-K's own year in that 10-K) tells nothing."""
    scores: dict[str, float] = defaultdict(float)
    for group in groups:
        if group and len(group) <= MAX_SHARE * total:
            rarity = math.log(1 + total / len(group))
            for member in group:
                scores[member] += rarity
    return dict(scores)


Signal = Callable[[str, CollectionView, Sequence[str], Collection[str] | None], TiedRanking]
_RANKERS: dict[str, Signal] = {
    "entities": _by_entities,
    "years": _by_years,
    "quotes": _by_quotes,
    "topics": _by_topics,
}


class EvidenceRanker(Ranker):
    """One evidence signal as a ranker: its first `limit` chunks, ranked in the candidates'
    fused order where the evidence ties them."""

    stage: ClassVar[Stage] = Stage.EVIDENCE

    def rank(self, context: RankContext) -> Ranking:
        source, limit = context.source, context.limit

        def keyword_search(text: str, among: Collection[str] | None) -> list[str]:
            return source.keyword_hits("chunk", text, limit, among)

        view = CollectionView(
            source.mentions,
            source.carriers,
            lambda chunk_id: source.place(chunk_id).doc_id,
            source.chunk_count,
            keyword_search,
        )
        signal = _RANKERS[self.name]
        return signal(context.question, view, context.order, context.allowed).head(limit)


class EntityEvidence(EvidenceRanker):
    name: ClassVar[str] = "entities"


class YearEvidence(EvidenceRanker):
    name: ClassVar[str] = "years"


class QuoteEvidence(EvidenceRanker):
    name: ClassVar[str] = "quotes"


class TopicEvidence(EvidenceRanker):
    name: ClassVar[str] = "topics"
