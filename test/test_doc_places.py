"""A document's places held as columns read exactly as the places themselves: every chunk id, in
chunk order, with its place and page; an id that is not the document's is not found."""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from citerag.retrieve.doc_places import PlacesBuilder
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import Place, place_texts

DOC = "0123456789abcdef0123"  # a content hash's first characters, as ingest names documents
PREFIX = DOC[:16] + "-"


def reference(rows: list[tuple[str, int, dict[str, object]]]) -> dict[str, Place]:
    """The places as one object per chunk, read by `Place.of` from each chunk's metadata."""
    keys: dict[int, PageKey] = {}
    return {
        chunk_id: Place.of(held, keys.setdefault(page, PageKey(DOC, page)))
        for chunk_id, page, held in rows
    }


def metadata(rng: random.Random, page: int) -> dict[str, object]:
    held: dict[str, object] = {"doc_id": DOC, "doc_name": "report.pdf", "page": page}
    if rng.random() < 0.7:
        held["section"] = rng.choice(["1 Risks", "2 Results > 2.1 Revenue", ""])
    held["block_type"] = rng.choice(["text", "table", "figure", None])
    if rng.random() < 0.3:
        held["label"] = rng.choice(["Table 3", "Figure 1"])
    if rng.random() < 0.5:
        held["page_label"] = rng.choice(["F-4", "iv", ""])
    return held


def chunk_ids(rng: random.Random, count: int) -> list[str]:
    """The chunker's ids from a random first number, then figure descriptions; sometimes ids
    made elsewhere, or a gap in the numbers."""
    first = rng.choice([0, 0, 7])
    ids = [f"{PREFIX}{first + i:05d}" for i in range(count)]
    if rng.random() < 0.3 and count > 3:
        ids[count // 2] = f"{PREFIX}{first + count + 50:05d}"  # numbers not in a row
    if rng.random() < 0.2:
        ids = [f"made-elsewhere-{i}" for i in range(count)]
    return ids + [f"{PREFIX}fig-{p:04d}-0" for p in range(rng.randint(0, 2))]


@pytest.mark.parametrize("seed", range(40))
def test_columns_read_as_the_places_they_hold(seed: int) -> None:
    rng = random.Random(seed)
    ids = chunk_ids(rng, rng.randint(0, 30))
    pages = sorted(rng.randint(1, 12) for _ in ids)
    if seed % 2:  # a page's chunks need not follow one another (a figure read at the end)
        rng.shuffle(pages)
    rows = [
        (chunk_id, page, metadata(rng, page)) for chunk_id, page in zip(ids, pages, strict=True)
    ]
    built = PlacesBuilder(DOC)
    for chunk_id, page, held in rows:
        built.add(chunk_id, page, place_texts(held))
    places = built.built()
    keys = places.pages
    expected = reference(rows)
    assert list(places) == list(expected), "every id, in chunk order"
    assert len(places) == len(expected)
    assert dict(places.items()) == expected
    assert list(places.values()) == list(expected.values())
    for chunk_id, place in expected.items():
        assert chunk_id in places and places[chunk_id] == place
    on_page: dict[PageKey, list[str]] = defaultdict(list)
    for chunk_id, place in expected.items():
        on_page[place.page_key] = [*on_page[place.page_key], chunk_id]
    assert keys == tuple(on_page), "page keys in order of first appearance"
    for key, on in on_page.items():
        assert [places.id_at(r) for r in places.rows_on(keys.index(key))] == on


@pytest.mark.parametrize(
    "asked",
    [
        f"{PREFIX}7",  # the number without the chunker's padding
        f"{PREFIX}000003",  # padded once too often
        f"{PREFIX}00030",  # past the last chunk
        f"{PREFIX}-0003",
        f"{PREFIX}٠٠٠٠٣",  # digits of another script
        "fedcba9876543210-00003",  # another document's prefix
        f"{PREFIX}fig-0009-0",
        "",
    ],
)
def test_an_id_the_document_does_not_hold_is_not_found(asked: str) -> None:
    built = PlacesBuilder(DOC)
    for i in range(10):
        built.add(f"{PREFIX}{i:05d}", 1, (DOC, "report.pdf", None, "text", None, None))
    built.add(f"{PREFIX}fig-0001-0", 1, (DOC, "report.pdf", None, "figure", None, None))
    places = built.built()
    assert f"{PREFIX}00003" in places and f"{PREFIX}fig-0001-0" in places
    assert asked not in places
    with pytest.raises(KeyError):
        places[asked]


def test_a_page_id_is_read_back_into_its_row_and_no_other_is() -> None:
    built = PlacesBuilder(DOC)
    for i, page in enumerate([3, 3, 1, 12]):
        built.add(f"{PREFIX}{i:05d}", page, (DOC, "report.pdf", None, "text", None, None))
    places = built.built()
    pages = places.pages
    assert [key.page for key in pages] == [3, 1, 12]
    assert [pages.row_of(PageKey(DOC, n).id) for n in (3, 1, 12)] == [0, 1, 2]
    assert list(pages.ids()) == [PageKey(DOC, n).id for n in (3, 1, 12)]
    other = "fedcba9876543210fedc"
    for asked in (PageKey(DOC, 2).id, PageKey(other, 3).id, PageKey(DOC, 3).id + "0", "", "x"):
        assert pages.row_of(asked) is None, asked
    assert places[f"{PREFIX}00003"].page_key == PageKey(DOC, 12)
