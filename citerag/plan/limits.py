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
# An earlier turn of a conversation: a user turn was a question (MAX_QUESTION_CHARS); an
# assistant turn is an answer, which the LLM's condense prompt reads (offline it is not read).
MAX_ANSWER_TURN_CHARS = 20_000
MAX_HIGHLIGHT_CHARS = 12_000  # a highlight whose boxes are asked for: at most a source's text
MAX_TOP_K = 50  # sources per answer, for `query --top-k` and the API's topK / top_k
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
# Half of a UTF-16 pair, alone: JSON's "\ud800" and a name the OS gave as undecodable bytes
# (Python's surrogateescape) read as one. No tokenizer, PDF search or UTF-8 writer takes it.
_SURROGATE = re.compile("[\ud800-\udfff]")
_WORD = re.compile(r"\w")


def checked_text(text: str, what: str) -> str:
    """`text` without control characters (tabs and line breaks kept); an InputError naming
    `what` ("The question", "Highlight 2") when it holds a lone surrogate. The one check every
    text a user sends passes where it enters: questions, earlier turns, highlights."""
    found = _SURROGATE.search(text)
    if found:
        raise InputError(
            f"{what} holds U+{ord(found.group()):04X} at character {found.start() + 1}, half of "
            "a UTF-16 surrogate pair and not a character; send the text as valid Unicode (UTF-8)."
        )
    return _CONTROL.sub(" ", text).strip()


def checked_question(question: str) -> str:
    """The question without control characters, or why it cannot be asked."""
    cleaned = checked_text(question, "The question")
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


def checked_turn(text: str, role: str, what: str) -> str:
    """An earlier turn of a conversation (`role` "user" or "assistant"; `what` names it, e.g.
    "Message 3 (user)"), cleaned as a question is, or why the conversation cannot go on."""
    cleaned = checked_text(text, what)
    limit, kind = (
        (MAX_QUESTION_CHARS, "a question")
        if role == "user"
        else (MAX_ANSWER_TURN_CHARS, "an answer")
    )
    if len(cleaned) > limit:
        raise InputError(
            f"{what} is {len(cleaned)} characters long, more than {kind} may be ({limit}); "
            "shorten that earlier turn or leave it out of the history."
        )
    return cleaned


def checked_highlight(text: str, what: str) -> str:
    """A highlight whose boxes the viewer asks for, as sent, or why it cannot be searched."""
    checked_text(text, what)
    if len(text) > MAX_HIGHLIGHT_CHARS:
        raise InputError(
            f"{what} is {len(text)} characters long; a highlight is at most "
            f"{MAX_HIGHLIGHT_CHARS}, the length of a source."
        )
    return text


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
