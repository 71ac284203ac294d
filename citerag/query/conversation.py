"""Conversations: a follow-up condensed into a standalone question from the earlier turns.

With an LLM, LlamaIndex's condense step (the `CondenseQuestionChatEngine` prompt over the chat
history) rewrites it; the reply is kept only when it is one plausible question that still names
every year and name the follow-up names, else the offline rewrite is used and the reason noted.
Offline, the previous question's subject (its names, years, documents and figure/table labels)
is carried into a follow-up that needs it:

- a fragment ("and in 2019?", "what about Microsoft?") is the previous question with the years
  or names it gives swapped in ("What were Microsoft's revenues in 2019?");
- a question that points back ("what does it say about its risks?") and names nothing itself
  gets the subject added (", regarding Netflix in 2020?");
- a question with its own subject and no pointer back is asked as it is.

Earlier user turns are condensed in order first, so a subject carries over several turns.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from llama_index.core.base.llms.generic_utils import messages_to_history_str
from llama_index.core.base.llms.types import ChatMessage, MessageRole
from llama_index.core.chat_engine.condense_question import DEFAULT_PROMPT
from llama_index.core.llms import LLM

from citerag.answer.contract import AnswerResult
from citerag.enrich.rules import named_entities
from citerag.errors import InputError
from citerag.llm.llm_chat import LLMChat
from citerag.plan.limits import MAX_QUESTION_CHARS, checked_turn
from citerag.plan.references import LABEL_KINDS, label_refs
from citerag.text.bounded import load_json, read_bounded
from citerag.text.dates import years

log = logging.getLogger(__name__)
ROLES = {"user": MessageRole.USER, "assistant": MessageRole.ASSISTANT}
MAX_CONDENSED_CHARS = 600
MAX_HISTORY_BYTES = 16 * 2**20  # a history file: 5,000 turns of 3,000 characters fit
MAX_HISTORY_DEPTH = 8  # a list of messages, each an object whose content may be a list of parts
_FRAGMENT_START = re.compile(
    r"^\s*(?:and\s+)?(?:what|how)\s+about\b|^\s*(?:and|also|same\s+for|what\s+of)\b", re.I
)
_POINTERS = frozenset(
    re.findall(
        r"\w+", "it its they them their theirs this that these those he she his her there same"
    )
)
_QUESTION_WORDS = frozenset(
    re.findall(
        r"\w+",
        "what how why when where which who whom whose is are was were do does did can could "
        "would should will tell list show give describe explain summarize compare and also",
    )
)
_WORD = re.compile(r"[\w'’]+")
_DOCUMENT = re.compile(r"\b[\w.-]+\.pdf\b", re.I)
_PREFIX = re.compile(r"^\s*(?:standalone question|question|rewritten question)\s*:\s*", re.I)
_MARKUP = re.compile(r"[<>{}`]|https?://", re.I)


@dataclass(frozen=True)
class ChatTurn:
    role: str  # "user" or "assistant"
    text: str


@dataclass(frozen=True)
class Subject:
    """What a question is about: its names, years, documents and labels, as written."""

    names: tuple[str, ...]
    years: tuple[str, ...]
    documents: tuple[str, ...]
    labels: tuple[str, ...]

    @property
    def empty(self) -> bool:
        return not (self.names or self.years or self.documents or self.labels)

    def phrase(self) -> str:
        """ "Netflix in 2020", "eBook.pdf's Figure 3"."""
        things = [*self.documents, *self.names, *self.labels]
        text = " and ".join(things)
        if self.years:
            text = f"{text} in {' and '.join(self.years)}".strip()
        return text


@dataclass(frozen=True)
class Condensed:
    question: str
    method: str  # "none" (asked as it was), "offline" or "llm"
    note: str = ""  # why the LLM's rewrite was not used

    def reported_in(self, result: AnswerResult) -> AnswerResult:
        """`result` with this condensing in its metadata (unless nothing was condensed)."""
        if self.method != "none":
            result.metadata.condensed_question = self.question
            result.metadata.condense_method = self.method
            result.metadata.condense_note = self.note
        return result


def subject_of(question: str) -> Subject:
    words = _WORD.findall(question)
    first = words[0].casefold() if words else ""
    label_words = set(LABEL_KINDS)
    names = [
        name
        for name in named_entities(question, frozenset())
        if name.casefold() not in label_words
        and not (name.casefold() == first and first in _QUESTION_WORDS)
        and not _DOCUMENT.search(name)
    ]
    labels = [str(ref) for ref in label_refs(question)]
    return Subject(
        names=tuple(names),
        years=tuple(years(question)),
        documents=tuple(dict.fromkeys(_DOCUMENT.findall(question))),
        labels=tuple(dict.fromkeys(labels)),
    )


def is_fragment(question: str) -> bool:
    """A follow-up that is not a question by itself: "and in 2019?", "what about Microsoft?"."""
    return bool(_FRAGMENT_START.match(question)) or len(_WORD.findall(question)) <= 3


def points_back(question: str) -> bool:
    return any(word.casefold() in _POINTERS for word in _WORD.findall(question))


def needs_history(question: str) -> bool:
    own = subject_of(question)
    if is_fragment(question):
        return True
    return points_back(question) and not (own.names or own.documents)


def condense_offline(history: Sequence[ChatTurn], question: str) -> str:
    """`question` made standalone from the earlier user turns (unchanged when it is)."""
    previous = ""
    for turn in history:
        if turn.role == "user" and turn.text.strip():
            previous = _carry(previous, turn.text.strip()) if previous else turn.text.strip()
    return _carry(previous, question.strip()) if previous else question.strip()


def _carry(previous: str, question: str) -> str:
    if not needs_history(question):
        return question
    own, before = subject_of(question), subject_of(previous)
    if is_fragment(question) and not (points_back(question) and own.empty):
        return _swapped(previous, before, own)
    missing = _missing(before, question)
    if missing.empty:
        return question
    return f"{question.rstrip(' ?.')}, regarding {missing.phrase()}?"


def _swapped(previous: str, before: Subject, own: Subject) -> str:
    """The previous question with the follow-up's years and names in place of its own."""
    text = previous.rstrip(" ?.")
    added: list[str] = []
    for old_values, new_values in (
        (before.years, own.years),
        (before.names + before.documents, own.names + own.documents),
        (before.labels, own.labels),
    ):
        if not new_values:
            continue
        replaced = _replace_all(text, old_values, " and ".join(new_values))
        if replaced is None:
            added.extend(new_values)
        else:
            text = replaced
    if added:
        text = f"{text}, regarding {' and '.join(added)}"
    return f"{text}?"


def _replace_all(text: str, old_values: Sequence[str], new: str) -> str | None:
    """The old values' enumeration replaced by the new one ("2020 and 2019" → "2018"); None
    when the text does not write them."""
    if not old_values:
        return None
    pattern = "|".join(re.escape(value) for value in sorted(old_values, key=len, reverse=True))
    enumeration = re.compile(rf"(?:{pattern})(?:\s*(?:,|and|or)\s*(?:{pattern}))*", re.I)
    return enumeration.sub(new, text, count=1) if enumeration.search(text) else None


def _missing(before: Subject, question: str) -> Subject:
    """The parts of the previous subject the question does not already say."""
    said = question.casefold()

    def absent(values: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(value for value in values if value.casefold() not in said)

    return Subject(
        absent(before.names), absent(before.years), absent(before.documents), absent(before.labels)
    )


def condense_with_llm(llm: LLM, history: Sequence[ChatTurn], question: str) -> str:
    """LlamaIndex's condense step: its prompt over the history; the raw reply."""
    messages = [ChatMessage(role=ROLES[t.role], content=t.text) for t in history if t.role in ROLES]
    return str(
        llm.predict(
            DEFAULT_PROMPT, question=question, chat_history=messages_to_history_str(messages)
        )
    )


def usable_rewrite(reply: str, question: str) -> str | None:
    """The LLM's standalone question, or None when the reply is not one: empty, several
    lines of prose, markup or links, too long, or dropping a year or name the follow-up gave."""
    lines = [line.strip() for line in reply.strip().splitlines() if line.strip()]
    if len(lines) != 1:
        return None
    text = _PREFIX.sub("", lines[0]).strip().strip("\"'“”").strip()
    if not text or len(text) > MAX_CONDENSED_CHARS or _MARKUP.search(text):
        return None
    own = subject_of(question)
    said = text.casefold()
    kept = all(v.casefold() in said for v in (*own.years, *own.names, *own.documents))
    return text if kept else None


def condense(history: Sequence[ChatTurn], question: str, llm: LLM | None = None) -> Condensed:
    """The standalone question for this turn; no history: the question as it is."""
    question = question.strip()
    if not any(turn.role == "user" and turn.text.strip() for turn in history):
        return Condensed(question, "none")
    offline = condense_offline(history, question)
    if len(offline) > MAX_QUESTION_CHARS:  # two long questions' subjects carried into one
        note = f"the rewrite from the earlier turns was over {MAX_QUESTION_CHARS} characters"
        return Condensed(question, "offline", note)
    if llm is None:
        return Condensed(offline, "offline")
    try:
        reply = condense_with_llm(llm, history, question)
    except Exception as error:  # noqa: BLE001 - any provider failure: the offline rewrite
        log.warning("condensing the follow-up with the LLM failed (%s); offline rewrite", error)
        return Condensed(offline, "offline", f"the LLM call failed: {_short(error)}")
    rewrite = usable_rewrite(reply, question)
    if rewrite is None:
        log.warning("the LLM's condensed question was unusable; offline rewrite")
        return Condensed(offline, "offline", "the LLM's rewrite was not one usable question")
    return Condensed(rewrite, "llm")


def condense_turn(chat: LLMChat | None, history: Sequence[ChatTurn], question: str) -> Condensed:
    """`condense` with the configured LLM (`chat`; None: offline)."""
    llm = chat.llm if chat is not None and any(turn.role == "user" for turn in history) else None
    return condense(history, question, llm)


def read_history_file(path: Path) -> list[ChatTurn]:
    """Earlier turns from a file (or a FIFO): a JSON list of OpenAI-style messages (`role`,
    `content` as text or a list of text parts; system messages ignored), or a chat request's
    JSON object holding such a list as `messages`, or plain text with one earlier question a
    line. Each turn is checked and cleaned as the API's are (`checked_turn`: control characters
    such as NUL dropped, at most a question's length for a user turn); the file is at most
    MAX_HISTORY_BYTES, its JSON nested at most MAX_HISTORY_DEPTH deep."""
    text = read_bounded(path, MAX_HISTORY_BYTES, "History file").decode("utf-8", "replace")
    if text.lstrip()[:1] not in ("[", "{"):
        lines = enumerate(text.splitlines(), start=1)
        cleaned = [checked_turn(line, "user", f"Line {n} of {path}") for n, line in lines]
        return [ChatTurn("user", line) for line in cleaned if line]
    messages = load_json(text, MAX_HISTORY_DEPTH, f"History file {path}")
    if isinstance(messages, dict):
        messages = messages.get("messages")
        if not isinstance(messages, list):
            raise InputError(
                f"History file {path} holds a JSON object without a 'messages' list; give a "
                "list of messages, a chat request holding one, or plain text with a question "
                "a line."
            )
    if not isinstance(messages, list):
        raise InputError(f"History file {path} is not a JSON list of messages; give one.")
    turns: list[ChatTurn] = []
    for index, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        content = _content_text(message.get("content") if isinstance(message, dict) else None)
        if role not in (*ROLES, "system") or content is None:
            raise InputError(
                f"History file {path}: message {index + 1} needs a 'role' (user, assistant or "
                "system) and a text 'content'."
            )
        if role in ROLES:
            text = checked_turn(content, role, f"Message {index + 1} ({role}) of {path}")
            if text:
                turns.append(ChatTurn(role, text))
    return turns


def _content_text(content: object) -> str | None:
    """A message's text: the string, or its text parts joined (OpenAI's list form)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(part, dict) for part in content):
        return "".join(str(p.get("text", "")) for p in content if p.get("type") == "text")
    return None


def _short(error: Exception, limit: int = 160) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text[:limit]
