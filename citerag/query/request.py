"""One question and every option it is answered with, as one object.

The CLI (`main.py query`), the HTTP API (`citerag.serve`) and the MCP tools each build an
`AnswerRequest` from what they were given and hand it whole to `Engine.answer`, so an option
added here reaches every caller by name and none of them repeats the list.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from types import MappingProxyType

from llama_index.core.vector_stores.types import MetadataFilters

from citerag.errors import InputError
from citerag.query.conversation import ChatTurn
from citerag.store.base import PageRange
from citerag.tools.tree_mode import TOP_K_FILES


class Mode(StrEnum):
    """How a question is answered.

    - `hybrid` (the default; the API also calls it `subquestions`): sub-questions planned and
      routed to the facts/pages/summary/sections tools, one cited answer.
    - `single`: one retrieval over the whole question.
    - `tree`: the best sections of the `top_k_files` best files, from their section trees;
      `top_k`, `pages` and `where` do not apply to it.
    """

    HYBRID = "hybrid"
    SINGLE = "single"
    TREE = "tree"

    @classmethod
    def named(cls, name: str) -> Mode:
        """The mode called `name` (an alias resolved), or a one-sentence InputError."""
        try:
            return cls(ALIASES.get(name, name))
        except ValueError:
            known = ", ".join([*MODES, *ALIASES])
            raise InputError(f"Unknown mode {name!r}; use one of {known}.") from None


MODES = tuple(mode.value for mode in Mode)
ALIASES = {"subquestions": Mode.HYBRID.value}
_NO_CONDITIONS: Mapping[str, str] = MappingProxyType({})


@dataclass(frozen=True)
class AnswerRequest:
    """A question over one collection and how to answer it.

    `top_k`: the answer's sources (None: the settings' default); `pages`: only those pages;
    `where`: only the documents whose cards match (`company=3M`,
    `citerag.retrieve.routing.WHERE_KEYS`); `filters`: metadata filters for library callers;
    `top_k_files`: tree mode's files; `history`: earlier turns the question is condensed from.
    """

    question: str
    collection: str
    mode: Mode = Mode.HYBRID
    top_k: int | None = None
    pages: PageRange | None = None
    where: Mapping[str, str] = field(default_factory=lambda: _NO_CONDITIONS)
    filters: MetadataFilters | None = None
    top_k_files: int = TOP_K_FILES
    history: tuple[ChatTurn, ...] = ()

    @classmethod
    def of(
        cls,
        question: str,
        collection: str,
        *,
        mode: str | Mode = Mode.HYBRID,
        top_k: int | None = None,
        pages: PageRange | None = None,
        where: Mapping[str, str] | None = None,
        filters: MetadataFilters | None = None,
        top_k_files: int = TOP_K_FILES,
        history: Sequence[ChatTurn] = (),
    ) -> AnswerRequest:
        """A request from loosely typed options: a mode by name or alias, any sequence of
        turns, no conditions as None."""
        return cls(
            question=question,
            collection=collection,
            mode=Mode.named(mode),
            top_k=top_k,
            pages=pages,
            where=MappingProxyType(dict(where or {})),
            filters=filters,
            top_k_files=top_k_files,
            history=tuple(history),
        )

    def asking(self, question: str) -> AnswerRequest:
        """This request for another wording of its question (a condensed follow-up)."""
        return replace(self, question=question, history=())

    @property
    def plan(self) -> bool:
        """Whether the question is planned into sub-questions routed to tools."""
        return self.mode is Mode.HYBRID
