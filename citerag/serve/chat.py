"""The answer contract in OpenAI's chat-completion shapes, whole or as server-sent events.

Stream: a first chunk with the assistant role, one chunk per piece of the answer text (the
pieces joined are exactly the non-streamed answer, `[N]` included), then a last chunk with
`finish_reason: "stop"`, an empty delta and this server's extra fields `sources` and
`metadata` (the answer contract's), then `data: [DONE]`. The whole answer is composed before the
first delta is sent, because the engine renumbers citations against the final sources.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Iterator

from citerag.answer.contract import AnswerResult

_PIECE = re.compile(r"\S+\s*|\s+")


def completion_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex[:24]}"


def usage_of(result: AnswerResult) -> dict[str, int] | None:
    """OpenAI's usage block when an LLM reported its tokens (only the total is known)."""
    total = result.metadata.tokens_used
    if total <= 0:
        return None
    return {"prompt_tokens": 0, "completion_tokens": total, "total_tokens": total}


def chat_completion(result: AnswerResult, model: str) -> dict[str, object]:
    contract = result.to_dict()
    return {
        "id": completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": result.answer},
                "finish_reason": "stop",
            }
        ],
        "usage": usage_of(result),
        "sources": contract["sources"],
        "metadata": contract["metadata"],
    }


def answer_pieces(answer: str) -> list[str]:
    """Word-sized pieces that join back to exactly `answer`."""
    return _PIECE.findall(answer)


def chunks(result: AnswerResult, model: str) -> Iterator[dict[str, object]]:
    ident, created = completion_id(), int(time.time())

    def chunk(delta: dict[str, object], finish: str | None = None) -> dict[str, object]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for piece in answer_pieces(result.answer):
        yield chunk({"content": piece})
    contract = result.to_dict()
    last = chunk({}, "stop")
    last.update(usage=usage_of(result), sources=contract["sources"], metadata=contract["metadata"])
    yield last


def sse_events(result: AnswerResult, model: str) -> Iterator[str]:
    for item in chunks(result, model):
        yield f"data: {json.dumps(item, ensure_ascii=False)}\n\n"
    yield "data: [DONE]\n\n"
