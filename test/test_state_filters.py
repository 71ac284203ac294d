"""Filters on enrichment lists read from the collection state's inverted indexes give exactly
what checking every chunk's place gives, for every operator the indexes serve and for the ones
they hand back to the scan."""

from __future__ import annotations

import random

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)

from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.doc_state import DocState, Place
from citerag.retrieve.filters import matches

YEARS = ["2019", "2020", "2021"]
NAMES = ["Netflix", "Microsoft", "Paul Graham", "Viaweb"]


def _state(seed: int) -> CollectionState:
    rng = random.Random(seed)
    docs = {}
    for d in range(3):
        places = {
            f"d{d}-c{c}": {
                "doc_id": f"d{d}",
                "page": c // 3 + 1,
                "years": rng.sample(YEARS, rng.randint(0, 2)),
                "entities": [n.upper() if rng.random() < 0.3 else n for n in rng.sample(NAMES, 2)],
            }
            for c in range(30)
        }
        held = {chunk_id: Place.of(where) for chunk_id, where in places.items()}
        docs[f"d{d}"] = DocState(f"d{d}", 1.0, held, (), {}, frozenset())
    return CollectionState("c", docs, keywords=None)  # type: ignore[arg-type]


FILTERS = [
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["2020"], operator=FilterOperator.ANY)]
    ),
    MetadataFilters(
        filters=[
            MetadataFilter(key="years", value=["2019", "2021"], operator=FilterOperator.ANY),
            MetadataFilter(key="entities", value="netflix", operator=FilterOperator.EQ),
        ],
        condition=FilterCondition.AND,
    ),
    MetadataFilters(
        filters=[
            MetadataFilter(
                key="entities", value=["Viaweb", "Paul Graham"], operator=FilterOperator.ALL
            )
        ]
    ),
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["1999"], operator=FilterOperator.IN)]
    ),
    # Not served by the indexes: the scan answers.
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["2020"], operator=FilterOperator.NIN)]
    ),
    MetadataFilters(filters=[MetadataFilter(key="page", value=3, operator=FilterOperator.LTE)]),
    MetadataFilters(
        filters=[
            MetadataFilter(key="years", value=["2020"], operator=FilterOperator.ANY),
            MetadataFilter(key="entities", value=["Netflix"], operator=FilterOperator.ANY),
        ],
        condition=FilterCondition.OR,
    ),
]


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("filters", FILTERS)
def test_indexed_filters_match_what_a_scan_matches(seed: int, filters: MetadataFilters) -> None:
    state = _state(seed)
    scanned = {cid for cid, place in state.places.items() if matches(place, filters)}
    assert state.matching(filters) == scanned
    pool = set(list(state.places)[::2])
    assert state.matching(filters, pool) == scanned & pool


def test_a_year_filter_matches_case_blind_and_only_chunks_that_hold_it() -> None:
    state = _state(7)
    found = state.matching(
        MetadataFilters(
            filters=[MetadataFilter(key="entities", value="NETFLIX", operator=FilterOperator.EQ)]
        )
    )
    assert found
    assert all("netflix" in {e.casefold() for e in state.places[c]["entities"]} for c in found)


def _doc(doc_id: str, seed: int, version: float = 1.0) -> DocState:
    rng = random.Random(seed)
    places = {
        f"{doc_id}-c{c}": {
            "doc_id": doc_id,
            "page": c + 1,
            "years": rng.sample(YEARS, rng.randint(0, 2)),
            "entities": [n.upper() if rng.random() < 0.3 else n for n in rng.sample(NAMES, 2)],
        }
        for c in range(rng.randint(5, 20))
    }
    held = {chunk_id: Place.of(where) for chunk_id, where in places.items()}
    return DocState(doc_id, version, held, (), {}, frozenset())


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_change_moves_the_value_indexes_to_what_a_fresh_state_builds(seed: int) -> None:
    """Adding, replacing and dropping documents updates the inverted indexes and the known
    values by delta (a pass over every chunk took over a second at 100k chunks); the result
    is what a state built from nothing holds, and the older snapshot is left as it was."""
    before = CollectionState(
        "c",
        {d: _doc(d, seed + i) for i, d in enumerate(("a", "b", "c"))},
        keywords=None,  # type: ignore[arg-type]
    )
    old_index = {key: before.value_index(key) for key in ("years", "entities")}
    old_known = before.known_values("entities")
    snapshot = {key: {v: set(ids) for v, ids in index.items()} for key, index in old_index.items()}

    replaced, added = _doc("b", seed + 10, version=2.0), _doc("d", seed + 20)
    after = before.with_changes([replaced, added], ["b", "c"])

    for key in ("years", "entities"):  # held by the snapshot since it was made, not per call
        assert after.value_index(key) is after.value_index(key)
    fresh = CollectionState("c", dict(after.docs), keywords=None)  # type: ignore[arg-type]
    for key in ("years", "entities"):
        assert after.value_index(key) == fresh.value_index(key)
        assert before.value_index(key) == snapshot[key]  # copied on write
    assert after.known_values("entities") == fresh.known_values("entities")
    assert before.known_values("entities") == old_known
