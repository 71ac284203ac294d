"""A two-turn conversation through the official `openai` client against the real server: the
second turn ("what does it say about its risks?") is condensed from the first turn's subject,
so its sources are that company's report, while the same words asked alone are not."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pymupdf
import pytest
from serve_helpers import running_server, upload_and_wait

pytestmark = pytest.mark.slow
# Four pages each: with two, the first turn's year sits on half the collection, where the
# retriever's year evidence cannot tell a report's pages apart (see retrieve/evidence.py).
REPORTS = {
    "acme_report.pdf": [
        "Acme Corporation annual report. Acme revenues in 2020 were 4.2 billion dollars, up "
        "from 3.9 billion dollars in 2019, driven by rocket skates and anvils.",
        "Risk factors. Acme depends on a single anvil supplier; a supply disruption is a risk "
        "to its operations.",
        "Products. Acme sells rocket skates, anvils and giant magnets to customers in the desert.",
        "Outlook. Acme expects its anvil sales to grow in 2021 as new stores open.",
    ],
    "globex_report.pdf": [
        "Globex Corporation annual report. Globex revenues in 2020 were 9.8 billion dollars.",
        "Risk factors. What does it say about its risks? The risks are many: risks of "
        "competition, risks of regulation, risks of cyber attacks and risks of its debt.",
        "Products. Globex sells doomsday devices and hammocks.",
        "Outlook. Globex expects revenue growth in 2021.",
    ],
}


def _report(path: Path, pages: list[str]) -> Path:
    with pymupdf.open() as document:
        for text in pages:
            page = document.new_page()
            page.insert_textbox(pymupdf.Rect(72, 72, 520, 700), text, fontsize=11)
        document.save(path)
    return path


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[openai.OpenAI]:
    folder = tmp_path_factory.mktemp("conversation")
    with running_server(folder / "storage") as base:
        for name, pages in REPORTS.items():
            job = upload_and_wait(base, _report(folder / name, pages), "companies")
            assert job["status"] == "done", job
        yield openai.OpenAI(base_url=f"{base}/v1", api_key="not-needed", max_retries=0)


def _ask(client: openai.OpenAI, messages: list[dict[str, str]]) -> Any:
    return client.chat.completions.create(
        model="companies", messages=messages, extra_body={"mode": "single", "top_k": 3}
    )


def test_the_second_turn_is_answered_about_the_first_turns_subject(
    client: openai.OpenAI,
) -> None:
    first = [{"role": "user", "content": "What were Acme's revenues in 2020?"}]
    one = _ask(client, first)
    assert {s["documentName"] for s in one.model_extra["sources"]} >= {"acme_report.pdf"}
    assert "condensedQuestion" not in one.model_extra["metadata"]
    follow_up = "What does it say about its risks?"
    conversation = [
        {"role": "system", "content": "Answer from the reports."},
        *first,
        {"role": "assistant", "content": one.choices[0].message.content},
        {"role": "user", "content": follow_up},
    ]
    two = _ask(client, conversation)
    metadata = two.model_extra["metadata"]
    assert metadata["condenseMethod"] == "offline"
    assert "Acme" in metadata["condensedQuestion"] and "2020" in metadata["condensedQuestion"]
    sources = two.model_extra["sources"]
    assert sources[0]["documentName"] == "acme_report.pdf"
    assert any(s["pageNumber"] == 2 and s["documentName"] == "acme_report.pdf" for s in sources)
    alone = _ask(client, [{"role": "user", "content": follow_up}])
    assert alone.model_extra["sources"][0]["documentName"] == "globex_report.pdf"


def test_cli_chat_and_history_carry_the_subject(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    import io
    import json

    from tree_collection import use_storage

    import main

    use_storage(monkeypatch, tmp_path / "storage")
    pdfs = [str(_report(tmp_path / name, pages)) for name, pages in REPORTS.items()]
    target = ["--collection", "companies"]
    assert main.main(["ingest", *pdfs, *target]) == 0
    turns = "What were Acme's revenues in 2020?\n\nWhat does it say about its risks?\n"
    monkeypatch.setattr("sys.stdin", io.StringIO(turns))
    capsys.readouterr()
    assert main.main(["chat", "--mode", "single", "--json", *target]) == 0
    first, second = (json.loads(line) for line in capsys.readouterr().out.splitlines())
    assert "condensedQuestion" not in first["metadata"]
    assert "Acme" in second["metadata"]["condensedQuestion"]
    assert second["sources"][0]["documentName"] == "acme_report.pdf"
    history = tmp_path / "history.txt"
    history.write_text("What were Acme's revenues in 2020?\n")
    follow_up = ["query", "What does it say about its risks?", "--mode", "single"]
    assert main.main([*follow_up, "--history", str(history), *target]) == 0
    shown = capsys.readouterr().out
    assert "asked as: What does it say about its risks, regarding Acme in 2020? (offline)" in shown
    assert "[1] acme_report.pdf, page" in shown and "acme_report.pdf, page 2" in shown, shown
