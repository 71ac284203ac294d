"""Request bodies of the HTTP API (the answer contract itself is `AnswerResult.to_dict()`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from citerag.errors import InputError
from citerag.store.base import PageRange

MAX_TOP_K = 50


class QueryRequest(BaseModel):
    """`POST /api/rag/query`: a question over one collection."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str = Field(min_length=1, max_length=4000, description="the question")
    collection: str = Field(default="default", description="the collection to ask")
    top_k: int | None = Field(
        default=None, ge=1, le=MAX_TOP_K, alias="topK", description="number of sources"
    )
    pages: str | None = Field(default=None, description="only pages A-B, e.g. '3-7'")

    def page_range(self) -> PageRange | None:
        return parse_pages(self.pages)


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, Any]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class ChatRequest(BaseModel):
    """`POST /v1/chat/completions`: OpenAI's body; `model` names the collection.

    Fields OpenAI defines but retrieval has no use for (temperature, max_tokens, ...) are
    accepted and ignored; `top_k` and `pages` are this server's extensions (`extra_body`).
    """

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="the collection to ask (see GET /v1/models)")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    top_k: int | None = Field(default=None, ge=1, le=MAX_TOP_K)
    pages: str | None = None

    @field_validator("messages")
    @classmethod
    def _has_user_message(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        if not any(m.role == "user" and m.text().strip() for m in messages):
            raise ValueError("there is no user message with text")
        return messages

    def question(self) -> str:
        """The last user message: the question this turn asks."""
        return next(m.text() for m in reversed(self.messages) if m.role == "user" and m.text())

    def page_range(self) -> PageRange | None:
        return parse_pages(self.pages)


class BoxesRequest(BaseModel):
    """The highlight texts whose boxes on a page the viewer draws."""

    model_config = ConfigDict(extra="forbid")

    highlights: list[str] = Field(max_length=50)


def parse_pages(text: str | None) -> PageRange | None:
    """'A-B' (or 'A') as a page range, like the CLI's --pages; an InputError otherwise."""
    if text is None or not text.strip():
        return None
    parts = text.strip().split("-")
    try:
        first, last = (int(parts[0]), int(parts[-1])) if len(parts) <= 2 else (0, -1)
    except ValueError:
        first, last = 0, -1
    if first < 1 or last < first:
        raise InputError(f"{text!r} is not a page range; write it as A-B, e.g. 3-7.")
    return PageRange(first, last)
