"""Split-brain repair, run once per collection per process (`SplitBrainRepairer` does the work)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from citerag.ingest.repair import Repair, SplitBrainRepairer


class RepairOnce:
    """Detects and repairs a collection whose Milvus rows and docstore chunks disagree, the
    first time the collection is used; `on_repaired(collection)` is told when rows changed, so
    that what was loaded from them is dropped."""

    def __init__(self, repairer: SplitBrainRepairer, on_repaired: Callable[[str], None]) -> None:
        self._repairer = repairer
        self._on_repaired = on_repaired
        self._checked: set[str] = set()
        self._lock = threading.Lock()

    def check(self, collection: str, force: bool = False) -> list[Repair]:
        """The repairs made (none when the collection was checked before, unless `force`d)."""
        with self._lock:
            if collection in self._checked and not force:
                return []
            self._checked.add(collection)
        repairs = self._repairer.check(collection)
        if repairs:
            self._on_repaired(collection)
        return repairs
