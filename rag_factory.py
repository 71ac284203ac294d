"""Builds the query path from `config.py`, as LlamaIndex parts a LlamaIndex app can take.

    from rag_factory import build_engine, build_query_engine
    engine = build_engine(article="paul_graham_essay")
    response = build_query_engine(engine, "paul_graham").query("What did the author do?")

The package (`citerag.query.query_factory`) makes every choice (reranker, answerer, fusion depth)
from the settings; this file loads an article as `main.py` does (`citerag.article`) and hands
out the parts.
"""

from __future__ import annotations

import os

from llama_index.core.postprocessor.types import BaseNodePostprocessor
from llama_index.core.vector_stores.types import MetadataFilters

import config
import extraction_schemas
from citerag.article import Article, active_article, load_article
from citerag.engine import Engine
from citerag.env_file import env_file_variables
from citerag.query.cited_query_engine import CitedQueryEngine
from citerag.retrieve.hybrid import HybridRetriever
from citerag.settings import Settings


def load(article: str | None = None) -> Article:
    """The article's settings, extraction schema and collection (default: config.py's
    ACTIVE_ARTICLE), with `.env`'s variables that the environment lacks."""
    os.environ.update(env_file_variables())  # the LLM SDKs and pymilvus read the environment
    return load_article(config, extraction_schemas.SCHEMAS, article or active_article(config))


def build_settings(article: str | None = None) -> Settings:
    """`config.py` (with the article's overrides) and the environment, merged and checked."""
    return load(article).settings


def build_engine(settings: Settings | None = None, article: str | None = None) -> Engine:
    """The engine, with the article's extraction schema (GLiNER labels, LangExtract attributes);
    `settings`, when given, replace the article's."""
    loaded = load(article)
    return Engine(settings or loaded.settings, schema=loaded.schema)


def build_retriever(
    engine: Engine, collection: str, filters: MetadataFilters | None = None
) -> HybridRetriever:
    """The hybrid `BaseRetriever` over one collection (BM25 ∪ vectors ∪ page evidence)."""
    return engine.factory.retriever(engine.collection_state(collection), filters)


def build_postprocessors(
    engine: Engine, collection: str, top_k: int | None = None
) -> list[BaseNodePostprocessor]:
    """The reranker and the highlighter, as LlamaIndex node postprocessors."""
    return engine.factory.postprocessors(collection, top_k).steps


def build_query_engine(
    engine: Engine,
    collection: str,
    top_k: int | None = None,
    filters: MetadataFilters | None = None,
) -> CitedQueryEngine:
    """The query engine `python main.py query` uses; its `Response` carries cited sources."""
    return engine.query_engine(collection, top_k=top_k, filters=filters)
