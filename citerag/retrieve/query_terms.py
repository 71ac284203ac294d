"""Query understanding for filings: the words analysts use, mapped to the words filings print.

"Income statement" is printed "Consolidated Statements of Operations", "capex" is "purchases of
property and equipment", and a metric ("operating margin") is computed from statement lines the
question never names. Keyword search gets those words added; the question itself is unchanged.
"""

from __future__ import annotations

import re

_EXPANSIONS: tuple[tuple[str, str], ...] = (
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
_COMPILED = tuple((re.compile(pattern, re.IGNORECASE), words) for pattern, words in _EXPANSIONS)


def filing_terms(question: str) -> list[str]:
    """The filing vocabulary that the question's analyst terms stand for, in a stable order."""
    return [words for pattern, words in _COMPILED if pattern.search(question)]


def keyword_query(question: str) -> str:
    """The question with the filing words its analyst terms stand for appended."""
    terms = filing_terms(question)
    return question if not terms else f"{question}\n{' '.join(terms)}"
