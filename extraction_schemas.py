"""The schema registry: entity labels (GLiNER) and semantic metadata (LangExtract) per domain.

`config.ARTICLE_CONFIGS[...]["schema"]` names the domain an article uses. Each schema gives
GLiNER's zero-shot labels, LangExtract's instruction, the attributes it fills (with the values
it should prefer), one worked example and the domain's retrieval vocabulary (words a question
stands for, key page titles; `citerag.domain`), which the article's settings carry to the
retriever. At query time the values a filter can take come from
what is stored (`distinct()` over the collection), not from this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from citerag.domain import DomainVocabulary
from citerag.errors import ConfigError


@dataclass(frozen=True)
class ExtractionSchema:
    name: str
    entity_labels: tuple[str, ...]  # GLiNER zero-shot labels
    metadata_prompt: str  # the LangExtract instruction for semantic metadata
    attributes: dict[str, tuple[str, ...]] = field(default_factory=dict)  # name -> preferred values
    example_text: str = ""
    example_extractions: tuple[tuple[str, str, dict[str, str]], ...] = ()  # (class, span, attrs)
    vocabulary: DomainVocabulary = DomainVocabulary()  # retrieval's words for the domain


# Filings: the words analysts use, mapped to the words filings print. "Income statement" is
# printed "Consolidated Statements of Operations", "capex" is "purchases of property and
# equipment", and a metric ("operating margin") is computed from statement lines the question
# never names.
FINANCIAL_EXPANSIONS: tuple[tuple[str, str], ...] = (
    (
        r"income statements?|p\s*&\s*l|profit and loss"
        r"|statements? of (?:operations|income|earnings)",
        "consolidated statements of operations income statements revenues net income",
    ),
    (
        r"balance sheets?|statements? of financial (?:position|condition)",
        "consolidated balance sheets total assets liabilities stockholders equity",
    ),
    (
        r"cash ?flow statements?|statements? of cash flows?",
        "consolidated statements of cash flows operating investing financing activities",
    ),
    (
        r"(?:stock|share)holders'? equity statements?"
        r"|statements? of (?:stock|share)holders'? equity",
        "consolidated statements of stockholders equity",
    ),
    (r"comprehensive income", "consolidated statements of comprehensive income"),
    (
        r"\bcap(?:ital )?ex(?:penditures?)?\b",
        "purchases of property and equipment additions to property and equipment",
    ),
    (
        r"free cash flows?",
        "net cash provided by operating activities purchases of property and equipment",
    ),
    (
        r"\bnet (?:income|loss|earnings)\b|\boperating income\b|\bincome before (?:income )?tax",
        "income statements consolidated statements of operations",
    ),
    (r"operating margins?", "operating income revenues"),
    (r"gross margins?", "gross margin revenues cost of revenues"),
    (r"(?:net|profit) margins?", "net income revenues"),
    (r"fixed[- ]asset turnover", "revenues property and equipment net"),
    (r"(?<!fixed )(?<!fixed-)asset turnover", "revenues total assets"),
    (r"current ratio|working capital", "total current assets total current liabilities"),
    (r"quick ratio", "cash equivalents short-term investments accounts receivable current"),
    (r"debt[- ]to[- ]equity|leverage ratio", "long-term debt total stockholders equity"),
    (r"return on (?:average )?equity|\broe\b", "net income total stockholders equity"),
    (r"return on (?:average )?assets|\broa\b", "net income total assets"),
    (r"effective tax rate", "provision for income taxes income before income taxes"),
    (r"days sales outstanding|\bdso\b", "accounts receivable net revenue"),
    (r"inventory turnover", "cost of revenue inventories"),
    (r"\beps\b", "earnings per share basic diluted"),
    (r"payout ratio|dividends? paid", "common stock cash dividends paid net income"),
    (r"buybacks?|share repurchases?", "common stock repurchased"),
    (
        r"operating cash flows?|cash flows? from operati"
        r"|\bcash\b[^.?]{0,40}\b(?:operations|operating activities)\b",
        "net cash from operations net cash provided by operating activities",
    ),
    (r"cash conversion", "net cash from operations net income"),
    (r"\bebitda\b", "operating income depreciation amortization"),
    (r"\br\s*&\s*d\b", "research and development"),
    (r"\bsg\s*&\s*a\b", "selling general and administrative"),
    (r"\bd\s*&\s*a\b", "depreciation and amortization"),
)

# A financial statement is a page that is almost all table under a title line such as
# "CONSOLIDATED STATEMENTS OF CASH FLOWS" or "BALANCE SHEETS (In millions)". Those titles are
# fixed by US GAAP and IFRS practice, so they are recognised across filers.
_HOLDERS = r"(?:stock|share)holders[’'`]?\s+(?:equity|deficit)"
FINANCIAL_STATEMENT_TITLE = (
    r"(?:consolidated\s+)?(?:"
    r"(?:income|operations|earnings|cash\s+flows?|comprehensive\s+(?:income|loss)|"
    + _HOLDERS
    + r")"
    r"\s+statements?"
    r"|statements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings|cash\s+flows?"
    r"|comprehensive\s+(?:income|loss)|financial\s+(?:position|condition)|profit\s+or\s+loss"
    r"|changes\s+in\s+" + _HOLDERS + r"|" + _HOLDERS + r")"
    r"|balance\s+sheets?)"
)

# Which statement a title names, checked in this order (a "statements of comprehensive income"
# is not the income statement; "changes in stockholders' equity" is not the balance sheet).
FINANCIAL_STATEMENT_KINDS: tuple[tuple[str, str], ...] = (
    ("comprehensive income", r"comprehensive\s+(?:income|loss)"),
    ("equity", r"(?:changes\s+in\s+)?" + _HOLDERS + r"|\bequity\s+statements?"),
    ("cash flows", r"cash\s+flows?"),
    ("balance sheet", r"balance\s+sheets?|financial\s+(?:position|condition)"),
    ("income", r"\b(?:operations|income|earnings|profit\s+or\s+loss)\b"),
)

# Analyst concepts and the statements that hold them (the MD&A's results go with "income": its
# margins are computed from the income statement's lines).
FINANCIAL_CONCEPTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        r"working capital|quick ratio|current ratio|acid[- ]test|\bliquidity\b|inventor(?:y|ies)"
        r"|total assets|total liabilities|accounts (?:receivable|payable)|\bgoodwill\b"
        r"|balance sheets?|financial position|book value",
        ("balance sheet",),
    ),
    (
        r"debt[- ]to[- ]|leverage|\bdebt\b|return on (?:average )?(?:equity|assets)|\broe\b|\broa\b"
        r"|asset turnover",
        ("balance sheet", "income"),
    ),
    (
        r"cap(?:ital )?ex|capital expenditures?|free cash flow|dividends? paid|payout"
        r"|cash (?:flows?|from operati)|operating cash|cash conversion|share repurchases?"
        r"|buybacks?|depreciation|\bd\s*&\s*a\b|ebitda",
        ("cash flows",),
    ),
    (
        r"margins?|\bebit(?:da)?\b|revenue|net sales|net income|net earnings|operating income"
        r"|gross profit|cost of (?:goods|sales|revenue)|\beps\b|earnings per share"
        r"|income statements?|p\s*&\s*l|effective tax rate|interest expense|cogs",
        ("income",),
    ),
)

# Which kind of filing reports what a question asks, where it is not the annual report.
FINANCIAL_DOCUMENT_KINDS: tuple[tuple[str, str], ...] = (
    (
        r"non[- ]?gaap|\badjusted\b|excluding (?:the )?impact|exclude the impact"
        r"|constant currency|\borganic\b",
        "earnings release",
    ),
    (
        r"\b(?:new|incoming|interim|appointed|named)\s+(?:ceo|cfo|chief\s+\w+\s+officer)"
        r"|\b(?:resign|departure|appointment)\w*\b",
        "current report",
    ),
)

FINANCIAL_VOCABULARY = DomainVocabulary(
    "financial",
    FINANCIAL_EXPANSIONS,
    key_page_titles=(FINANCIAL_STATEMENT_TITLE,),
    key_page_kinds=FINANCIAL_STATEMENT_KINDS,
    concepts=FINANCIAL_CONCEPTS,
    document_kinds=FINANCIAL_DOCUMENT_KINDS,
)


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
        vocabulary=FINANCIAL_VOCABULARY,
    ),
}


def get_schema(name: str) -> ExtractionSchema:
    try:
        return SCHEMAS[name]
    except KeyError:
        known = ", ".join(sorted(SCHEMAS))
        raise ConfigError(f"Unknown extraction schema {name!r}; use one of {known}.") from None
