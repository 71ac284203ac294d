"""`pytest -m "not slow"` stays fast: tests that take seconds (Milvus Lite, models) are slow."""

from __future__ import annotations

import pytest
import test_milvus_index

# Measured with `pytest --durations=0 -m "not slow"` on 2 cores: each takes over a second
# (a second Python process opening Milvus Lite, or three collections created in one test).
SLOW_MILVUS_TESTS = [
    "test_another_process_reads_the_data_once_the_index_is_closed",
    "test_a_folder_held_by_another_process_raises_backend_unavailable",
    "test_collections_with_awkward_names_are_kept_apart",
]


@pytest.mark.parametrize("name", SLOW_MILVUS_TESTS)
def test_seconds_long_milvus_lite_tests_are_marked_slow(name: str) -> None:
    # A contract test is found on the Lite subclass (the mixin defines it).
    test = getattr(test_milvus_index, name, None) or getattr(test_milvus_index.TestMilvusLite, name)
    marks = getattr(test, "pytestmark", [])
    assert "slow" in {mark.name for mark in marks}, f"{name} takes seconds: mark it slow"
