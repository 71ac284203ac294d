"""How a question is answered, by mode: the one dispatch the CLI (`query --mode`) and the HTTP
API (`mode`) share.

- `hybrid` (the default; the API also calls it `subquestions`): sub-questions planned and routed
  to the facts/pages/summary/sections tools, one cited answer (`Engine.query`).
- `single`: one retrieval over the whole question (`Engine.query(plan=False)`).
- `tree`: the multi-file section pipeline (`Engine.tree_answer`, `citerag.tools.tree_answer`);
  `top_k_files` files, 5 sections each. `top_k` and `page_range` do not apply to it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from citerag.answer.contract import AnswerResult
from citerag.errors import InputError
from citerag.llm.llm_chat import LLMChat
from citerag.query.conversation import ChatTurn, condense_turn
from citerag.store.base import PageRange
from citerag.tools.tree_mode import TOP_K_FILES

MODES = ("hybrid", "single", "tree")
ALIASES = {"subquestions": "hybrid"}


class AnsweringEngine(Protocol):
    """What the modes call on `citerag.engine.Engine`, as they call it: the options by name,
    and no metadata filters (a page range is the modes' only filter)."""

    @property
    def answerer(self) -> LLMChat | None: ...

    def query(
        self,
        question: str,
        collection: str,
        *,
        top_k: int | None,
        page_range: PageRange | None,
        plan: bool = True,
        where: Mapping[str, str] | None = None,
    ) -> AnswerResult: ...

    def tree_answer(
        self, question: str, collection: str, top_k_files: int = TOP_K_FILES
    ) -> AnswerResult: ...


def canonical_mode(mode: str) -> str:
    """`mode` as one of MODES (an alias resolved), or a one-sentence InputError."""
    name = ALIASES.get(mode, mode)
    if name not in MODES:
        known = ", ".join([*MODES, *ALIASES])
        raise InputError(f"Unknown mode {mode!r}; use one of {known}.")
    return name


def answer_question(
    engine: AnsweringEngine,
    question: str,
    collection: str,
    mode: str = "hybrid",
    top_k: int | None = None,
    page_range: PageRange | None = None,
    top_k_files: int = TOP_K_FILES,
    history: Sequence[ChatTurn] = (),
    where: Mapping[str, str] | None = None,
) -> AnswerResult:
    """The answer contract for `question` over `collection`, the way `mode` answers it; with
    earlier turns (`history`), the question condensed from them first, reported in the
    metadata (`citerag.query.conversation`). `where`: only the documents whose cards match
    (`company=3M`); tree mode reads every file's tree and takes no such filter."""
    name = canonical_mode(mode)
    if not history:
        return _by_mode(engine, question, collection, name, top_k, page_range, top_k_files, where)
    condensed = condense_turn(engine.answerer, history, question)
    result = _by_mode(
        engine, condensed.question, collection, name, top_k, page_range, top_k_files, where
    )
    return condensed.reported_in(result)


def _by_mode(
    engine: AnsweringEngine,
    question: str,
    collection: str,
    name: str,
    top_k: int | None,
    page_range: PageRange | None,
    top_k_files: int,
    where: Mapping[str, str] | None = None,
) -> AnswerResult:
    if name == "tree":
        return engine.tree_answer(question, collection, top_k_files=top_k_files)
    plan = name != "single"
    return engine.query(
        question, collection, top_k=top_k, page_range=page_range, plan=plan, where=where
    )
