"""A collection's upkeep beside the engine (`citerag.collection`): the embedding-model record is
read once per snapshot however many questions arrive together, and split-brain repair runs once
per collection unless forced, dropping what was loaded when it changed rows."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, cast

from citerag.collection.model_check import ModelCheck
from citerag.collection.repairs import RepairOnce
from citerag.embed.embedder import Embedder
from citerag.ingest.repair import SplitBrainRepairer
from citerag.retrieve.collection_state import CollectionState
from citerag.store.base import DocStore


class SlowRecordStore:
    """A docstore whose model record (none stored) takes a while to read, counting reads."""

    def __init__(self) -> None:
        self.reads = 0
        self._lock = threading.Lock()

    def get_tree(self, collection: str, key: str) -> Any:
        with self._lock:
            self.reads += 1
        time.sleep(0.02)  # long enough for every waiting question to arrive meanwhile
        return None


def test_questions_arriving_together_read_the_model_record_once_per_snapshot() -> None:
    store = SlowRecordStore()
    check = ModelCheck(cast(DocStore, store), cast(Embedder, object()))
    snapshot = cast(CollectionState, object())
    start = threading.Barrier(8)

    def ask(_: int) -> None:
        start.wait()
        check.before_asking("demo", snapshot)

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(ask, range(8)))
    assert store.reads == 1
    check.before_asking("demo", cast(CollectionState, object()))  # the documents changed
    assert store.reads == 2


class CountingRepairer:
    def __init__(self, repairs: list[str]) -> None:
        self.repairs = repairs
        self.checked: list[str] = []

    def check(self, collection: str) -> list[str]:
        self.checked.append(collection)
        return self.repairs


def test_repair_runs_once_per_collection_and_drops_the_state_it_changed() -> None:
    repairer = CountingRepairer(["restored a.pdf"])
    forgotten: list[str] = []
    once = RepairOnce(cast(SplitBrainRepairer, repairer), on_repaired=forgotten.append)
    assert once.check("demo") == ["restored a.pdf"]
    assert once.check("demo") == []
    assert once.check("demo", force=True) == ["restored a.pdf"]
    assert repairer.checked == ["demo", "demo"] and forgotten == ["demo", "demo"]
    quiet = RepairOnce(cast(SplitBrainRepairer, CountingRepairer([])), forgotten.append)
    assert quiet.check("other") == [] and forgotten == ["demo", "demo"]
