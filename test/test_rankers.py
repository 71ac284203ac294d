"""Rankers by name: a ranker registered from outside is run by every retriever made after, a
setting switches any ranker off by its name, and switching one off changes nothing else."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import numpy as np
import pytest
from llama_index.core.schema import QueryBundle
from llama_index.core.vector_stores.types import FilterOperator, MetadataFilter, MetadataFilters
from state_helpers import stored_state
from test_evidence import DENSE, DIM, Docstore, Keywords, Vectors, place

import config
from citerag.enrich.fields import LIST_FIELDS
from citerag.errors import ConfigError
from citerag.nodes import PAGE_LABEL
from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.fusion import Ranking
from citerag.retrieve.hybrid import HybridRanking, HybridRetriever
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import PLACE_KEYS, Place
from citerag.retrieve.ranker_set import BUILT_IN, ranker_classes
from citerag.retrieve.rankers import RankContext, Ranker, Stage, register_ranker, unregister_ranker
from citerag.settings import RetrievalSettings, settings_from_config

PLACES = {
    "other-1": place("other", 1),
    "other-2": place("other", 2, years=["2019"]),
    "acme-1": place("acme", 1, entities=["Acme Corp"]),
    "acme-2": place("acme", 2, years=["2019"]),
    "acme-3": place("acme", 3, years=["2020"]),
}
QUESTION = "Did Acme Corp grow in 2020?"


def state() -> CollectionState:
    return stored_state(PLACES, Keywords(["other-2", "acme-2", "other-1"]))  # type: ignore[arg-type]


class Sentences(Docstore):
    """Each chunk's one sentence vector, a different one per chunk."""

    def get_sentence_vectors(self, collection: str, ids: Sequence[str]) -> dict[str, Any]:
        rows = np.random.default_rng(7).normal(size=(len(PLACES), DIM)).astype(np.float32)
        rows /= np.linalg.norm(rows, axis=1, keepdims=True)
        vectors = {c: rows[i : i + 1] for i, c in enumerate(PLACES)}
        return {c: vectors[c] for c in ids if c in vectors}


def ranked(settings: RetrievalSettings, snapshot: CollectionState | None = None) -> HybridRanking:
    retriever = HybridRetriever(
        Vectors(DENSE),  # type: ignore[arg-type]
        Sentences(),  # type: ignore[arg-type]
        snapshot or state(),
        embed_model=None,  # type: ignore[arg-type]
        settings=settings,
    )
    return retriever.rank(QueryBundle(QUESTION, embedding=list(np.ones(DIM))))


class LastFirst(Ranker):
    """A ranker from outside the package: the candidates in reverse."""

    name: ClassVar[str] = "last_first"
    stage: ClassVar[Stage] = Stage.EVIDENCE
    asked: ClassVar[list[tuple[str, list[str]]]] = []  # (question, candidates' order)

    def rank(self, context: RankContext) -> Ranking:
        LastFirst.asked.append((context.question, context.order))
        return list(reversed(context.order))


@pytest.fixture
def last_first() -> Iterator[type[LastFirst]]:
    register_ranker(LastFirst)
    LastFirst.asked.clear()
    yield LastFirst
    unregister_ranker(LastFirst.name)


def test_a_registered_ranker_is_run_by_name_and_switched_off_by_the_setting(
    last_first: type[LastFirst],
) -> None:
    without = ranked(RetrievalSettings(disabled_rankers=("last_first",)))
    assert last_first.asked == []  # disabled: never asked
    with_it = ranked(RetrievalSettings())
    [(question, order)] = last_first.asked
    assert question == QUESTION and order
    assert "last_first" in ranker_classes()
    assert with_it.rankings["last_first"] == list(reversed(order))
    assert with_it.evidence["last_first"] == with_it.rankings["last_first"]
    assert [c for c, _ in with_it.fused] != [c for c, _ in without.fused]  # it counts
    unregister_ranker(last_first.name)
    assert ranked(RetrievalSettings()) == without  # off by setting is the same as never added


def test_a_registered_ranker_cannot_take_a_taken_name(last_first: type[LastFirst]) -> None:
    with pytest.raises(ValueError, match="last_first"):
        register_ranker(last_first)

    class Dense(LastFirst):
        name: ClassVar[str] = "dense"

    register_ranker(Dense)
    try:
        with pytest.raises(ConfigError, match="'dense' like a built-in"):
            ranked(RetrievalSettings())
    finally:
        unregister_ranker("dense")


EVIDENCE = {"entities", "years", "quotes", "topics"}


@pytest.mark.parametrize(
    ("name", "by_weight", "unread"),
    [  # unread: the rankings that do not read the fused order the disabled one moves
        ("best_sentence", {"sentence_weight": 0.0}, {"dense", "keyword"}),
        ("years", {"evidence_years": 0.0}, {"dense", "keyword", *EVIDENCE}),
        ("entities", {"evidence_entities": 0.0}, {"dense", "keyword", *EVIDENCE}),
    ],
)
def test_disabling_a_built_in_ranker_is_its_weight_at_zero_and_changes_nothing_else(
    name: str, by_weight: dict[str, object], unread: set[str]
) -> None:
    default = ranked(RetrievalSettings())
    disabled = ranked(RetrievalSettings(disabled_rankers=(name,)))
    assert disabled == ranked(RetrievalSettings(**by_weight))  # type: ignore[arg-type]
    assert name in default.rankings and name not in disabled.rankings
    # Every other ranking of its stage and the stages before is what it was; what reads the
    # fused order after it (a later stage) follows the order.
    kept = (unread | {"best_sentence"}) - {name}
    assert {k: v for k, v in disabled.rankings.items() if k in kept} == {
        k: v for k, v in default.rankings.items() if k in kept
    }


def test_every_ranker_but_dense_disabled_leaves_the_dense_order() -> None:
    others = tuple(ranker.name for ranker in BUILT_IN if ranker.name != "dense")
    only_dense = ranked(RetrievalSettings(disabled_rankers=others, page_weight=0.0))
    visible = [c for c in DENSE if c in PLACES]
    assert [c for c, _ in only_dense.fused] == visible
    assert set(only_dense.rankings) == {"dense"}


def test_an_unknown_ranker_name_is_a_sentence_listing_the_names() -> None:
    with pytest.raises(ConfigError, match="'dnse'.*dense, keyword, best_sentence"):
        ranked(RetrievalSettings(disabled_rankers=("dnse",)))


def test_the_environment_disables_rankers_by_comma_separated_names() -> None:
    environ = {"DISABLED_RANKERS": "years, best_sentence,"}
    settings = settings_from_config(config, environ=environ)
    assert settings.retrieval.disabled_rankers == ("years", "best_sentence")
    overridden = settings.with_overrides(disabled_rankers=("quotes",))
    assert overridden.retrieval.disabled_rankers == ("quotes",)


def test_questions_leave_the_snapshot_as_it_was_made() -> None:
    """Every index is built when the snapshot is made: questions on other threads read it and
    write nothing into it."""
    snapshot = state()
    held = dict(vars(snapshot))
    ranked(RetrievalSettings(), snapshot)
    year = MetadataFilter(key="years", value=["2019"], operator=FilterOperator.ANY)
    assert snapshot.matching(MetadataFilters(filters=[year])) == {"other-2", "acme-2"}
    assert vars(snapshot).keys() == held.keys()
    assert all(vars(snapshot)[key] is value for key, value in held.items())
    place_of = snapshot.places["acme-2"]
    with pytest.raises(dataclasses.FrozenInstanceError):
        place_of.page = 3  # type: ignore[misc]
    assert place_of.page_key == PageKey("acme", 2)


def test_a_place_holds_its_place_keys_and_no_enrichment_list() -> None:
    """Filters name a place's keys as the chunk metadata does; each is a field. The lists stay
    in the docstore, so a process's snapshot holds none of their values."""
    keys = {*PLACE_KEYS, PAGE_LABEL}
    assert {f.name for f in dataclasses.fields(Place)} == keys | {"page_key"}
    assert not keys & set(LIST_FIELDS)
    held = Place.of({"doc_id": "d", "page": 4, "section": "Risk", "years": ["2020"]})
    assert {key: held[key] for key in ("doc_id", "page", "section")} == {
        "doc_id": "d",
        "page": 4,
        "section": "Risk",
    }
    assert "years" not in held and not hasattr(held, "years")
    assert "page_label" not in dict(held) and held.get("page_label") is None
    with pytest.raises(KeyError):
        held["page_key"]
