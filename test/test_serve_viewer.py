"""The viewer in headless Chromium (Debian's, driven by Playwright): ask, watch the answer
arrive, click [1], see its page with one box per highlight. A screenshot is kept in
test/artifacts/ for a person to look at. CHROMIUM_PATH names another Chromium binary."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import DEMO_PDF, PROJECT_DIR
from serve_helpers import running_server, upload_and_wait

pytestmark = pytest.mark.slow
ARTIFACTS = PROJECT_DIR / "test" / "artifacts"
QUESTION = "How is the fused score of a chunk computed?"
TIMEOUT_MS = 60_000
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    storage = tmp_path_factory.mktemp("viewer") / "storage"
    with running_server(storage) as url:
        assert upload_and_wait(url, DEMO_PDF, "demo")["status"] == "done"
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(chromium).is_file():
        pytest.fail("Chromium is missing: `apt-get install -y chromium` (setup.sh does this)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def inside(box: dict[str, float], frame: dict[str, float]) -> bool:
    """The box lies on the page image (a pixel of rounding allowed)."""
    right, bottom = box["x"] + box["width"], box["y"] + box["height"]
    return (
        frame["x"] - 1 <= box["x"] <= right <= frame["x"] + frame["width"] + 1
        and frame["y"] - 1 <= box["y"] <= bottom <= frame["y"] + frame["height"] + 1
    )


def test_ask_click_the_first_citation_and_see_its_boxed_page(base: str, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    _ask(page, base, QUESTION)

    answer = page.inner_text("#answer")
    assert "[1]" in answer
    assert page.locator(".source-card").count() >= 1
    highlights = page.evaluate("sources.find(s => s.citationNumber === 1).highlights.length")
    assert highlights >= 1
    assert page.input_value("#mode") == "subquestions"
    planned = page.evaluate("subQuestions.length")
    assert planned >= 1 and page.locator("#sub-questions li.sub-question").count() == planned
    assert page.locator("#sub-questions-title").is_visible()

    page.locator("#answer button.cite[data-citation='1']").first.click()
    page.wait_for_selector("body[data-state='page-ready']", timeout=TIMEOUT_MS)
    image = page.locator("#page-image")
    assert image.evaluate("img => img.complete && img.naturalWidth > 0")
    boxes = page.locator("#page-boxes .highlight-box")
    assert boxes.count() == highlights
    assert page.locator("#page-boxes .highlight-box.approximate").count() == 0
    assert page.locator("#highlight-list li").count() == highlights
    frame = image.bounding_box()
    for index in range(boxes.count()):
        box = boxes.nth(index).bounding_box()
        assert box is not None and box["width"] > 5 and box["height"] > 5
        assert inside(box, frame)
    cited_page = page.evaluate("sources.find(s => s.citationNumber === 1).pageNumber")
    assert page.inner_text("#page-title").endswith(f"page {cited_page}")

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "viewer.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert errors == []
    page.close()


def test_the_mode_selector_sends_the_mode_and_single_mode_has_no_sub_questions(
    base: str, browser: Any
) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    sent: list[str] = []
    page.on(
        "request",
        lambda request: (
            sent.append(request.post_data or "")
            if request.url.endswith("/v1/chat/completions")
            else None
        ),
    )
    page.goto(base + "/")
    page.wait_for_selector("#collection option[value='demo']", state="attached")
    page.select_option("#collection", "demo")
    page.select_option("#mode", "single")
    page.fill("#question", QUESTION)
    page.click("#ask")
    page.wait_for_selector("body[data-state='answered']", timeout=TIMEOUT_MS)
    assert '"mode":"single"' in sent[-1].replace(" ", "")
    assert "[1]" in page.inner_text("#answer")
    assert page.locator("#sub-questions li").count() == 0
    assert not page.locator("#sub-questions-title").is_visible()
    page.close()


def _ask(page: Any, base: str, question: str) -> None:
    page.goto(base + "/")
    page.wait_for_selector("#collection option[value='demo']", state="attached")
    page.select_option("#collection", "demo")
    page.fill("#question", question)
    page.click("#ask")
    page.wait_for_selector("body[data-state='answered']", timeout=TIMEOUT_MS)


def test_a_table_answer_boxes_the_answering_row_on_the_page(base: str, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    _ask(page, base, "Which parser had the highest table fidelity in Table 1?")
    assert "PyMuPDF has the highest table fidelity, 0.97 [1]." in page.inner_text("#answer")
    page.locator("#answer button.cite[data-citation='1']").first.click()
    page.wait_for_selector("body[data-state='page-ready']", timeout=TIMEOUT_MS)
    boxes = page.locator("#page-boxes .highlight-box")
    assert boxes.count() == 1
    assert page.locator("#page-boxes .highlight-box.approximate").count() == 0
    frame = page.locator("#page-image").bounding_box()
    box = boxes.first.bounding_box()
    assert box is not None and inside(box, frame)
    assert box["height"] < 0.03 * frame["height"]  # one row, not the whole table
    page.close()


def test_numbers_no_cited_source_holds_are_marked_in_the_answer(base: str, browser: Any) -> None:
    """The answer stream is scripted: the mark comes from metadata.unsupportedNumbers."""
    import json

    text = "PyMuPDF scored 0.99 in fidelity [1]."
    claim = {"number": "0.99", "claim": text, "citations": [1]}
    chunks = [
        {"choices": [{"delta": {"role": "assistant", "content": text}}]},
        {
            "choices": [{"delta": {}}],
            "sources": [],
            "metadata": {"subQuestions": [], "unsupportedNumbers": [claim]},
        },
    ]
    body = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.route(
        "**/v1/chat/completions",
        lambda route: route.fulfill(status=200, content_type="text/event-stream", body=body),
    )
    _ask(page, base, "Which parser had the highest table fidelity?")
    marks = page.locator("#answer mark.unsupported")
    assert marks.count() == 1 and marks.first.inner_text() == "0.99"
    assert "[1]" in (marks.first.get_attribute("title") or "")
    page.close()
