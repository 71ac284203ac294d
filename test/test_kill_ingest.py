"""Crash safety: SIGKILL the ingest process at random moments in each phase (parse, embedding,
docstore write, Milvus insert, keyword index write); after each kill a plain re-run leaves Milvus
count == docstore count == expected, no orphan rows or chunks, and a keyword index of exactly the
chunks, with no other document folder visible in it.

The harness (kill_harness.py) forks the ingest children from one process per backend."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from helpers import DEMO_PDF, MILVUS_BACKENDS, PROJECT_DIR, milvus_uri_for

pytestmark = pytest.mark.slow
KILLS = 20  # 4 per phase; at least 14 must land inside a phase
HARNESS = Path(__file__).with_name("kill_harness.py")


def consistent(check: dict) -> bool:
    return (
        check["milvus"] == check["docstore"] == check["expected"] == check["sentence_vectors"]
        and check["orphan_rows"] == check["orphan_chunks"] == 0
        and check["keywords_match"]
        and not [name for name in check["keyword_leftovers"] if not name.startswith(".")]
        and check["records"] == [[True, "ready"]]
    )


@pytest.mark.parametrize("backend", MILVUS_BACKENDS)
def test_a_rerun_after_sigkill_at_random_moments_leaves_consistent_counts(
    request: pytest.FixtureRequest, backend: str, tmp_path: Path
) -> None:
    command = [
        sys.executable,
        str(HARNESS),
        "--storage",
        str(tmp_path / "storage"),
        "--milvus-uri",
        milvus_uri_for(request, backend),
        "--pdf",
        str(DEMO_PDF),
        "--kills",
        str(KILLS),
        "--seed",
        "10",
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=PROJECT_DIR)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    kills = summary["kills"]
    assert not [k for k in kills if "error" in k], [k["error"] for k in kills if "error" in k]
    inside = Counter(
        k["landed"].split(":")[1] for k in kills if k["killed"] and k["landed"].startswith("enter:")
    )
    assert sum(inside.values()) >= 14, inside
    assert set(inside) == {"parse", "embed", "docstore", "milvus", "keywords"}, inside
    checks = [k["check"] for k in kills[1:]] + [summary["final"]]  # kills[0] follows calibration
    broken = [c for c in checks if not consistent(c)]
    assert not broken, broken
    assert summary["final"]["expected"] > 0
    print(f"\n{backend}: {len(kills)} kills {dict(inside)} in {summary['seconds']} s")
