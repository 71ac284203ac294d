"""Which consistency level a search on a Milvus server asks for.

A Strong search waits until the server has applied every write made before it, which on Milvus
2.3 costs about one time tick (~200 ms) per search; a Bounded one reads what is at most the
server's `common.gracefulTime` old (5 s by default) and answers in a few ms. Searches are
Bounded, except within `window_s` seconds after this process learnt of a change to the
collection: a write of its own, a change another process made that the docstore's change record
reported, or the first time it opened the collection (what it loaded may be seconds old). A
write is always in Milvus before its change record, so a search that could miss it is Strong.
"""

from __future__ import annotations

import threading
import time

STRONG = "Strong"
BOUNDED = "Bounded"
DEFAULT_WINDOW_S = 5.0  # Milvus's default common.gracefulTime


class Freshness:
    """The time each Milvus collection was last known to change, and the level it implies."""

    def __init__(self, window_s: float = DEFAULT_WINDOW_S) -> None:
        self._window_s = window_s
        self._changed: dict[str, float] = {}
        self._lock = threading.Lock()

    def changed(self, name: str) -> None:
        with self._lock:
            self._changed[name] = time.monotonic()

    def level(self, name: str) -> str:
        """Strong within the window after a change, and for a collection not seen before (whose
        window starts now); Bounded after it."""
        now = time.monotonic()
        with self._lock:
            changed = self._changed.setdefault(name, now)
        return STRONG if now - changed < self._window_s else BOUNDED
