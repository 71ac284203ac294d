"""Parsing the next file of a shelf while the current one is embedded.

Parsing is single-threaded Python (PyMuPDF's table finder most of all) and embedding keeps the
other cores busy, so a shelf goes faster when file N+1 is parsed while file N is embedded and
stored. The parse runs in one separate process (PyMuPDF is not thread-safe; a spawned process,
not a fork of one holding Milvus and ONNX Runtime threads) and lands in the parse cache, where
`parse_document` then finds it. A failed background parse is forgotten: the file is parsed again
in line, where its error is reported as usual.
"""

from __future__ import annotations

import logging
import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path

from citerag.parse.select import parse_document
from citerag.parse.validate import inspect_pdf
from citerag.settings import Settings

log = logging.getLogger(__name__)


def parse_into_cache(path: Path, settings: Settings) -> None:
    """Parse `path` under `settings` into the parse cache (run in the background process)."""
    info = inspect_pdf(path)
    parse_document(
        path, info.sha256, settings.parser, settings.parse_cache_dir, settings.mineru_tier
    )


class ParsePrefetcher:
    """One background parsing process, started on first use and shut down by `close`."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._pool: ProcessPoolExecutor | None = None
        self._pending: dict[Path, Future[None]] = {}

    def start(self, path: Path) -> None:
        """Begin parsing `path` unless it is already under way."""
        key = path.resolve()
        if key in self._pending:
            return
        if self._pool is None:
            context = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        self._pending[key] = self._pool.submit(parse_into_cache, key, self._settings)

    def wait(self, path: Path) -> None:
        """Wait for `path`'s background parse, if one was started; its failure is ignored."""
        future = self._pending.pop(path.resolve(), None)
        if future is None:
            return
        try:
            future.result()
        except Exception as error:  # parsed again in line, which reports the error
            log.debug("background parse of %s failed: %s", path.name, error)

    def close(self) -> None:
        if self._pool is not None:
            for future in self._pending.values():
                future.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
