"""A snapshot's inverted indexes of list fields (value -> the chunks that carry it) and counts of
their distinct values, built once and carried to the next snapshot by the documents that
changed. A change copies the table of distinct values (not the chunk sets it leaves alone): the
cost grows with the collection's vocabulary, not with its chunks."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from citerag.retrieve.doc_state import DocState

ValueIndex = dict[str, set[str]]  # case-folded value -> ids of the chunks that carry it
ValueCounts = dict[str, int]  # value as written -> chunks that carry it


def carried(docs: Iterable[DocState], key: str) -> Iterator[tuple[str, str]]:
    """(chunk id, value as written) for every value of list field `key` in `docs`' chunks."""
    for doc in docs:
        for chunk_id, place in doc.places.items():
            for value in place[key]:
                yield chunk_id, str(value)


def value_index(docs: Iterable[DocState], key: str) -> ValueIndex:
    index: dict[str, set[str]] = defaultdict(set)
    for chunk_id, value in carried(docs, key):
        index[value.casefold()].add(chunk_id)
    return dict(index)


def value_counts(docs: Iterable[DocState], key: str) -> ValueCounts:
    counts: dict[str, int] = defaultdict(int)
    for _, value in carried(docs, key):
        counts[value] += 1
    return dict(counts)


def moved_values(
    values: dict[str, set[str]], key: str, gone: list[DocState], came: list[DocState]
) -> dict[str, set[str]]:
    """`values` (case-folded value -> chunk ids) without `gone`'s chunks and with `came`'s. The
    sets it changes are copied first: the older snapshot may still be answering a question."""
    moved = dict(values)
    copied: set[str] = set()

    def own(value: str) -> set[str]:
        if value not in copied:
            moved[value] = set(moved.get(value, ()))
            copied.add(value)
        return moved[value]

    for chunk_id, value in carried(gone, key):
        own(value.casefold()).discard(chunk_id)
    for chunk_id, value in carried(came, key):
        own(value.casefold()).add(chunk_id)
    for value in copied:
        if not moved[value]:
            del moved[value]
    return moved


def moved_counts(
    counts: dict[str, int], key: str, gone: list[DocState], came: list[DocState]
) -> dict[str, int]:
    """`counts` (value as written -> chunks carrying it) without `gone` and with `came`."""
    moved = dict(counts)
    for _, value in carried(gone, key):
        moved[value] -= 1
        if not moved[value]:
            del moved[value]
    for _, value in carried(came, key):
        moved[value] = moved.get(value, 0) + 1
    return moved
