"""An article's domain profile reaches the retriever through its settings, whichever entry point
loads it; the generic retriever holds no domain words of its own."""

from __future__ import annotations

import config
import extraction_schemas
from citerag.article import Article, load_article
from citerag.domain import GENERIC
from extraction_schemas import FINANCIAL_VOCABULARY


def _load(article: str | None = None, collection: str | None = None) -> Article:
    return load_article(config, extraction_schemas.SCHEMAS, article, collection, environ={})


def test_the_10k_articles_get_the_finance_profile_by_name_or_by_collection() -> None:
    for loaded in (_load("netflix_10k"), _load(collection="microsoft_10k")):
        assert loaded.settings.retrieval.vocabulary == FINANCIAL_VOCABULARY
        assert loaded.schema is extraction_schemas.SCHEMAS["financial"]


def test_other_articles_and_bare_collections_get_no_domain_words() -> None:
    for loaded in (_load("paul_graham_essay"), _load("career_ai"), _load(collection="mine")):
        assert loaded.settings.retrieval.vocabulary == GENERIC
        assert loaded.settings.retrieval.vocabulary.keyword_query("the income statement") == (
            "the income statement"
        )
    bare = _load()
    assert bare.name is None and bare.collection == "default" and bare.schema is None


def test_the_profile_changes_nothing_else() -> None:
    finance, essay = _load("netflix_10k").settings, _load("paul_graham_essay").settings
    assert finance.with_overrides(vocabulary=GENERIC) == essay


def test_no_package_module_holds_filing_words() -> None:
    from pathlib import Path

    import citerag

    package = Path(citerag.__file__).parent
    for path in (package / "retrieve").glob("*.py"):
        text = path.read_text().lower()
        for word in ("balance sheet", "statements of operations", "capex", "cash flows"):
            assert word not in text, f"{path.name} names {word!r}"
