"""Parsing the next file of a shelf while the current one is embedded.

Parsing is single-threaded Python (PyMuPDF's table finder most of all) and embedding keeps the
other cores busy, so a shelf goes faster when file N+1 is parsed while file N is embedded and
stored. The parse runs in one separate process (PyMuPDF is not thread-safe; a spawned process,
not a fork of one holding Milvus and ONNX Runtime threads) and lands in the parse cache, where
`parse_document` then finds it. A failed background parse is forgotten: the file is parsed again
in line, where its error is reported as usual. While scanned pages are read by OCR, the process
writes the page it is on to a small file beside the parse cache, which `wait` passes on.
"""

from __future__ import annotations

import hashlib
import json
import logging
import multiprocessing
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from citerag.parse.ocr import OcrOptions, PageProgress
from citerag.parse.select import parse_document
from citerag.parse.validate import inspect_pdf
from citerag.settings import Settings
from citerag.store.atomic_dirs import write_json_atomically

log = logging.getLogger(__name__)
POLL_S = 0.5  # how often `wait` looks at the background parse's page


def parse_into_cache(path: Path, settings: Settings) -> None:
    """Parse `path` under `settings` into the parse cache (run in the background process)."""
    info = inspect_pdf(path, settings.ocr_languages)
    where = _progress_file(settings, path)

    def tell(page: int, read: int, total: int) -> None:
        write_json_atomically(where, [page, read, total])

    try:
        parse_document(
            path,
            info.sha256,
            settings.parser,
            settings.parse_cache_dir,
            settings.mineru_tier,
            ocr=OcrOptions.of(settings),
            progress=tell,
        )
    finally:
        where.unlink(missing_ok=True)


def _progress_file(settings: Settings, path: Path) -> Path:
    name = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    return settings.parse_cache_dir / f"{name}.ocr-progress.json"


def _read_progress(where: Path) -> tuple[int, int, int] | None:
    try:
        page, read, total = json.loads(where.read_text(encoding="utf-8"))
        return int(page), int(read), int(total)
    except (OSError, ValueError, TypeError):
        return None


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

    def wait(self, path: Path, progress: PageProgress | None = None) -> None:
        """Wait for `path`'s background parse, if one was started, telling `progress` the page
        OCR is reading; its failure is ignored."""
        key = path.resolve()
        future = self._pending.pop(key, None)
        if future is None:
            return
        where, told = _progress_file(self._settings, key), None
        while True:
            try:
                future.result(timeout=POLL_S if progress is not None else None)
                return
            except FutureTimeout:
                now = _read_progress(where)
                if progress is not None and now is not None and now != told:
                    progress(*now)
                    told = now
            except Exception as error:  # parsed again in line, which reports the error
                log.debug("background parse of %s failed: %s", path.name, error)
                return

    def close(self) -> None:
        if self._pool is not None:
            for future in self._pending.values():
                future.cancel()
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        self._pending.clear()
