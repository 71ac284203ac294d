"""Request bodies of the HTTP API (the answer contract itself is `AnswerResult.to_dict()`)."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, field_validator

from citerag.errors import InputError
from citerag.plan.limits import (
    MAX_QUESTION_CHARS,
    MAX_TOP_K,
    checked_highlight,
    checked_question,
    checked_top_k,
    checked_turn,
)
from citerag.query.conversation import ROLES, ChatTurn
from citerag.query.request import AnswerRequest
from citerag.retrieve.routing import WHERE_KEYS, checked_where
from citerag.serve.api_errors import Refused
from citerag.store.base import PageRange, parse_page_range
from citerag.tools.tree_mode import TOP_K_FILES

MAX_TOP_K_FILES = 20
T = TypeVar("T")
Mode = Literal["subquestions", "hybrid", "single", "tree"]
MODE_HELP = (
    "how the question is answered, as `main.py query --mode`: `subquestions` (default; the "
    "CLI's `hybrid`) plans sub-questions routed to the facts/pages/summary/sections tools, "
    "reported in `metadata.subQuestions`; `single` is one retrieval over the whole question; "
    "`tree` runs the multi-file section-tree pipeline (`topK` and `pages` do not apply to it)"
)
TOP_K_FILES_HELP = "tree mode: how many files' section trees are searched"


class QueryRequest(BaseModel):
    """`POST /api/rag/query`: a question over one collection."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    query: str = Field(description=f"the question (up to {MAX_QUESTION_CHARS} characters)")
    collection: str = Field(
        default="default",
        description="the collection to ask (default: the collection of `serve --article`'s "
        "article, else 'default')",
    )
    top_k: int | None = Field(
        default=None, alias="topK", description=f"number of sources (1 to {MAX_TOP_K})"
    )
    pages: str | None = Field(default=None, description="only pages A-B, e.g. '3-7'")
    where: dict[str, str] | None = Field(
        default=None,
        description="only the documents whose cards match every entry, e.g. "
        '{"company": "3M", "year": "2018"}; keys: ' + ", ".join(WHERE_KEYS),
    )
    mode: Mode = Field(default="subquestions", description=MODE_HELP)
    top_k_files: int = Field(
        default=TOP_K_FILES,
        ge=1,
        le=MAX_TOP_K_FILES,
        alias="topKFiles",
        description=TOP_K_FILES_HELP,
    )

    @field_validator("query")
    @classmethod
    def _askable(cls, question: str) -> str:
        return refused_unless(checked_question, question)

    @field_validator("top_k")
    @classmethod
    def _top_k_in_limit(cls, top_k: int | None) -> int | None:
        return refused_unless(checked_top_k, top_k)

    @field_validator("where")
    @classmethod
    def _card_fields(cls, where: dict[str, str] | None) -> dict[str, str] | None:
        return None if where is None else refused_unless(checked_where, where)

    def page_range(self) -> PageRange | None:
        return parse_pages(self.pages)

    def to_request(self, collection: str) -> AnswerRequest:
        """The request the engine answers (`collection`: the one named, else the server's)."""
        return AnswerRequest.of(
            self.query,
            collection,
            mode=self.mode,
            top_k=self.top_k,
            pages=self.page_range(),
            where=self.where,
            top_k_files=self.top_k_files,
        )


class ChatMessage(BaseModel):
    model_config = ConfigDict(extra="allow")

    role: str
    content: str | list[dict[str, object]] | None = None

    def text(self) -> str:
        if isinstance(self.content, str):
            return self.content
        parts = self.content or []
        return "".join(str(p.get("text", "")) for p in parts if p.get("type") == "text")


class ChatRequest(BaseModel):
    """`POST /v1/chat/completions`: OpenAI's body; `model` names the collection.

    Fields OpenAI defines but retrieval has no use for (temperature, max_tokens, ...) are
    accepted and ignored; `top_k`, `pages`, `mode` and `top_k_files` are this server's
    extensions (OpenAI clients send them with `extra_body`), as in `POST /api/rag/query`.
    """

    model_config = ConfigDict(extra="allow")

    model: str = Field(description="the collection to ask (see GET /v1/models)")
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    top_k: int | None = Field(default=None, description=f"number of sources (1 to {MAX_TOP_K})")
    pages: str | None = None
    mode: Mode = Field(default="subquestions", description=MODE_HELP)
    top_k_files: int = Field(
        default=TOP_K_FILES, ge=1, le=MAX_TOP_K_FILES, description=TOP_K_FILES_HELP
    )

    @field_validator("top_k")
    @classmethod
    def _top_k_in_limit(cls, top_k: int | None) -> int | None:
        return refused_unless(checked_top_k, top_k)

    @field_validator("messages")
    @classmethod
    def _has_user_message(cls, messages: list[ChatMessage]) -> list[ChatMessage]:
        asked = [m.text() for m in messages if m.role == "user" and m.text().strip()]
        if not asked:
            raise Refused("There is no user message with text; send the question as one.")
        refused_unless(checked_question, asked[-1])
        _history_of(messages)  # each earlier turn checked: a 422 naming the first refused
        return messages

    def question(self) -> str:
        """The last user message: the question this turn asks."""
        return next(
            m.text() for m in reversed(self.messages) if m.role == "user" and m.text().strip()
        )

    def history(self) -> list[ChatTurn]:
        """The user and assistant turns before the last user message (system ones left out):
        what a follow-up is condensed from."""
        return _history_of(self.messages)

    def page_range(self) -> PageRange | None:
        return parse_pages(self.pages)

    def to_request(self, collection: str) -> AnswerRequest:
        """The request the engine answers: the last user message, condensed from the turns
        before it."""
        return AnswerRequest.of(
            self.question(),
            collection,
            mode=self.mode,
            top_k=self.top_k,
            pages=self.page_range(),
            top_k_files=self.top_k_files,
            history=self.history(),
        )


def _history_of(messages: list[ChatMessage]) -> list[ChatTurn]:
    """The user and assistant turns before the last user message, each cleaned and checked as
    `checked_turn` does (a Refused naming the first that is refused, by its place in
    `messages`)."""
    last = max(i for i, m in enumerate(messages) if m.role == "user" and m.text().strip())
    turns: list[ChatTurn] = []
    for index, message in enumerate(messages[:last]):
        if message.role not in ROLES or not message.text():
            continue
        check = partial(
            checked_turn, role=message.role, what=f"Message {index + 1} ({message.role})"
        )
        text = refused_unless(check, message.text())
        if text:
            turns.append(ChatTurn(message.role, text))
    return turns


class BoxesRequest(BaseModel):
    """The highlight texts whose boxes on a page the viewer draws."""

    model_config = ConfigDict(extra="forbid")

    highlights: list[str] = Field(max_length=50)

    @field_validator("highlights")
    @classmethod
    def _searchable(cls, highlights: list[str]) -> list[str]:
        for number, text in enumerate(highlights, start=1):
            refused_unless(partial(checked_highlight, what=f"Highlight {number}"), text)
        return highlights


def refused_unless(check: Callable[[T], T], value: T) -> T:
    """`check(value)`, its InputError turned into the validation error FastAPI answers."""
    try:
        return check(value)
    except InputError as error:
        raise Refused(str(error)) from None


def parse_pages(text: str | None) -> PageRange | None:
    """'A-B' (or 'A') as a page range, like the CLI's --pages; an InputError otherwise."""
    if text is None or not text.strip():
        return None
    return parse_page_range(text)
