"""What a question may ask, checked the same way for the CLI and the HTTP API.

Each check raises an InputError with one sentence; the CLI prints it (exit 2) and the API
answers it (422 for a request body, 400 for what only the engine can tell, as pages past the end
of every document).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from citerag.errors import InputError
from citerag.store.base import PageRange

MAX_QUESTION_CHARS = 4000
MAX_TOP_K = 50  # sources per answer, for `query --top-k` and the API's topK / top_k
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_WORD = re.compile(r"\w")


def checked_question(question: str) -> str:
    """The question without control characters, or why it cannot be asked."""
    cleaned = _CONTROL.sub(" ", question).strip()
    if not question.strip():
        raise InputError("The question is empty; ask something about the documents.")
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise InputError(
            f"The question is {len(cleaned)} characters long; keep it under {MAX_QUESTION_CHARS}."
        )
    if not _WORD.search(cleaned):
        raise InputError(
            "The question has no words (only control characters, punctuation or symbols); "
            "ask something about the documents in words."
        )
    return cleaned


def checked_top_k(top_k: int | None) -> int | None:
    """`top_k` when it is 1 to MAX_TOP_K (None: the configured default)."""
    if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
        raise InputError(
            f"A top_k of {top_k} is outside 1 to {MAX_TOP_K} sources; ask for {MAX_TOP_K} or fewer."
        )
    return top_k


def check_pages_exist(pages: PageRange, collection: str, page_counts: Sequence[int]) -> None:
    """An InputError naming the pages there are when `pages` starts past every document."""
    longest = max(page_counts, default=0)
    if longest and pages.first > longest:
        asked = f"{pages.first}-{pages.last}" if pages.last != pages.first else str(pages.first)
        raise InputError(
            f"Pages {asked} are past the end of every document in collection {collection!r}; "
            f"its documents have pages 1-{longest}, so ask within those."
        )
