"""A small OpenAI-compatible server for tests: scripted chat replies, recorded requests.

It implements `POST /v1/chat/completions` (non-streaming), `POST /v1/embeddings` and Ollama's
`POST /api/embed` on 127.0.0.1, so the real client code of an LLM or embedding provider runs end
to end without any network. Embeddings are hashed bags of words (texts sharing words are near),
unless `embedding_reply` scripts them (for broken and hostile replies).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class ScriptedReply:
    content: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    report_usage: bool = True
    status: int = 200  # anything else: an OpenAI-style error body with this HTTP status


Responder = Callable[[dict[str, Any]], ScriptedReply]  # a request body -> its reply
EmbeddingReply = Callable[[list[str]], Any]  # the texts -> the vectors to send back


def hashed_vector(text: str, dim: int) -> list[float]:
    """A bag of words hashed into `dim` buckets (not normalized: the client must normalize)."""
    vector = [0.0] * dim
    for word in re.findall(r"\w+", text.lower()):
        vector[int(hashlib.md5(word.encode()).hexdigest()[:8], 16) % dim] += 1.0
    return vector if any(vector) else [1.0] + [0.0] * (dim - 1)


@dataclass
class FakeOpenAIServer:
    """Replies pop from `replies` in order, or come from `respond(request body)` when it is set
    (for replies that depend on the prompt, or requests that arrive concurrently); every request
    body lands in `requests`."""

    replies: list[ScriptedReply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    port: int = 0
    respond: Responder | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)
    embedding_dim: int = 64
    embedding_status: int = 200
    embedding_reply: EmbeddingReply | None = None
    embedded: list[str] = field(default_factory=list)  # every text asked to embed

    def vectors(self, texts: list[str]) -> Any:
        with self.lock:
            self.embedded.extend(texts)
        if self.embedding_reply is not None:
            return self.embedding_reply(texts)
        return [hashed_vector(text, self.embedding_dim) for text in texts]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def next_reply(self, body: dict[str, Any] | None = None) -> ScriptedReply:
        with self.lock:
            self.requests.append(body or {})
            if self.respond is None:
                return self.replies.pop(0) if self.replies else ScriptedReply("")
        return self.respond(body or {})  # outside the lock: concurrent requests overlap here


def completion_body(reply: ScriptedReply, model: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": f"chatcmpl-fake-{int(time.time() * 1000)}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply.content},
                "finish_reason": "stop",
            }
        ],
    }
    if reply.report_usage:
        body["usage"] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
    return body


def _handler_for(state: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's naming
            route = self.path.rstrip("/")
            length = int(self.headers.get("Content-Length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            if route in ("/v1/embeddings", "/api/embed"):
                self._embeddings(route, body)
                return
            if route != "/v1/chat/completions":
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            reply = state.next_reply(body)
            if reply.status != 200:
                error = {"message": reply.content or "scripted failure", "type": "server_error"}
                self._send(reply.status, {"error": error})
                return
            self._send(200, completion_body(reply, body.get("model", "fake")))

        def _embeddings(self, route: str, body: dict[str, Any]) -> None:
            texts = body.get("input", [])
            texts = [texts] if isinstance(texts, str) else list(texts)
            if state.embedding_status != 200:
                error = {"message": "scripted embedding failure", "type": "server_error"}
                self._send(state.embedding_status, {"error": error})
                return
            vectors = state.vectors(texts)
            model = body.get("model", "fake")
            if route == "/api/embed":
                self._send(200, {"model": model, "embeddings": vectors})
                return
            data = [
                {"object": "embedding", "index": i, "embedding": v} for i, v in enumerate(vectors)
            ]
            usage = {"prompt_tokens": len(texts), "total_tokens": len(texts)}
            self._send(200, {"object": "list", "data": data, "model": model, "usage": usage})

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            return

    return Handler


def prompt_of(body: dict[str, Any]) -> str:
    """The text of a request's messages, joined."""
    return "\n".join(str(m.get("content", "")) for m in body.get("messages", []))


@contextmanager
def running_server(
    replies: list[ScriptedReply] | None = None,
    respond: Responder | None = None,
    **options: Any,
) -> Iterator[FakeOpenAIServer]:
    """Serve on a free loopback port for the duration of the `with` block; `options` set the
    embedding fields (`embedding_dim`, `embedding_status`, `embedding_reply`)."""
    state = FakeOpenAIServer(replies=list(replies or []), respond=respond, **options)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(state))
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
