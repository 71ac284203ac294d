"""The real server with an LLM configured (a scripted OpenAI-compatible server on 127.0.0.1):
the official client's streamed text joins to the whole answer, citations are renumbered onto
the sources, the LLM's token count (the plan's included) arrives as `usage`, and the planned
sub-questions arrive in the metadata."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from fake_openai_server import ScriptedReply
from fake_openai_server import running_server as running_llm
from helpers import DEMO_PDF
from serve_helpers import running_server, upload_and_wait

pytestmark = pytest.mark.slow
QUESTION = "How is the fused score of a chunk computed?"
REPLY = "It sums 1/(k + rank) over the rankers [1], with k = 60 [1]. Unsupported claim [42]."
PLAN = '{"items": [{"sub_question": "How is the fused score computed?", "tool_name": "facts"}]}'
CITATION = re.compile(r"\[(\d+)\]")


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    storage: Path = tmp_path_factory.mktemp("serve-llm") / "storage"
    replies = [  # per question: the plan, then the answer
        ScriptedReply(text, prompt_tokens=tokens, completion_tokens=25)
        for _ in range(2)
        for text, tokens in [(PLAN, 40), (REPLY, 300)]
    ]
    # Ingested first without an LLM: with one, ingest would ask it for section summaries and
    # take the replies scripted for the questions.
    with running_server(storage) as base:
        assert upload_and_wait(base, DEMO_PDF, "demo")["status"] == "done"
    with running_llm(replies) as llm:
        env = {"LLM_PROVIDER": "openai_like", "LLM_BASE_URL": llm.base_url, "LLM_MODEL": "scripted"}
        with running_server(storage, **env) as base:
            yield openai.OpenAI(base_url=f"{base}/v1", api_key="not-needed", max_retries=0)


def test_an_llm_answer_streams_like_it_answers_whole_with_usage(client: openai.OpenAI) -> None:
    messages = [{"role": "user", "content": QUESTION}]
    whole = client.chat.completions.create(model="demo", messages=messages)
    answer = whole.choices[0].message.content
    assert answer.startswith("It sums 1/(k + rank)") and "[42]" not in answer
    assert whole.usage is not None and whole.usage.total_tokens == 390  # plan 65, answer 325
    assert whole.model_extra["metadata"]["model"] == "scripted"
    planned = whole.model_extra["metadata"]["subQuestions"]
    assert [(q["question"], q["tool"]) for q in planned] == [
        ("How is the fused score computed?", "facts")
    ]
    chunks = list(client.chat.completions.create(model="demo", messages=messages, stream=True))
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == answer
    last = chunks[-1]
    assert last.usage is not None and last.usage.total_tokens == 390
    numbers = {s["citationNumber"] for s in last.model_extra["sources"]}
    assert {int(n) for n in CITATION.findall(answer)} <= numbers
