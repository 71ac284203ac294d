"""What a Milvus deployment can do, read from the version it reports (not guessed from its URI).

Milvus Lite 3.x and Milvus servers from 2.5 have the BM25 `Function` (server-side full-text
search); 2.3 and 2.4 do not, so keyword search stays with bm25s there. Upsert, which makes
re-ingest idempotent, needs 2.3 or later. Lite's FLAT index measured faster than its HNSW at this
project's sizes; a server gets the index `default_server_index` names (or the setting's), built
per sealed segment by the server itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pymilvus import MilvusClient, MilvusException
from pymilvus.milvus_client import IndexParams

from citerag.errors import BackendUnavailable
from citerag.types import camel_case_fields

MIN_SERVER = (2, 3)
BM25_SERVER = (2, 5)
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
# IVF_FLAT: lists per sealed segment (a segment holds up to ~300k chunk rows of 384 dimensions)
# and the lists a search reads, about 6% of each segment.
IVF_NLIST = 1024
IVF_NPROBE = 64


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


def capabilities(
    version_text: str, server: bool, uri: str = "", index_type: str = "auto"
) -> MilvusCapabilities:
    """The capabilities of Milvus Lite (`server` False) or of a server reporting `version_text`;
    `index_type` is the setting (`milvus_index_type`) for the index new server collections get."""
    if not server:
        return MilvusCapabilities("lite", version_text, "FLAT", True)
    version = parse_version(version_text)
    if version[:2] < MIN_SERVER:
        raise BackendUnavailable(
            f"Milvus at {uri} is version {version_text}; citerag needs Milvus 2.3 or newer "
            "(upsert), so upgrade the server or unset MILVUS_URI to use Milvus Lite."
        )
    chosen = index_type.upper() if index_type != "auto" else default_server_index(version)
    return MilvusCapabilities("server", version_text, chosen, version[:2] >= BM25_SERVER)


def default_server_index(version: tuple[int, int, int]) -> str:
    """IVF_FLAT on Milvus 2.3, whose HNSW returned 0.36-0.70 of the exact top 35 at 100k
    realistic chunks, and fewer hits than asked under a filter passing more than the ~7% of
    rows it compares exactly (0.07 for a year on 7.6% of them), where IVF_FLAT returned all
    (benchmarks/results/dense_scale_100000.md); the server's own AUTOINDEX from 2.4, which this
    project could not measure here."""
    return "IVF_FLAT" if version[:2] < (2, 4) else "AUTOINDEX"


def vector_index_type(client: MilvusClient, name: str) -> str | None:
    """The type of the index the Milvus collection `name` has on its vectors (None when it
    cannot be read: the caller assumes this deployment's own), whatever the index is called."""
    try:
        for index_name in client.list_indexes(name):
            described = client.describe_index(name, index_name)
            if described.get("field_name") == "vector" and described.get("index_type"):
                return str(described["index_type"])
    except MilvusException:
        return None
    return None


def vector_index_params(index_type: str) -> IndexParams:
    """The index a new collection's vectors get, built by the server per sealed segment."""
    params = IndexParams()
    params.add_index(
        field_name="vector",
        index_type=index_type,
        metric_type="COSINE",
        params={"nlist": IVF_NLIST} if index_type.startswith("IVF") else {},
    )
    return params


# A server's HNSW search breadth (Milvus 2.3.5's AUTOINDEX searched little wider than the result
# count): at 100k chunks of the realistic scale library the labelled questions' hit@5 on the
# server fell to 0.466 where Lite's exact search gave 0.552 (benchmarks/results/scale.md).
HNSW_EF = 256
MAX_EF = 32768  # Milvus's ceiling on ef


def search_params(index_type: str, top_k: int, filtered: bool = False) -> dict[str, object]:
    """What a search asks of a collection's index: HNSW's breadth `ef` (at least `top_k`) for
    the server's AUTOINDEX or HNSW, the lists read for IVF; FLAT is exact and takes none.
    A filtered IVF search reads every list (only the rows the filter passes are compared):
    reading 64 missed 40% of the top hits of a search held to ten documents at 100k chunks."""
    if index_type == "FLAT":
        return {"metric_type": "COSINE"}
    if index_type.startswith("IVF"):
        return {
            "metric_type": "COSINE",
            "params": {"nprobe": IVF_NLIST if filtered else IVF_NPROBE},
        }
    return {"metric_type": "COSINE", "params": {"ef": min(max(HNSW_EF, top_k), MAX_EF)}}
