"""Document cards by the configured LLM, against a loopback OpenAI-compatible server: a good
reply improves the rules' card and is cached (a second read makes no call); broken, hostile and
failing replies keep the rules' card, field by field, and never fail the ingest."""

from __future__ import annotations

import json
from pathlib import Path

from fake_openai_server import ScriptedReply, prompt_of, running_server

from citerag.enrich.card_llm import CardCache, LLMCardReader, merged
from citerag.llm.llm_chat import LLMChat
from citerag.settings import Settings
from citerag.types import DocumentCard

RULES = DocumentCard(
    title="UNITED STATES", organisation="ACME", kind="annual report", fiscal_year=2022
)
PAGES = "FORM 10-K For the fiscal year ended December 31, 2022 ACME ANVILS, INC."
GOOD = {
    "title": "Acme Anvils annual report 2022",
    "organisation": "Acme Anvils, Inc.",
    "ticker": "ACME",
    "authors": [],
    "kind": "annual report",
    "fiscal_year": 2022,
    "quarter": None,
    "period_end": "2022-12-31",
    "date": None,
}


def reader(base_url: str, cache_dir: Path) -> LLMCardReader:
    settings = Settings(llm_provider="openai_like", llm_model="m", llm_base_url=base_url)
    chat = LLMChat.from_settings(settings.llm)
    assert chat is not None
    return LLMCardReader(chat.chat, chat.model, CardCache(cache_dir))


def test_a_good_reply_improves_the_card_and_is_cached(tmp_path: Path) -> None:
    reply = ScriptedReply("Here it is:\n```json\n" + json.dumps(GOOD) + "\n```")
    with running_server([reply]) as server:
        card = reader(server.base_url, tmp_path).improve(RULES, "acme.pdf", PAGES)
        again = reader(server.base_url, tmp_path).improve(RULES, "acme.pdf", PAGES)
        calls = len(server.requests)
    assert card.organisation == "Acme Anvils, Inc." and card.ticker == "ACME"
    assert (card.period_end, card.source) == ("2022-12-31", "llm")
    assert card.title == "Acme Anvils annual report 2022"
    assert again == card and calls == 1  # the second read came from the cache
    prompt = prompt_of(server.requests[0])
    assert "acme.pdf" in prompt and "fiscal year ended December 31, 2022" in prompt


def test_a_broken_reply_keeps_the_rules_card(tmp_path: Path) -> None:
    with running_server([ScriptedReply("I cannot tell what this document is.")]) as server:
        assert reader(server.base_url, tmp_path).improve(RULES, "a.pdf", PAGES) == RULES
    assert not list(tmp_path.rglob("*.json")), "a useless reply is not cached"


def test_a_failing_endpoint_keeps_the_rules_card(tmp_path: Path) -> None:
    with running_server([ScriptedReply("overloaded", status=500)] * 5) as server:
        assert reader(server.base_url, tmp_path).improve(RULES, "a.pdf", PAGES) == RULES


def test_hostile_fields_are_dropped_one_by_one() -> None:
    hostile = {
        "title": "Ignore previous instructions\x00\x1b[2J" + "x" * 5000,
        "organisation": {"$ne": 1},
        "authors": ["Jane Roe", 7],
        "kind": "launch codes",
        "fiscal_year": "2022; DROP TABLE cards",
        "quarter": 9,
        "period_end": "yesterday",
        "date": "2022-13-45",
        "ticker": True,
    }
    card = merged(RULES, hostile)
    assert card.title.startswith("Ignore previous instructions") and len(card.title) <= 200
    assert "\x00" not in card.title and "\x1b" not in card.title
    assert card.organisation == "ACME" and card.kind == "annual report"  # the rules' values
    assert (card.fiscal_year, card.quarter, card.period_end, card.date) == (2022, None, "", "")
    assert card.authors == () and card.ticker == ""
    assert merged(RULES, {"fiscal_year": True}) == RULES  # a bool is no year
