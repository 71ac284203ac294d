"""Helpers importable by every test module (`from helpers import ...`)."""

from __future__ import annotations

from pathlib import Path

import pytest

PROJECT_DIR = Path(__file__).resolve().parents[1]
SHARED_EVAL = PROJECT_DIR.parent / "shared" / "eval"
DEMO_PDF = PROJECT_DIR / "demo" / "citerag_demo.pdf"


def shared_eval_file(*parts: str) -> Path:
    """A file under ../shared/eval, or a skip that says it is missing."""
    path = SHARED_EVAL.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: put the shared evaluation data beside the project")
    return path

MILVUS_BACKENDS = [
    pytest.param("lite", id="lite"),
    # integration: a MILVUS_TEST_URI naming another machine must get past the loopback guard
    pytest.param(
        "server",
        id="server",
        marks=[pytest.mark.server, pytest.mark.slow, pytest.mark.integration],
    ),
]


def milvus_uri_for(request: pytest.FixtureRequest, backend: str) -> str:
    """"" for Milvus Lite (the storage folder's file), else the session's Milvus server."""
    return "" if backend == "lite" else str(request.getfixturevalue("milvus_server_uri"))
