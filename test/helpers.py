"""Helpers importable by every test module (`from helpers import ...`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pymupdf
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
    """ "" for Milvus Lite (the storage folder's file), else the session's Milvus server."""
    return "" if backend == "lite" else str(request.getfixturevalue("milvus_server_uri"))


def text_pdf(path: Path, pages: int = 2, subject: str = "") -> Path:
    """A PDF with a text layer: one line per page (`subject` makes its bytes differ)."""
    with pymupdf.open() as doc:
        for number in range(pages):
            line = f"{subject} Page {number + 1} has some text.".strip()
            doc.new_page().insert_text((72, 72), line)
        doc.save(path)
    return path


def corrupt_pdf(path: Path) -> Path:
    """A PDF header followed by garbage."""
    path.write_bytes(b"%PDF-1.7\n" + b"\x00garbage" * 200)
    return path


def encrypted_pdf(path: Path) -> Path:
    """A PDF that needs a password to open."""
    with pymupdf.open() as document:
        document.new_page().insert_text((72, 72), "secret text")
        aes_256 = pymupdf.PDF_ENCRYPT_AES_256  # type: ignore[attr-defined]
        document.save(path, encryption=aes_256, user_pw="u", owner_pw="o")
    return path


def scanned_pdf(path: Path) -> Path:
    """A page that is only an image: no text layer."""
    with pymupdf.open() as document:
        page = document.new_page()
        pixmap = pymupdf.Pixmap(pymupdf.csRGB, pymupdf.IRect(0, 0, 64, 64), False)
        pixmap.clear_with(200)
        page.insert_image(page.rect, pixmap=pixmap)
        document.save(path)
    return path


def long_pdf(path: Path, pages: int = 40, lines_per_page: int = 30) -> Path:
    """Pages of distinct sentences: enough text that ingesting it takes seconds, not a blink."""
    words = ("revenue", "margin", "segment", "growth", "costs", "pipeline", "filing", "quarter")
    with pymupdf.open() as doc:
        for number in range(pages):
            page = doc.new_page()
            for line in range(lines_per_page):
                a, b = words[(number + line) % 8], words[(number * 3 + line) % 8]
                sentence = f"Item {number}.{line}: the {a} of unit {line * 7 + number} met {b}."
                page.insert_text((48, 40 + line * 24), sentence, fontsize=9)
        doc.save(path)
    return path


def huge_page_pdf(path: Path, side: float = 14_400) -> Path:
    """One square page `side` points wide (14,400 pt: the largest a PDF allows)."""
    with pymupdf.open() as doc:
        doc.new_page(width=side, height=side).insert_text((72, 72), "One enormous page.")
        doc.save(path)
    return path


def blank_pdf(path: Path) -> Path:
    """A page with nothing on it."""
    with pymupdf.open() as doc:
        doc.new_page()
        doc.save(path)
    return path


def long_sentence_pdf(path: Path, chars: int = 1_000_000) -> Path:
    """One letter page holding a `chars`-long 'sentence': words in tiny type, no full stop."""
    text = " ".join(f"word{i}" for i in range(chars // 5))[:chars]
    lines, line, width = [], [], 0
    for word in text.split(" "):
        line.append(word)
        width += len(word) + 1
        if width > 1150:
            lines.append(" ".join(line))
            line, width = [], 0
    lines.append(" ".join(line))
    with pymupdf.open() as doc:
        doc.new_page().insert_text((2, 2), "\n".join(lines), fontsize=0.8, lineheight=1.0)
        doc.save(path)
    return path


def make_old_schema_collection(client: object, collection: str, dim: int) -> None:
    """The Milvus chunk collection as citerag made it before the list-field columns (id,
    vector and the scalar fields only), so tests can check such stores keep answering."""
    from pymilvus import MilvusClient

    from citerag.store.milvus_index import milvus_collection_name
    from citerag.store.milvus_schema import chunk_schema

    assert isinstance(client, MilvusClient)
    schema = chunk_schema(dim, with_lists=False)
    params = client.prepare_index_params()
    params.add_index(field_name="vector", index_type="FLAT", metric_type="COSINE")
    client.create_collection(
        milvus_collection_name(collection),
        schema=schema,
        index_params=params,
        consistency_level="Strong",
    )


def python_child(code: str, *args: str) -> subprocess.Popen[str]:
    """`python -c code args` with this checkout importable, talking over pipes (a second
    process on the same stores)."""
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen(
        [sys.executable, "-c", code, *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=environment,
    )
