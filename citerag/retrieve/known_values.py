"""A snapshot's distinct values of the counted list fields (`doc_state.COUNTED_FIELDS`: the
entities and topics a question may name), as written: per value, how many of the snapshot's
documents carry it, built once and carried to the next snapshot by the documents that changed.
A change copies this table (its cost grows with the collection's vocabulary, not its chunks);
which chunks carry a value is the docstore's to say (`DocStore.chunks_carrying`)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from citerag.retrieve.doc_state import DocState

ValueCounts = dict[str, int]  # value as written -> documents that carry it


def value_counts(docs: Iterable[DocState], key: str) -> ValueCounts:
    counts: dict[str, int] = defaultdict(int)
    for doc in docs:
        for value in doc.values.get(key, ()):
            counts[value] += 1
    return dict(counts)


def moved_counts(
    counts: ValueCounts, key: str, gone: list[DocState], came: list[DocState]
) -> ValueCounts:
    """`counts` without `gone`'s documents and with `came`'s. A copy: the older snapshot may
    still be answering a question."""
    moved = dict(counts)
    for doc in gone:
        for value in doc.values.get(key, ()):
            moved[value] -= 1
            if not moved[value]:
                del moved[value]
    for doc in came:
        for value in doc.values.get(key, ()):
            moved[value] = moved.get(value, 0) + 1
    return moved
