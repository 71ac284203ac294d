"""Which document of a snapshot holds a chunk or a page, found through the id's document prefix,
so that a change to the collection costs work in the documents it touches, not in its chunks.

The chunker names a chunk `{doc_id[:16]}-{number}` (a figure description
`{doc_id[:16]}-fig-...`) and a page `{doc_id[:16]}-page{number}`
(`citerag.nodes.page_vector_key`): the lookup keeps, per 16-character document prefix, the ids
of the documents that have it (one, unless two ids share their first 16 characters), reads the
prefix back from the chunk or page id, and asks those documents. A document whose chunk ids do
not start with its prefix (ids made elsewhere) has its chunks in a plain chunk id -> document id
table instead, copied on each change (empty for the chunker's ids).
"""

from __future__ import annotations

from collections.abc import Collection, ItemsView, Iterable, Iterator, Mapping, ValuesView

from citerag.retrieve.doc_state import DocState
from citerag.retrieve.place import Place

PAGE_MARK = "-page"  # between a page id's document prefix and its number


class DocIndex:
    """A snapshot's documents (in id order) and the lookup from chunk and page ids to them.
    Never changed once made: `moved` gives the next snapshot's."""

    __slots__ = ("_loose", "_owners", "chunks", "docs", "key_pages", "pages")

    def __init__(
        self,
        docs: Mapping[str, DocState],
        owners: dict[str, tuple[str, ...]],
        loose: dict[str, str],
        counts: tuple[int, int, int] = (0, 0, 0),
    ) -> None:
        self.docs = docs
        self._owners = owners  # id prefix -> the documents using it
        self._loose = loose  # chunk id -> document id, for chunk ids with no common prefix
        self.chunks, self.pages, self.key_pages = counts

    @classmethod
    def built(cls, docs: Mapping[str, DocState]) -> DocIndex:
        return cls({}, {}, {}).moved(docs, (), list(docs.values()))

    def moved(
        self, docs: Mapping[str, DocState], gone: Iterable[DocState], came: Iterable[DocState]
    ) -> DocIndex:
        """The lookup of `docs`: this one less `gone`'s documents, with `came`'s. A copy of the
        prefix table (one entry per document), not a pass over every chunk."""
        owners = dict(self._owners)
        loose = self._loose
        chunks, pages, key_pages = self.chunks, self.pages, self.key_pages
        for doc in gone:
            prefix = doc.doc_id[:16]
            kept = tuple(d for d in owners.get(prefix, ()) if d != doc.doc_id)
            if kept:
                owners[prefix] = kept
            else:
                owners.pop(prefix, None)
            if not doc.chunks_by_prefix:
                loose = dict(loose) if loose is self._loose else loose
                for chunk_id in doc.places:
                    loose.pop(chunk_id, None)
            chunks, pages = chunks - len(doc.places), pages - len(doc.pages)
            key_pages -= len(doc.statement_kinds)
        for doc in came:
            prefix = doc.doc_id[:16]
            owners[prefix] = (*owners.get(prefix, ()), doc.doc_id)
            if not doc.chunks_by_prefix:
                loose = dict(loose) if loose is self._loose else loose
                loose.update(dict.fromkeys(doc.places, doc.doc_id))
            chunks, pages = chunks + len(doc.places), pages + len(doc.pages)
            key_pages += len(doc.statement_kinds)
        return DocIndex(docs, owners, loose, (chunks, pages, key_pages))

    def doc_of_chunk(self, chunk_id: str) -> DocState | None:
        # The prefix is the id's first 16 characters, or, for a shorter document id (which
        # then holds no "-"), what comes before the first "-".
        head = chunk_id[:16]
        for prefix in (head, head.partition("-")[0]):
            for doc_id in self._owners.get(prefix, ()):
                doc = self.docs[doc_id]
                if chunk_id in doc.places:
                    return doc
        found = self._loose.get(chunk_id)
        return None if found is None else self.docs[found]

    def shown(self, chunk_ids: Iterable[str]) -> set[str]:
        """Those of `chunk_ids` that this snapshot's documents hold: `doc_of_chunk` for many
        ids at once (a value's carriers, thousands at a time), one dictionary look-up each
        where the chunk id starts with its document's prefix."""
        owners, docs = self._owners, self.docs
        found = set()
        for chunk_id in chunk_ids:
            owning = owners.get(chunk_id[:16], ())
            one = len(owning) == 1 and chunk_id in docs[owning[0]].places
            if one or self.doc_of_chunk(chunk_id) is not None:
                found.add(chunk_id)
        return found

    def doc_of_page(self, page_id: str) -> DocState | None:
        for doc_id in self._owners.get(page_id.rpartition(PAGE_MARK)[0], ()):
            doc = self.docs[doc_id]
            if doc.page_row(page_id) is not None:
                return doc
        return None


class Places(Mapping[str, Place]):
    """Chunk id -> place over every document, iterated in document-id order."""

    def __init__(self, index: DocIndex) -> None:
        self._index = index

    def __getitem__(self, chunk_id: str) -> Place:
        doc = self._index.doc_of_chunk(chunk_id)
        if doc is None:
            raise KeyError(chunk_id)
        return doc.places[chunk_id]

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self._index.doc_of_chunk(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        for doc in self._index.docs.values():
            yield from doc.places

    def __len__(self) -> int:
        return self._index.chunks

    def values(self) -> ValuesView[Place]:
        return _PlaceValues(self)

    def items(self) -> ItemsView[str, Place]:
        return _PlaceItems(self)

    def per_document(self) -> Iterator[Mapping[str, Place]]:
        for doc in self._index.docs.values():
            yield doc.places


class _PlaceValues(ValuesView[Place]):
    """Read document by document, not looked up chunk by chunk."""

    _mapping: Places

    def __iter__(self) -> Iterator[Place]:
        for places in self._mapping.per_document():
            yield from places.values()


class _PlaceItems(ItemsView[str, Place]):
    _mapping: Places

    def __iter__(self) -> Iterator[tuple[str, Place]]:
        for places in self._mapping.per_document():
            yield from places.items()


class PageIds(Collection[str]):
    """The ids of every page of the snapshot's documents."""

    def __init__(self, index: DocIndex) -> None:
        self._index = index

    def __contains__(self, page_id: object) -> bool:
        return isinstance(page_id, str) and self._index.doc_of_page(page_id) is not None

    def __iter__(self) -> Iterator[str]:
        for doc in self._index.docs.values():
            yield from doc.page_ids()

    def __len__(self) -> int:
        return self._index.pages


class KeyPages(Mapping[str, str]):
    """The domain's key pages (a filing's statements): page id -> the kind its title names."""

    def __init__(self, index: DocIndex) -> None:
        self._index = index

    def __getitem__(self, page_id: str) -> str:
        doc = self._index.doc_of_page(page_id)
        if doc is None:
            raise KeyError(page_id)
        return doc.statement_kinds[page_id]

    def __iter__(self) -> Iterator[str]:
        for doc in self._index.docs.values():
            yield from doc.statement_kinds

    def __len__(self) -> int:
        return self._index.key_pages
