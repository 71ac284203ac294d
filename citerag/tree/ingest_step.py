"""The ingest step that builds a document's tree: timed, summarized by the LLM when one is
configured, and never fatal to the ingest."""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from pathlib import Path

from llama_index.core.schema import TextNode

from citerag.errors import RagError
from citerag.llm.llm_chat import LLMChat
from citerag.settings import Settings
from citerag.tree.build import build_tree
from citerag.tree.summaries import Summarizer, SummaryCache, summarize_tree
from citerag.types import JSONObject, ParsedDocument

log = logging.getLogger(__name__)
TREE_SECONDS = "tree_seconds"  # on the log record: how long the build took (benchmarks read it)
SUMMARY_CACHE = "summary_cache"  # under the storage folder


def summarizer_for(settings: Settings) -> Summarizer | None:
    """LLM node summaries, cached under the storage folder and asked `tree_summary_workers` at
    a time, when an LLM is configured and can be set up; None (extractive summaries) otherwise."""
    try:
        answerer = LLMChat.from_settings(settings.llm)
    except RagError as error:
        log.warning("node summaries stay extractive: %s", error)
        return None
    if answerer is None:
        return None
    cache = SummaryCache(settings.storage.storage_dir / SUMMARY_CACHE)
    workers = settings.ingest.tree_summary_workers
    return lambda tree: summarize_tree(tree, answerer.chat, answerer.model, cache, workers)


def build_tree_logged(
    path: Path,
    parsed: ParsedDocument,
    chunks: Sequence[TextNode],
    summarize: Summarizer | None = None,
) -> JSONObject | None:
    """The tree's docstore record, or None (with a warning) when it cannot be built: the
    document is still searchable by chunks, and `main.py tree` says the tree is missing."""
    started = time.perf_counter()
    try:
        tree = build_tree(path, parsed, chunks)
    except Exception as error:  # noqa: BLE001 - a layout oddity must not lose the ingest
        log.warning("%s: no section tree (%s: %s)", parsed.name, type(error).__name__, error)
        return None
    nodes = sum(1 for _ in tree.walk())
    seconds = time.perf_counter() - started
    log.info(
        "%s: section tree of %d nodes from %s in %.2f s",
        parsed.name,
        nodes,
        tree.source,
        seconds,
        extra={TREE_SECONDS: seconds, "document": parsed.name},
    )
    if summarize is not None:
        try:
            summarize(tree)
        except Exception as error:  # noqa: BLE001 - extractive summaries are still there
            log.warning("%s: node summaries stay extractive (%s)", parsed.name, error)
    return tree.to_record()
