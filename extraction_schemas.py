"""The schema registry: entity labels (GLiNER) and semantic metadata (LangExtract) per domain.

`config.ARTICLE_CONFIGS[...]["schema"]` names the domain an article uses. Each schema gives
GLiNER's zero-shot labels, LangExtract's instruction, the attributes it fills (with the values
it should prefer) and one worked example. At query time the values a filter can take come from
what is stored (`distinct()` over the collection), not from this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from citerag.errors import ConfigError


@dataclass(frozen=True)
class ExtractionSchema:
    name: str
    entity_labels: tuple[str, ...]  # GLiNER zero-shot labels
    metadata_prompt: str  # the LangExtract instruction for semantic metadata
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> preferred values
    example_text: str = ""
    example_extractions: tuple[tuple[str, str, dict[str, str]], ...] = ()  # (class, span, attrs)


SCHEMAS: dict[str, ExtractionSchema] = {
    "academic": ExtractionSchema(
        "academic",
        ("method", "dataset", "metric", "model", "task", "author", "institution"),
        "Extract the research contributions, methods, datasets and results the passage states.",
        {
            "contribution_types": ("method", "dataset", "benchmark", "analysis", "survey"),
            "research_areas": ("retrieval", "nlp", "vision", "learning", "systems"),
            "result_kinds": ("improvement", "negative", "ablation", "comparison"),
        },
        "We propose HybridRank, which improves recall@10 by 4 points on MS MARCO.",
        (
            (
                "method",
                "HybridRank",
                {"contribution_types": "method", "research_areas": "retrieval"},
            ),
        ),
    ),
    "technical": ExtractionSchema(
        "technical",
        ("method", "algorithm", "dataset", "metric", "software", "model"),
        "Extract the methods, components and measured results the passage describes.",
        {
            "component_types": ("parser", "retriever", "reranker", "index", "model", "pipeline"),
            "result_kinds": ("latency", "accuracy", "throughput", "cost"),
        },
        "BM25 and vector retrieval are fused by reciprocal rank before ColBERT reranking.",
        (("component", "ColBERT reranking", {"component_types": "reranker"}),),
    ),
    "essay": ExtractionSchema(
        "essay",
        ("person", "organization", "place", "product", "year"),
        "Extract the experiences, periods of life, people and advice the passage describes.",
        {
            "concept_categories": ("technology", "startups", "programming", "art", "writing"),
            "experience_periods": ("childhood", "college", "grad school", "viaweb", "yc"),
            "experience_sentiments": ("positive", "negative", "mixed"),
            "time_decades": ("1970s", "1980s", "1990s", "2000s", "2010s"),
        },
        "In 1995 we started Viaweb, and it was exhausting but exciting.",
        (
            (
                "experience",
                "we started Viaweb",
                {
                    "concept_categories": "startups",
                    "experience_periods": "viaweb",
                    "experience_sentiments": "mixed",
                    "time_decades": "1990s",
                },
            ),
        ),
    ),
    "career": ExtractionSchema(
        "career",
        ("skill", "role", "project", "organization", "person"),
        "Extract the career advice, skills and project types the passage recommends.",
        {
            "advice_domains": ("learning", "projects", "job search", "networking", "mindset"),
            "career_stages": ("student", "early career", "career switch", "senior"),
        },
        "Start with small projects to build skills before applying for ML engineer roles.",
        (("advice", "Start with small projects", {"advice_domains": "projects"}),),
    ),
    "financial": ExtractionSchema(
        "financial",
        ("company", "financial metric", "monetary amount", "fiscal period", "segment", "risk"),
        "Extract the financial metrics, amounts, periods and segments the passage reports.",
        {
            "statement_types": ("income", "balance sheet", "cash flow", "segment", "risk"),
            "metric_names": ("revenue", "operating income", "net income", "cash", "members"),
            "fiscal_periods": ("2019", "2020", "2021"),
        },
        "Revenues were $24,996,056 thousand in 2020, up 24% from 2019.",
        (
            (
                "metric",
                "Revenues were $24,996,056 thousand in 2020",
                {"statement_types": "income", "metric_names": "revenue", "fiscal_periods": "2020"},
            ),
        ),
    ),
}


def get_schema(name: str) -> ExtractionSchema:
    try:
        return SCHEMAS[name]
    except KeyError:
        known = ", ".join(sorted(SCHEMAS))
        raise ConfigError(f"Unknown extraction schema {name!r}; use one of {known}.") from None
