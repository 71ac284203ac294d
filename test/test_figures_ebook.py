"""A figure question on the career eBook (../shared/eval/career_ai/): answered from the figure's
description when the loopback vision model is configured, from its caption (the words the
diagram writes) otherwise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import ScriptedReply, prompt_of, running_server
from helpers import shared_eval_file
from tree_collection import use_storage

import main

pytestmark = pytest.mark.slow
QUESTION = "What does the figure on page 25 show?"
DIAGRAM = (
    "A two-by-two grid of career moves: a role switch, an industry switch, and a switch of "
    "both role and industry, from an analyst in financial services to a machine learning "
    "engineer in tech."
)
_SOURCE = re.compile(r"^\[(\d+)\] [^\n]*\n(.*?)(?=^\[\d+\] |\Z)", re.S | re.M)


def _respond(body: dict[str, Any]) -> ScriptedReply:
    """Images: the diagram's description for page 25's figure (its caption names "Job
    Search"), a plain one for the others. Answers: the sentence of the source describing the
    figure, cited. Anything else (plans, summaries): nothing usable."""
    content = body["messages"][-1]["content"]
    if isinstance(content, list):
        text = " ".join(str(part.get("text", "")) for part in content)
        return ScriptedReply(DIAGRAM if "Job Search" in text else "A decorative illustration.")
    prompt = prompt_of(body)
    if "Answer using only the sources above" in prompt:
        for number, source in _SOURCE.findall(prompt):
            if "two-by-two grid" in source:
                return ScriptedReply(f"The figure on page 25 shows {DIAGRAM[2:]} [{number}]")
        return ScriptedReply("No source describes the figure [1].")
    return ScriptedReply("")


def _ask(capsys: pytest.CaptureFixture[str], storage: Path) -> dict[str, Any]:
    pdf = shared_eval_file("career_ai", "eBook-How-to-Build-a-Career-in-AI.pdf")
    assert main.main(["ingest", str(pdf), "--collection", "ebook"]) == 0
    capsys.readouterr()
    assert main.main(["query", QUESTION, "--collection", "ebook", "--json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_with_a_vision_model_the_answer_comes_from_the_figures_description(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_storage(monkeypatch, tmp_path / "storage")
    with running_server(respond=_respond) as server:
        monkeypatch.setenv("LLM_PROVIDER", "openai_like")
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_MODEL", "text-model")
        monkeypatch.setenv("VISION_MODEL", "vision-model")
        data = _ask(capsys, tmp_path / "storage")
    images = [b for b in server.requests if isinstance(b["messages"][-1]["content"], list)]
    assert images and all(b["model"] == "vision-model" for b in images)
    assert DIAGRAM[2:] in data["answer"]
    cited = {int(n) for n in re.findall(r"\[(\d+)\]", data["answer"])}
    figure = [s for s in data["sources"] if s["citationNumber"] in cited]
    assert figure and figure[0]["pageNumber"] == 25
    assert figure[0]["content"].startswith("Figure on page 25: A two-by-two grid")


def test_without_a_vision_model_the_caption_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    use_storage(monkeypatch, tmp_path / "storage")
    monkeypatch.delenv("VISION_MODEL", raising=False)
    data = _ask(capsys, tmp_path / "storage")
    assert data["sources"] and data["sources"][0]["pageNumber"] == 25
    assert not any(s["content"].startswith("Figure on page") for s in data["sources"])
    page_words = " ".join(s["content"] for s in data["sources"] if s["pageNumber"] == 25)
    assert "Role Switch" in page_words or "Industry Switch" in page_words
