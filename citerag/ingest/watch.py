"""`main.py ingest FOLDER --watch`: a sync after each change to the folder, until Ctrl-C.

Changes come from `watchfiles` (inotify and its kin, polling where there is none), gathered
for DEBOUNCE_MS so that a copy of many files is one sync. A file still being written is not
read half-way: one whose size or modification time moved since the last look, or that was
modified less than SETTLE_S ago, is left to a later sync (`sync_folder`'s `settling`), which the
watch makes on its own once the file has been still for SETTLE_S.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Iterable
from pathlib import Path

import watchfiles

from citerag.ingest.discover import discover_pdfs, is_pdf_name
from citerag.ingest.sync import source_of

DEBOUNCE_MS = 500
RECHECK_MS = 500  # how often files left waiting are looked at again
SETTLE_S = 1.0
Stat = tuple[int, int]  # size, mtime in nanoseconds
SyncRound = Callable[[Collection[str]], object]


class Settler:
    """Which PDFs of a folder are still being written, from one look to the next."""

    def __init__(self, folder: Path, settle_s: float = SETTLE_S) -> None:
        self._folder = folder
        self._settle_ns = int(settle_s * 1e9)
        self._seen: dict[str, Stat] = {}

    def unsettled(self) -> set[str]:
        """Sources of the PDFs modified in the last SETTLE_S or changed since the last look."""
        now = time.time_ns()
        current = dict(self._stats())
        moving = {
            source
            for source, (size, mtime) in current.items()
            if now - mtime < self._settle_ns
            or self._seen.get(source, (size, mtime)) != (size, mtime)
        }
        self._seen = current
        return moving

    def _stats(self) -> Iterable[tuple[str, Stat]]:
        for item in discover_pdfs([self._folder]):
            if not item.ok:
                continue
            try:
                stat = item.path.stat()
            except OSError:
                continue  # gone since it was listed: the sync finds it gone
            yield source_of(self._folder, item.path), (stat.st_size, stat.st_mtime_ns)


def _relevant(_change: watchfiles.Change, path: str) -> bool:
    """PDFs, and folders (a folder moved in or out carries its PDFs)."""
    return is_pdf_name(Path(path)) or not Path(path).suffix


def watch_folder(
    folder: Path,
    sync: SyncRound,
    settle_s: float = SETTLE_S,
    stop_event: threading.Event | None = None,
) -> None:
    """Sync now, then after every change, until KeyboardInterrupt (or `stop_event`)."""
    settler = Settler(folder, settle_s)
    waiting = settler.unsettled()
    sync(waiting)
    for changes in watchfiles.watch(
        folder,
        watch_filter=_relevant,
        debounce=DEBOUNCE_MS,
        rust_timeout=RECHECK_MS,
        yield_on_timeout=True,
        stop_event=stop_event,
    ):
        unsettled = settler.unsettled()
        changed = {str(Path(path)) for _, path in changes}
        settled = waiting - unsettled
        if settled or not changed <= unsettled:
            sync(unsettled)
        waiting = unsettled
