"""The data that flows between roles: parsed documents, document records, highlights.

Chunks are LlamaIndex `TextNode`s (see `citerag.nodes`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Literal, NotRequired, TypeAlias, TypedDict

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

# Free-form JSON. The containers are read-only so that `list[dict[str, int]]` is a JSONValue too.
JSONValue: TypeAlias = (
    "str | int | float | bool | None | Sequence[JSONValue] | Mapping[str, JSONValue]"
)
JSONObject: TypeAlias = "dict[str, JSONValue]"

BlockKind = Literal["text", "title", "table", "equation", "figure"]
BLOCK_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class BBox:
    """A rectangle in PDF points, origin top-left, as PyMuPDF reports it."""

    x0: float
    y0: float
    x1: float
    y1: float

    def to_dict(self) -> dict[str, float]:
        return {"x0": self.x0, "y0": self.y0, "x1": self.x1, "y1": self.y1}


@dataclass
class Block:
    """One layout element of a page.

    `text` is what the block contributes to the page text: Markdown for a table, LaTeX for an
    equation (when the parser recovered it), the caption for a figure.
    """

    kind: BlockKind
    text: str
    bbox: BBox
    level: int | None = None  # heading depth for titles, 1 = top
    label: str | None = None  # "3", "4.1": the figure/equation/table label when one is written
    ocr_confidence: float | None = None  # read by OCR: its words' mean confidence, 0-100


@dataclass
class Page:
    number: int  # 1-based sheet, as a PDF viewer counts it
    width: float
    height: float
    blocks: list[Block] = field(default_factory=list)
    label: str | None = None  # the number printed on it ("iv", "28"), when the PDF says it

    def text_and_spans(self) -> tuple[str, list[tuple[int, int]]]:
        """The page text (blocks joined by a blank line) and each block's span in it."""
        spans: list[tuple[int, int]] = []
        parts: list[str] = []
        cursor = 0
        for block in self.blocks:
            if parts:
                cursor += len(BLOCK_SEPARATOR)
            spans.append((cursor, cursor + len(block.text)))
            parts.append(block.text)
            cursor += len(block.text)
        return BLOCK_SEPARATOR.join(parts), spans

    @property
    def text(self) -> str:
        return self.text_and_spans()[0]


class BBoxRecord(TypedDict):
    x0: float
    y0: float
    x1: float
    y1: float


class BlockRecord(TypedDict):
    kind: BlockKind
    text: str
    bbox: BBoxRecord
    level: NotRequired[int | None]
    label: NotRequired[str | None]
    ocr_confidence: NotRequired[float | None]


class PageRecord(TypedDict):
    number: int
    width: float
    height: float
    blocks: list[BlockRecord]
    label: NotRequired[str | None]


class ParsedDocumentRecord(TypedDict):
    """`ParsedDocument.to_dict()` as JSON reads it back."""

    doc_id: str
    name: str
    parser: str
    pages: list[PageRecord]
    ocr_languages: NotRequired[str]
    picture_ocr: NotRequired[str]
    unread_pages: NotRequired[list[int]]


@dataclass
class ParsedDocument:
    doc_id: str  # sha256 of the file bytes
    name: str  # file name as the user sees it
    parser: str  # "pymupdf" or "mineru"
    pages: list[Page]
    # OCR (citerag/parse/ocr.py): the languages scanned pages were read in ("" when none was),
    # those of the pictures read on text pages ("" when off), and the scanned pages left
    # unread because no engine was installed. The parse cache compares them with the settings.
    ocr_languages: str = ""
    picture_ocr: str = ""
    unread_pages: list[int] = field(default_factory=list)

    def to_dict(self) -> JSONObject:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: ParsedDocumentRecord) -> ParsedDocument:
        pages = [
            Page(
                number=p["number"],
                width=p["width"],
                height=p["height"],
                blocks=[
                    Block(
                        kind=b["kind"],
                        text=b["text"],
                        bbox=BBox(**b["bbox"]),
                        level=b.get("level"),
                        label=b.get("label"),
                        ocr_confidence=b.get("ocr_confidence"),
                    )
                    for b in p["blocks"]
                ],
                label=p.get("label"),
            )
            for p in data["pages"]
        ]
        return cls(
            doc_id=data["doc_id"],
            name=data["name"],
            parser=data["parser"],
            pages=pages,
            ocr_languages=data.get("ocr_languages", ""),
            picture_ocr=data.get("picture_ocr", ""),
            unread_pages=list(data.get("unread_pages", [])),
        )


@dataclass
class DocumentRecord:
    """What the docstore knows about an ingested document."""

    doc_id: str
    name: str
    collection: str
    pages: int
    parser: str
    status: Literal["pending", "ready"] = "pending"
    created_at: float = 0.0
    # The file it was ingested from (absolute), where a folder sync recorded it; "" otherwise
    # (uploads, and documents ingested before sources were kept). `ingest --sync` only ever
    # removes or renames documents whose source lies inside the folder it syncs.
    source: str = ""


@dataclass
class Highlight:
    text: str
    startOffset: int  # noqa: N815 - the answer contract's spelling
    endOffset: int  # noqa: N815


def json_int(value: JSONValue) -> int:
    """`int(value)` for a JSON number or numeric string; TypeError for anything else, as int()."""
    if isinstance(value, int | float | str):
        return int(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def json_float(value: JSONValue) -> float:
    """`float(value)` for a JSON number or numeric string; TypeError for anything else."""
    if isinstance(value, int | float | str):
        return float(value)
    raise TypeError(f"expected a number, got {type(value).__name__}")


def json_list(value: JSONValue) -> Sequence[JSONValue]:
    if isinstance(value, Sequence) and not isinstance(value, str):
        return value
    raise TypeError(f"expected a list, got {type(value).__name__}")


def json_object(value: JSONValue) -> Mapping[str, JSONValue]:
    if isinstance(value, Mapping):
        return value
    raise TypeError(f"expected an object, got {type(value).__name__}")


def camel_case_fields(item: DataclassInstance, **values: object) -> dict[str, object]:
    """The dataclass's fields under camelCase keys (`doc_id` as "docId"), in field order, as
    the JSON records show them; `values`, by field name, replace what a field holds."""
    return {
        _camel_case(f.name): values[f.name] if f.name in values else getattr(item, f.name)
        for f in fields(item)
    }


def _camel_case(name: str) -> str:
    first, *rest = name.split("_")
    return first + "".join(word.capitalize() for word in rest)


CARD_FIELDS = (
    "title",
    "organisation",
    "ticker",
    "authors",
    "kind",
    "fiscal_year",
    "quarter",
    "period_end",
    "date",
    "source",
)


@dataclass(frozen=True)
class DocumentCard:
    """What a document is: whose, which kind, which period. Made at ingest (citerag.enrich.cards)
    and stored beside its chunks, so that a question can be routed to the documents it names."""

    title: str = ""
    organisation: str = ""  # the issuer or publisher, as printed
    ticker: str = ""
    authors: tuple[str, ...] = ()
    kind: str = ""  # "annual report", "quarterly report", "paper", "manual", ... ("": unknown)
    fiscal_year: int | None = None  # the fiscal year the document covers, as its issuer names it
    quarter: int | None = None  # 1-4 for a quarter's report
    period_end: str = ""  # ISO date the covered period ends
    date: str = ""  # ISO date of the document (a current report's event date)
    source: str = "rules"  # "rules" or "llm": what read it

    def to_dict(self) -> JSONObject:
        return {name: _card_json(getattr(self, name)) for name in CARD_FIELDS}

    @classmethod
    def from_dict(cls, data: Mapping[str, JSONValue]) -> DocumentCard:
        year, quarter = data.get("fiscal_year"), data.get("quarter")
        authors = data.get("authors") or ()
        return cls(
            title=str(data.get("title") or ""),
            organisation=str(data.get("organisation") or ""),
            ticker=str(data.get("ticker") or ""),
            authors=tuple(str(a) for a in authors) if isinstance(authors, Sequence) else (),
            kind=str(data.get("kind") or ""),
            fiscal_year=json_int(year) if year is not None else None,
            quarter=json_int(quarter) if quarter is not None else None,
            period_end=str(data.get("period_end") or ""),
            date=str(data.get("date") or ""),
            source=str(data.get("source") or "rules"),
        )


def _card_json(value: object) -> JSONValue:
    if isinstance(value, tuple):
        return list(value)
    return value  # type: ignore[return-value]  # str, int or None
