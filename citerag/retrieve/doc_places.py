"""A document's chunk places held as columns, each place made when it is read.

A serving process holds a place for every chunk of its collection. As one object per chunk and
page (the place, its chunk id, a dictionary entry, a page key) that was about 0.5 KB per chunk
(47.8 MiB at 100,015 chunks of the realistic scale library), the part of a process's memory
that grew with the library. Here a chunk costs one row of seven 32-bit integers (its page's row
and the indexes of its strings in the document's table of distinct strings) and a page one
integer; the chunker's ids (`citerag.nodes.chunk_key`, numbered in chunk order) are not held
but read back into their row by arithmetic, and ids of another form (a figure's description,
ids made elsewhere) are kept in a small table of their own. With the document's own parts that
is about 0.12 KB per chunk (11.8 MiB). A `Place` and a `PageKey` are made on each read (a few
µs): a question reads tens to hundreds of them.
"""

from __future__ import annotations

import base64
import sys
from array import array
from collections.abc import ItemsView, Iterable, Iterator, Mapping, Sequence, ValuesView
from typing import Any, overload

from citerag.nodes import chunk_key, page_vector_key, page_vector_prefix
from citerag.retrieve.page_evidence import PageKey
from citerag.retrieve.place import Place, shared_text

_NONE = -1  # a place's key that holds nothing: the strings table's last entry, None
# Columns of a row: the page's row in `pages`, then the indexes of the place's strings.
_PAGE, _DOC_ID, _NAME, _SECTION, _BLOCK, _LABEL, _PAGE_LABEL = range(7)
_COLUMNS = 7


def _canonical_number(suffix: str) -> bool:
    """Whether `suffix` is a number as `chunk_key` writes it: at least five ASCII digits,
    zero-padded to five and no further."""
    size = len(suffix)
    return size >= 5 and suffix.isascii() and suffix.isdigit() and (size == 5 or suffix[0] != "0")


class DocPlaces(Mapping[str, Place]):
    """Chunk id -> place for one document, in chunk order. Never changed once made."""

    __slots__ = (
        "_first", "_head", "_numbered", "_other_rows", "_others", "_pages", "_prefix", "_rows",
        "_strings",
    )  # fmt: skip

    def __init__(
        self,
        prefix: str,
        first: int,
        numbered: int,
        others: tuple[str, ...],
        rows: array[int],
        strings: tuple[str | None, ...],
        pages: DocPages,
    ) -> None:
        self._prefix = prefix  # the chunker's ids: prefix + the chunk's number
        self._head = prefix[:-1]  # the document id's first 16 characters (`chunk_key`)
        self._first = first  # the number of the first row
        self._numbered = numbered  # rows [0, numbered) have the chunker's ids
        self._others = others  # the ids of the rows after, in order
        self._other_rows = {chunk_id: numbered + i for i, chunk_id in enumerate(others)}
        self._rows = rows  # _COLUMNS integers a chunk, row after row
        self._strings = strings  # ends with None
        self._pages = pages  # the document's page keys: a row's first column is an index here

    def row_of(self, chunk_id: str) -> int | None:
        # Asked for every chunk a question's carriers and hits name (thousands), so the test
        # that the id is the chunker's own form is on lengths, not a formatted copy.
        if chunk_id.startswith(self._prefix):
            suffix = chunk_id[len(self._prefix) :]
            if _canonical_number(suffix):
                row = int(suffix) - self._first
                if 0 <= row < self._numbered:
                    return row
        return self._other_rows.get(chunk_id)

    def parts(self) -> dict[str, object]:
        """What makes these places again with `from_parts` (the kept state's part): the rows and
        page numbers as little-endian int32 bytes, base64, so a new process reads them back
        without one Python object per chunk."""
        return {
            "first": self._first,
            "numbered": self._numbered,
            "others": list(self._others),
            "rows": _packed(self._rows),
            "strings": list(self._strings[:-1]),
            "pages": _packed(self._pages.numbers),
        }

    @classmethod
    def from_parts(cls, doc_id: str, parts: Mapping[str, Any]) -> DocPlaces:
        """The places `parts()` gave, checked: a damaged part raises ValueError or TypeError."""
        first, numbered, others = int(parts["first"]), int(parts["numbered"]), parts["others"]
        strings = tuple(shared_text(str(s)) for s in parts["strings"])
        rows, numbers = _unpacked(parts["rows"]), _unpacked(parts["pages"])
        chunks = numbered + len(others)
        if not all(isinstance(i, str) for i in others) or min(first, numbered) < 0:
            raise ValueError("damaged chunk ids")
        if len(rows) != chunks * _COLUMNS or (chunks and not numbers):
            raise ValueError(f"{len(rows)} place values for {chunks} chunks")
        pages = rows[_PAGE::_COLUMNS]
        if chunks and (min(pages) < 0 or max(pages) >= len(numbers)):
            raise ValueError("a page row past the document's pages")
        for column in range(_DOC_ID, _COLUMNS):
            at = rows[column::_COLUMNS]
            if at and (min(at) < _NONE or max(at) >= len(strings)):
                raise ValueError("a string index past the table")
        prefix = doc_id[:16] + "-"
        kept = DocPages(doc_id, numbers)
        return cls(prefix, first, numbered, tuple(others), rows, (*strings, None), kept)

    @property
    def pages(self) -> DocPages:
        return self._pages

    @property
    def others(self) -> tuple[str, ...]:
        """The ids not of the chunker's numbered form (after the numbered rows)."""
        return self._others

    def id_at(self, row: int) -> str:
        if row < self._numbered:
            return chunk_key(self._head, self._first + row)
        return self._others[row - self._numbered]

    def place_at(self, row: int) -> Place:
        at = row * _COLUMNS
        page, doc_id, name, section, block, label, page_label = self._rows[at : at + _COLUMNS]
        text = self._strings
        key = self._pages[page]  # made on each read, as the place is
        return Place(
            text[doc_id] or key.doc_id, text[name] or "", key.page, text[section], text[block],
            text[label], key, text[page_label],
        )  # fmt: skip

    def rows_on(self, page_row: int) -> list[int]:
        """The rows of the chunks on the document's page `page_row`, in chunk order."""
        pages = self._rows[_PAGE::_COLUMNS]
        return [row for row, page in enumerate(pages) if page == page_row]

    def __getitem__(self, chunk_id: str) -> Place:
        row = self.row_of(chunk_id)
        if row is None:
            raise KeyError(chunk_id)
        return self.place_at(row)

    def __contains__(self, chunk_id: object) -> bool:
        return isinstance(chunk_id, str) and self.row_of(chunk_id) is not None

    def __iter__(self) -> Iterator[str]:
        for number in range(self._first, self._first + self._numbered):
            yield chunk_key(self._head, number)
        yield from self._others

    def __len__(self) -> int:
        return len(self._rows) // _COLUMNS

    def values(self) -> ValuesView[Place]:
        return _Values(self)

    def items(self) -> ItemsView[str, Place]:
        return _Items(self)


class _Values(ValuesView[Place]):
    _mapping: DocPlaces

    def __iter__(self) -> Iterator[Place]:
        return (self._mapping.place_at(row) for row in range(len(self._mapping)))


class _Items(ItemsView[str, Place]):
    _mapping: DocPlaces

    def __iter__(self) -> Iterator[tuple[str, Place]]:
        places = self._mapping
        return ((places.id_at(row), places.place_at(row)) for row in range(len(places)))


class DocPages(Sequence[PageKey]):
    """A document's page keys in order of first appearance, held as their page numbers (one
    32-bit integer a page); each key is made when read."""

    __slots__ = ("_numbers", "doc_id")

    def __init__(self, doc_id: str, numbers: array[int]) -> None:
        self.doc_id = doc_id
        self._numbers = numbers

    @classmethod
    def of(cls, doc_id: str, keys: Iterable[PageKey]) -> DocPages:
        return cls(doc_id, array("i", (key.page for key in keys)))

    @overload
    def __getitem__(self, row: int) -> PageKey: ...
    @overload
    def __getitem__(self, row: slice) -> tuple[PageKey, ...]: ...
    def __getitem__(self, row: int | slice) -> PageKey | tuple[PageKey, ...]:
        if isinstance(row, slice):
            return tuple(PageKey(self.doc_id, n) for n in self._numbers[row])
        return PageKey(self.doc_id, self._numbers[row])

    def __len__(self) -> int:
        return len(self._numbers)

    def __iter__(self) -> Iterator[PageKey]:
        return (PageKey(self.doc_id, n) for n in self._numbers)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Sequence) and list(self) == list(other)

    __hash__ = None  # type: ignore[assignment]  # equal by value, like the tuple it stands for

    @property
    def numbers(self) -> array[int]:
        return self._numbers

    def ids(self) -> Iterator[str]:
        return (page_vector_key(self.doc_id, n) for n in self._numbers)

    def row_of_page(self, page: int) -> int | None:
        try:
            return self._numbers.index(page)
        except ValueError:
            return None

    def row_of(self, page_id: str) -> int | None:
        """The row of the page whose id is `page_id` (None: not one of this document's)."""
        prefix = page_vector_prefix(self.doc_id)
        suffix = page_id[len(prefix) :] if page_id.startswith(prefix) else ""
        return self.row_of_page(int(suffix)) if _canonical_number(suffix) else None


class PageChunks(Mapping[PageKey, list[str]]):
    """Page key -> the ids of its chunks in chunk order, read from a document's places."""

    __slots__ = ("_pages", "_places")

    def __init__(self, places: DocPlaces) -> None:
        self._places = places
        self._pages = places.pages

    def __getitem__(self, key: PageKey) -> list[str]:
        row = self._pages.row_of_page(key.page) if key.doc_id == self._pages.doc_id else None
        if row is None:
            raise KeyError(key)
        return [self._places.id_at(r) for r in self._places.rows_on(row)]

    def __iter__(self) -> Iterator[PageKey]:
        return iter(self._pages)

    def __len__(self) -> int:
        return len(self._pages)


class PlacesBuilder:
    """Collects a document's places row by row, in chunk order, then makes its `DocPlaces`."""

    def __init__(self, doc_id: str) -> None:
        self.doc_id = doc_id
        self._prefix = doc_id[:16] + "-"
        self._ids: list[str] = []
        self._rows: list[tuple[int, ...]] = []
        self._strings: dict[str, int] = {}
        self.pages: dict[int, PageKey] = {}  # page number -> its key, in order of first sight
        self._page_rows: dict[int, int] = {}

    def add(self, chunk_id: str, page: int, texts: Sequence[str | None]) -> PageKey:
        """A chunk on `page` whose place's strings are `texts` (doc id, document name, section,
        block type, label, page label); returns its page's key."""
        key = self.pages.get(page)
        if key is None:
            key = self.pages[page] = PageKey(self.doc_id, page)
            self._page_rows[page] = len(self._page_rows)
        self._ids.append(chunk_id)
        self._rows.append((self._page_rows[page], *map(self._index, texts)))
        return key

    def doc_name(self) -> str:
        """The document name of the first chunk added ("" before any)."""
        return (
            next((s for s, at in self._strings.items() if at == self._rows[0][_NAME]), "")
            if self._rows
            else ""
        )

    def _index(self, text: str | None) -> int:
        if text is None:
            return _NONE
        found = self._strings.get(text)
        if found is None:
            found = self._strings[text] = len(self._strings)
        return found

    def built(self) -> DocPlaces:
        """The places (their `pages`: the document's page keys in order of first appearance)."""
        first, numbered = self._numbered_run()
        rows = array("i", (value for row in self._rows for value in row))
        strings = (*(shared_text(s) for s in self._strings), None)
        pages = DocPages.of(self.doc_id, self.pages.values())
        others = tuple(self._ids[numbered:])
        return DocPlaces(self._prefix, first, numbered, others, rows, strings, pages)

    def _numbered_run(self) -> tuple[int, int]:
        """The first row's number and how many rows from it carry the chunker's ids in a row."""
        if not self._ids or not self._ids[0].startswith(self._prefix):
            return 0, 0
        suffix = self._ids[0][len(self._prefix) :]
        if not (suffix.isascii() and suffix.isdigit()):
            return 0, 0
        first = int(suffix)
        count = 0
        for chunk_id in self._ids:
            if chunk_id != chunk_key(self.doc_id, first + count):
                break
            count += 1
        return first, count


# Array code "i" is a 32-bit int on the platforms CPython runs on; kept states are little-endian.
def _packed(values: array[int]) -> str:
    little = array("i", values)
    if sys.byteorder == "big":
        little.byteswap()
    return base64.b64encode(little.tobytes()).decode("ascii")


def _unpacked(text: object) -> array[int]:
    if not isinstance(text, str):
        raise TypeError(f"packed integers expected, got {type(text).__name__}")
    values = array("i")
    values.frombytes(base64.b64decode(text, validate=True))  # ValueError when not whole int32s
    if sys.byteorder == "big":
        values.byteswap()
    return values
