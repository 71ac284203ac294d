"""Tree mode as a tool over one collection: its files ranked by the hybrid retriever's chunks,
then the section pipeline (`tools.tree_mode`) over their stored trees."""

from __future__ import annotations

from llama_index.core.schema import QueryBundle

from citerag.answer.contract import AnswerResult
from citerag.answer.number_check import with_number_check
from citerag.llm.llm_chat import LLMChat
from citerag.nodes import doc_id_of, doc_name_of, page_of
from citerag.tools.context import ToolContext
from citerag.tools.tree_mode import TOP_K_FILES, FileHits, run_pipeline
from citerag.tree.stored import load_tree


def tree_answer(
    context: ToolContext, question: str, top_k_files: int = TOP_K_FILES
) -> AnswerResult:
    """Seed 003's pipeline over the context's collection (`question` already checked)."""
    answerer = context.answerer
    chat = _CountingChat(answerer) if answerer is not None else None
    result = run_pipeline(
        question,
        file_hits(context, question),
        lambda doc_id: load_tree(context.docstore, context.collection, doc_id),
        chat=chat,
        answerer=answerer,
        top_k_files=top_k_files,
    )
    if chat is not None:  # the node selections' tokens count too, not only the answer's
        result.metadata.tokens_used += chat.tokens
    return with_number_check(question, result)


class _CountingChat:
    """The answerer's chat, adding up the tokens its replies report."""

    def __init__(self, llm: LLMChat) -> None:
        self._llm = llm
        self.tokens = 0

    def __call__(self, messages: list[tuple[str, str]]) -> str:
        text, tokens = self._llm.chat_with_usage(messages)
        self.tokens += int(tokens)
        return str(text)


def file_hits(context: ToolContext, question: str) -> list[FileHits]:
    """Each file's fused chunk scores; a file is relevant when one of its chunks shares a
    term with the question (a keyword hit), not only a nearest neighbour by meaning."""
    ranking = context.factory.retriever(context.state).rank(QueryBundle(question))
    keyword_hits = set(ranking.keyword)
    scores = dict(ranking.fused)
    files: dict[str, FileHits] = {}
    for chunk in context.chunks(list(scores)):
        doc_id = doc_id_of(chunk)
        hits = files.setdefault(doc_id, FileHits(doc_id, doc_name_of(chunk), {}, relevant=False))
        hits.chunk_scores[chunk.node_id] = float(scores[chunk.node_id])
        hits.chunk_pages[chunk.node_id] = page_of(chunk)
        hits.relevant = hits.relevant or chunk.node_id in keyword_hits
    return list(files.values())
