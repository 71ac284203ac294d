"""Each collection's loaded state, kept in line with the docstore."""

from __future__ import annotations

import threading
from collections.abc import Callable

from citerag.domain import DomainVocabulary
from citerag.retrieve.collection_state import CollectionState, refresh_state
from citerag.store.base import DocStore, PageIndex
from citerag.store.keywords import KeywordIndex


class CollectionStates:
    """The latest state of each collection asked, one lock per collection so that a slow load
    of one never holds up questions to another. `before_load(collection)` runs first (the
    split-brain check); `on_change(collection)` is told when a state was loaded or changed
    (the vector index then makes its searches see the newest writes). `pages` is the page
    index the states search for pages by head vector."""

    def __init__(
        self,
        docstore: DocStore,
        keywords: KeywordIndex,
        vocabulary: DomainVocabulary,
        before_load: Callable[[str], object],
        on_change: Callable[[str], object] = lambda collection: None,
        pages: PageIndex | None = None,
    ) -> None:
        self._pages = pages
        self._docstore = docstore
        self._keywords = keywords
        self._vocabulary = vocabulary
        self._before_load = before_load
        self._on_change = on_change
        self._states: dict[str, CollectionState] = {}
        self._locks: dict[str, threading.Lock] = {}
        self._lock = threading.Lock()  # guards the two dicts, never held while loading

    def current(self, collection: str) -> CollectionState:
        """The collection's state, first brought in line with the docstore by delta: what
        another process added or removed since is loaded or dropped, document by document."""
        self._before_load(collection)
        with self._lock:
            lock = self._locks.setdefault(collection, threading.Lock())
        with lock:
            with self._lock:
                state = self._states.get(collection)
            fresh = refresh_state(
                state, self._docstore, self._keywords, collection, self._vocabulary, self._pages
            )
            if fresh is not state:
                self._on_change(collection)
            with self._lock:
                self._states[collection] = fresh
            return fresh

    def forget(self, collection: str) -> None:
        """Drop the loaded state: the next question loads the collection whole."""
        with self._lock:
            self._states.pop(collection, None)
