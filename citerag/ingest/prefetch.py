"""Parsing the next file of a shelf while the current one is embedded.

Parsing is single-threaded Python (PyMuPDF's table finder most of all) and embedding keeps the
other cores busy, so a shelf goes faster when file N+1 is parsed while file N is embedded and
stored. The parse runs in one separate process (PyMuPDF is not thread-safe; a spawned process,
not a fork of one holding Milvus and ONNX Runtime threads) and lands in the parse cache, where
`parse_document` then finds it. A failed background parse is forgotten: the file is parsed again
in line, where its error is reported as usual. While scanned pages are read by OCR, the process
writes the page it is on to a small file beside the parse cache, which `wait` passes on.

The parse process ends when the process that started it is gone, even by SIGKILL (it would
otherwise wait on its task pipe for ever, holding its memory and its resource tracker, whose
pipe it keeps open): on Linux the kernel kills it (PR_SET_PDEATHSIG, when the pool was started by
the main thread, since the signal follows the starting thread), and everywhere a thread in it
sees its parent change (`os.getppid()`) within PARENT_POLL_S.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from concurrent.futures import BrokenExecutor, Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from citerag.parse.ocr import OcrOptions, PageProgress
from citerag.parse.select import parse_document
from citerag.parse.validate import inspect_pdf
from citerag.settings import Settings
from citerag.store.atomic_dirs import write_json_atomically

log = logging.getLogger(__name__)
PARENT_POLL_S = 0.5
_PR_SET_PDEATHSIG = 1  # linux/prctl.h


def end_with_parent(parent: int, kernel_signal: bool) -> None:
    """Make the calling process (a parse worker, as its initializer) end when `parent` does."""
    if kernel_signal and sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        except (OSError, AttributeError) as error:  # no prctl: the thread below still watches
            log.debug("PR_SET_PDEATHSIG unavailable: %s", error)
    if os.getppid() != parent:  # the parent died before the signal was asked for
        os._exit(1)
    watch = threading.Thread(target=_watch_parent, args=(parent,), name="parent-watch", daemon=True)
    watch.start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(PARENT_POLL_S)
    os._exit(1)  # nothing to flush: a parse lands in the cache by an atomic rename, or not at all


POLL_S = 0.5  # how often `wait` looks at the background parse's page


def parse_into_cache(path: Path, settings: Settings) -> None:
    """Parse `path` under `settings` into the parse cache (run in the background process)."""
    info = inspect_pdf(path, settings.parse.ocr_languages)
    where = _progress_file(settings, path)

    def tell(page: int, read: int, total: int) -> None:
        write_json_atomically(where, [page, read, total])

    try:
        parse_document(
            path,
            info.sha256,
            settings.parse.parser,
            settings.storage.parse_cache_dir,
            settings.parse.mineru_tier,
            ocr=OcrOptions.of(settings.parse),
            progress=tell,
        )
    finally:
        where.unlink(missing_ok=True)


def _progress_file(settings: Settings, path: Path) -> Path:
    name = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    return settings.storage.parse_cache_dir / f"{name}.ocr-progress.json"


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
            main_thread = threading.current_thread() is threading.main_thread()
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=context,
                initializer=end_with_parent,
                initargs=(os.getpid(), main_thread),
            )
        try:
            self._pending[key] = self._pool.submit(parse_into_cache, key, self._settings)
        except BrokenExecutor as error:  # the process died: parse in line from now on
            log.debug("background parsing stopped: %s", error)

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
