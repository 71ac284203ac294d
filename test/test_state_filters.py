"""Filters on enrichment lists, answered from the docstore's value table (the snapshot holds no
chunk's lists), give exactly what checking every chunk's metadata gives, for every operator and
condition, and follow a change as a fresh snapshot does."""

from __future__ import annotations

import random

import pytest
from llama_index.core.vector_stores.types import (
    FilterCondition,
    FilterOperator,
    MetadataFilter,
    MetadataFilters,
)
from state_helpers import memory_docstore, stored_doc, stored_state

from citerag.retrieve.collection_state import CollectionState
from citerag.retrieve.doc_state import DocState
from citerag.retrieve.filters import matches
from citerag.store.sqlite_docstore import SQLiteDocStore

YEARS = ["2019", "2020", "2021"]
NAMES = ["Netflix", "Microsoft", "Paul Graham", "Viaweb"]


Metadata = dict[str, dict[str, object]]  # chunk id -> its metadata, lists included


def _metadata(seed: int) -> Metadata:
    rng = random.Random(seed)
    return {
        f"d{d}-c{c}": {
            "doc_id": f"d{d}",
            "page": c // 3 + 1,
            "years": rng.sample(YEARS, rng.randint(0, 2)),
            "entities": [n.upper() if rng.random() < 0.3 else n for n in rng.sample(NAMES, 2)],
        }
        for d in range(3)
        for c in range(30)
    }


def _scanned(metadata: Metadata, filters: MetadataFilters) -> set[str]:
    return {chunk_id for chunk_id, held in metadata.items() if matches(held, filters)}


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
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["2020"], operator=FilterOperator.NIN)]
    ),
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["2020", "2019"], operator=FilterOperator.NE)]
    ),
    MetadataFilters(
        filters=[MetadataFilter(key="entities", value="GRAH", operator=FilterOperator.TEXT_MATCH)]
    ),
    MetadataFilters(filters=[MetadataFilter(key="years", value=[], operator=FilterOperator.EQ)]),
    MetadataFilters(
        filters=[
            MetadataFilter(key="page", value=5, operator=FilterOperator.GTE),
            MetadataFilters(
                filters=[
                    MetadataFilter(key="years", value=["2021"], operator=FilterOperator.IN),
                    MetadataFilter(key="entities", value=["viaweb"], operator=FilterOperator.NIN),
                ],
                condition=FilterCondition.OR,
            ),
        ],
    ),
    MetadataFilters(
        filters=[MetadataFilter(key="years", value=["2020"], operator=FilterOperator.ANY)],
        condition=FilterCondition.NOT,
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
def test_list_filters_match_what_a_scan_of_the_metadata_matches(
    seed: int, filters: MetadataFilters
) -> None:
    metadata = _metadata(seed)
    state = stored_state(metadata)
    scanned = _scanned(metadata, filters)
    assert state.matching(filters) == scanned
    pool = set(list(state.places)[::2])
    assert state.matching(filters, pool) == scanned & pool


def test_an_entity_filter_matches_case_blind_and_only_chunks_that_hold_it() -> None:
    metadata = _metadata(7)
    found = stored_state(metadata).matching(
        MetadataFilters(
            filters=[MetadataFilter(key="entities", value="NETFLIX", operator=FilterOperator.EQ)]
        )
    )
    assert found
    assert all("netflix" in {str(e).casefold() for e in metadata[c]["entities"]} for c in found)  # type: ignore[attr-defined]


def _doc(docstore: SQLiteDocStore, doc_id: str, seed: int, version: float = 1.0) -> DocState:
    rng = random.Random(seed)
    places = {
        f"{doc_id}-c{c}": {
            "doc_id": doc_id,
            "page": c + 1,
            "years": rng.sample(YEARS, rng.randint(0, 2)),
            "entities": [n.upper() if rng.random() < 0.3 else n for n in rng.sample(NAMES, 2)],
            "topics": [f"product={n}" for n in rng.sample(NAMES, 1)],
        }
        for c in range(rng.randint(5, 20))
    }
    return stored_doc(docstore, doc_id, places, version)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_change_moves_filters_and_known_values_to_what_a_fresh_state_gives(seed: int) -> None:
    """Adding, replacing and dropping documents updates the known values by delta (a pass over
    every chunk took over a second at 100k chunks); filters and known values are what a state
    built from nothing gives, and the older snapshot keeps its own known values."""
    docstore = memory_docstore()
    docs = {d: _doc(docstore, d, seed + i) for i, d in enumerate(("a", "b", "c"))}
    before = CollectionState("c", docs, None, docstore)  # type: ignore[arg-type]
    old_known = before.known_values("topics")

    replaced, added = _doc(docstore, "b", seed + 10, version=2.0), _doc(docstore, "d", seed + 20)
    docstore.delete_document("c", "c")
    after = before.with_changes([replaced, added], ["b", "c"])

    fresh = CollectionState("c", dict(after.docs), None, docstore)  # type: ignore[arg-type]
    for filters in FILTERS:
        assert after.matching(filters) == fresh.matching(filters)
    carried = set().union(*after.carriers("years", YEARS).values())
    assert carried and not any(chunk_id.startswith("c-") for chunk_id in carried)
    assert after.known_values("topics") == fresh.known_values("topics")
    assert after.known_values("topics") is after.known_values("topics")
    assert before.known_values("topics") == old_known
    # Entity names are looked up in the docstore: those of the documents it still holds.
    question = " and ".join(name.upper() for name in NAMES)
    held = {
        str(name).casefold()
        for doc_id in after.docs
        for place in docstore.chunk_metadata("c", doc_id, ["entities"])
        for name in place.metadata.get("entities", [])
    }
    named = after.mentions("entities", question)
    assert held and {name.casefold() for name in named} == held
    assert all(name in question for name in named)
