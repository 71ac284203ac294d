"""What the tools return: typed models a client sees as each tool's output schema.

The answer and its sources are the answer contract (`citerag.answer.contract`, the JSON the
HTTP API returns: camelCase keys, `content[startOffset:endOffset] == text` for each highlight),
with each source's printed page label where its PDF has one.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Highlight(BaseModel):
    text: str
    startOffset: int = Field(description="where `text` starts in the source's `content`")  # noqa: N815
    endOffset: int = Field(description="where `text` ends in the source's `content`")  # noqa: N815


class Source(BaseModel):
    id: str
    documentName: str  # noqa: N815
    pageNumber: int = Field(description="1-based, as a PDF viewer counts pages")  # noqa: N815
    pageLabel: str | None = Field(  # noqa: N815
        default=None, description="the page's printed label (e.g. 'iv', 'A-3') where it has one"
    )
    title: str = Field(description="the section the passage belongs to")
    content: str = Field(description="the cited passage")
    score: float
    citationNumber: int = Field(description="the N of the answer's [N] markers")  # noqa: N815
    highlights: list[Highlight] = Field(description="the sentences that support the answer")
    boxes: list[dict[str, float]] = Field(
        default_factory=list, description="where the passage is on its page, in PDF points"
    )


class Answer(BaseModel):
    answer: str = Field(description="the answer, with [N] markers citing `sources`")
    sources: list[Source]
    metadata: dict[str, Any] = Field(description="how the answer was made (the API's metadata)")


class Sources(BaseModel):
    sources: list[Source]


class Document(BaseModel):
    collection: str
    name: str
    pages: int
    docId: str  # noqa: N815
    source: str = Field(default="", description="the file it was synced from, where recorded")


class Documents(BaseModel):
    documents: list[Document]


class Page(BaseModel):
    number: int
    label: str | None = None
    text: str = Field(description="the page's text as stored (what citations quote)")


class Pages(BaseModel):
    collection: str
    document: str
    pageCount: int  # noqa: N815
    pages: list[Page]
