"""What a Milvus deployment can do, read from the version it reports (not guessed from its URI).

Milvus Lite 3.x and Milvus servers from 2.5 have the BM25 `Function` (server-side full-text
search); 2.3 and 2.4 do not, so keyword search stays with bm25s there. Upsert, which makes
re-ingest idempotent, needs 2.3 or later. Lite's FLAT index measured faster than its HNSW at this
project's sizes; a server gets AUTOINDEX (HNSW), which it builds and scales itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from citerag.errors import BackendUnavailable
from citerag.types import camel_case_fields

MIN_SERVER = (2, 3)
BM25_SERVER = (2, 5)
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


@dataclass(frozen=True)
class MilvusCapabilities:
    kind: str  # "lite" or "server"
    version: str  # as reported, e.g. "v2.3.5-lite" (the PyPI build) or "milvus_lite-3.2.2"
    index_type: str
    bm25_function: bool

    def to_dict(self) -> dict[str, object]:
        return camel_case_fields(self)


def parse_version(text: str) -> tuple[int, int, int]:
    found = _VERSION.search(text)
    if not found:
        return (0, 0, 0)
    return (int(found.group(1)), int(found.group(2)), int(found.group(3) or 0))


def capabilities(version_text: str, server: bool, uri: str = "") -> MilvusCapabilities:
    """The capabilities of Milvus Lite (`server` False) or of a server reporting `version_text`."""
    if not server:
        return MilvusCapabilities("lite", version_text, "FLAT", True)
    version = parse_version(version_text)
    if version[:2] < MIN_SERVER:
        raise BackendUnavailable(
            f"Milvus at {uri} is version {version_text}; citerag needs Milvus 2.3 or newer "
            "(upsert), so upgrade the server or unset MILVUS_URI to use Milvus Lite."
        )
    return MilvusCapabilities("server", version_text, "AUTOINDEX", version[:2] >= BM25_SERVER)


# A server's HNSW search breadth (Milvus 2.3.5's AUTOINDEX searched little wider than the result
# count): at 100k chunks of the realistic scale library the labelled questions' hit@5 on the
# server fell to 0.466 where Lite's exact search gave 0.552 (benchmarks/results/scale.md).
HNSW_EF = 256
MAX_EF = 32768  # Milvus's ceiling on ef


def search_params(kind: str, top_k: int) -> dict[str, object]:
    """What a search asks of the index: on a server, HNSW's breadth `ef` (at least `top_k`);
    Lite's FLAT index is exact and takes none."""
    if kind == "lite":
        return {"metric_type": "COSINE"}
    return {"metric_type": "COSINE", "params": {"ef": min(max(HNSW_EF, top_k), MAX_EF)}}
