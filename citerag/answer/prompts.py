"""The prompt that turns numbered sources into a cited answer."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from citerag.answer.citations import SourceRef

SYSTEM_PROMPT = (
    "You answer questions about documents using only the numbered sources you are given. "
    "After every claim, cite the source(s) it comes from as [N] (for example [1] or [2][3]). "
    "Do not use outside knowledge; if the sources do not answer the question, say so plainly. "
    "Keep numbers, units and names exactly as the sources write them. "
    "Mathematics may be written in LaTeX ($...$ inline, $$...$$ for display)."
)


class ContextSource(SourceRef, Protocol):
    """What the prompt needs from a source (`contract.Source` has all of it)."""

    @property
    def title(self) -> str: ...  # section

    @property
    def content(self) -> str: ...


def format_sources(sources: Sequence[ContextSource]) -> str:
    return "\n\n".join(_format_source(source) for source in sources)


def user_prompt(question: str, sources: Sequence[ContextSource]) -> str:
    return (
        f"Sources:\n\n{format_sources(sources)}\n\n"
        f"Question: {question.strip()}\n\n"
        "Answer using only the sources above, citing [N] after each claim."
    )


def _format_source(source: ContextSource) -> str:
    header = f"[{source.citation_number}] {source.document_name}, page {source.page_number}"
    if source.title:
        header += f', section "{source.title}"'
    return f"{header}\n{source.content.strip()}"
