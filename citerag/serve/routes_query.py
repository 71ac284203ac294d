"""Questions: the answer contract, and OpenAI's chat completions (whole or streamed)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator, Mapping

from fastapi import APIRouter, Depends
from fastapi.responses import StreamingResponse

from citerag.serve import chat
from citerag.serve.schemas import ChatRequest, QueryRequest
from citerag.serve.security import safe_collection
from citerag.serve.state import State, require_key

router = APIRouter(dependencies=[Depends(require_key)])


@router.post("/api/rag/query", tags=["questions"], summary="Answer a question with sources")
async def rag_query(body: QueryRequest, state: State) -> Mapping[str, object]:
    """The answer contract: `answer` with `[N]`, `sources` with highlights, `metadata`
    (`metadata.subQuestions`: each sub-question's `question`, `tool`, `filters`, `citations`;
    `metadata.documentRouting`: the documents the question named and why they were searched
    first). `mode` picks how it is answered, as `main.py query --mode` does; `where` keeps
    only the documents whose cards match, as `main.py query --where` does."""
    named = "collection" in body.model_fields_set
    collection = safe_collection(body.collection if named else state.default_collection)
    result = await state.run(state.answer, body.to_request(collection))
    return result.to_dict()


@router.post(
    "/v1/chat/completions",
    tags=["openai"],
    summary="OpenAI-compatible chat completion; `model` is the collection",
    response_model=None,
)
async def chat_completions(
    body: ChatRequest, state: State
) -> Mapping[str, object] | StreamingResponse:
    """`stream: false`: a `chat.completion` with extra `sources` and `metadata` fields.

    `stream: true`: `chat.completion.chunk` events whose content joins to the same answer; the
    last chunk (`finish_reason: "stop"`) carries `sources` and `metadata`; then `data: [DONE]`.
    Extra body fields (`extra_body`): `top_k`, `pages`, `mode`, `top_k_files`, as in
    `POST /api/rag/query`. Earlier `user`/`assistant` messages are the conversation: the last
    user message is condensed from them into a standalone question (with the configured LLM,
    else offline by carrying the previous question's subject), reported in
    `metadata.condensedQuestion` and `metadata.condenseMethod`.
    """
    collection = safe_collection(body.model)
    result = await state.run(state.answer, body.to_request(collection))
    if not body.stream:
        return chat.chat_completion(result, body.model)
    return StreamingResponse(
        _async(chat.sse_events(result, body.model)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


async def _async(events: Iterator[str]) -> AsyncIterator[str]:
    """The events from the event loop itself (a plain iterator costs a thread hop per event)."""
    for event in events:
        yield event


@router.get("/v1/models", tags=["openai"], summary="The collections, as OpenAI models")
async def models(state: State) -> Mapping[str, object]:
    names = await state.run(state.engine.docstore.collections)
    now = int(time.time())
    return {
        "object": "list",
        "data": [
            {"id": name, "object": "model", "created": now, "owned_by": "citerag"} for name in names
        ],
    }
