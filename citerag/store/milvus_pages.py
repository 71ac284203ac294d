"""The page head vectors in Milvus: one page collection beside each chunk collection.

A row per page (its id, document, number and normalized head vector), written at ingest with
the chunk rows and deleted with them, so a serving process asks for the nearest pages instead
of holding every page's vector. The vector index is the chunk collection's: FLAT (exact) on
Milvus Lite, AUTOINDEX on a server (`milvus_caps`).

A search among many pages (a filter's pages, or a snapshot's when the collection holds a
document the snapshot does not show yet) does not send them all as an id list, whose cost
grows with its length: it fetches the best FETCH_FACTOR x top_k (at least FETCH_MIN) pages
unrestricted and keeps the allowed ones, and only when too few of those are allowed sends the
ids after all, in slices of FILTER_SLICE.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np
from pymilvus import CollectionSchema, DataType, MilvusClient, MilvusException

from citerag.store.base import PageRow
from citerag.store.milvus_caps import MilvusCapabilities, vector_index_params
from citerag.store.milvus_filters import id_filters, milvus_literal
from citerag.store.milvus_rows import all_rows
from citerag.store.milvus_schema import ID_BYTES, SCALAR_FIELDS, milvus_collection_name

SUFFIX = "_pg"
# Milvus Lite's FLAT search of 10,000 pages cost the same for a limit of 35, 100 or 350 and
# twice that for 1,000 (benchmarks/results/page_vectors.md): the fetch window stays under that.
MAX_FILTER_IDS = 200
FETCH_FACTOR = 10
FETCH_MIN = 200
FILTER_SLICE = 2000
MAX_TOP_K = 16384  # Milvus's ceiling on a search's limit
INSERT_BATCH = 2000  # rows per upsert: a bounded message however large the document


def page_collection_name(chunk_collection_name: str) -> str:
    return chunk_collection_name + SUFFIX


def page_schema(dim: int) -> CollectionSchema:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_BYTES)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=SCALAR_FIELDS["doc_id"])
    schema.add_field("page", DataType.INT64)
    return schema


class _Host(Protocol):
    """What the page collection uses of the `MilvusIndex` it sits beside."""

    capabilities: MilvusCapabilities

    @property
    def client(self) -> MilvusClient: ...
    @property
    def lock(self) -> threading.RLock: ...
    @property
    def read_lock(self) -> AbstractContextManager[object]: ...
    def flush(self, name: str) -> None: ...
    def consistency(self, name: str) -> dict[str, str]: ...
    def search_params(self, name: str, top_k: int, filtered: bool) -> dict[str, object]: ...
    def remove_rows(self, name: str, doc_id: str) -> None: ...


class MilvusPages:
    """`PageIndex` on the client and locks of a `MilvusIndex` (which owns and closes them)."""

    def __init__(self, index: _Host) -> None:
        self._index = index
        self._loaded: set[str] = set()

    def name(self, collection: str) -> str:
        return page_collection_name(milvus_collection_name(collection))

    def insert(self, collection: str, rows: Sequence[PageRow]) -> None:
        if not rows:
            return
        name, client = self.name(collection), self._index.client
        vectors = np.stack([np.asarray(row.vector, np.float32).reshape(-1) for row in rows])
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
        data = [
            {"id": row.page_id, "vector": vector.tolist(), "doc_id": row.doc_id, "page": row.page}
            for row, vector in zip(rows, vectors, strict=True)
        ]
        with self._index.lock:
            self._ensure(name, int(vectors.shape[1]))
            for start in range(0, len(data), INSERT_BATCH):
                client.upsert(name, data[start : start + INSERT_BATCH])
            self._index.flush(name)

    def search(
        self, collection: str, vector: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        if top_k < 1 or (among is not None and not among):
            return []
        name = self.name(collection)
        query = np.asarray(vector, dtype=np.float32).reshape(-1)
        with self._index.read_lock:
            if name not in self._loaded:
                if not self._index.client.has_collection(name):
                    return []
                self._load(name)
            try:
                return self._among(name, query, top_k, among)
            except MilvusException:
                if self._index.client.has_collection(name):
                    raise
                self._loaded.discard(name)  # dropped by another process meanwhile
                return []

    def _among(
        self, name: str, query: np.ndarray, top_k: int, among: Collection[str] | None
    ) -> list[tuple[str, float]]:
        if among is None:
            return self._search(name, query, top_k, "")
        if len(among) <= MAX_FILTER_IDS:
            return self._search(name, query, top_k, id_filters(among, FILTER_SLICE)[0])
        limit = min(MAX_TOP_K, max(top_k * FETCH_FACTOR, FETCH_MIN))
        hits = self._search(name, query, limit, "")
        found = [hit for hit in hits if hit[0] in among][:top_k]
        # Exact when top_k allowed pages were among them or every page was fetched.
        if len(found) == top_k or len(hits) < limit:
            return found
        sliced = [self._search(name, query, top_k, f) for f in id_filters(among, FILTER_SLICE)]
        return sorted((hit for hits in sliced for hit in hits), key=_rank)[:top_k]

    def _search(
        self, name: str, query: np.ndarray, top_k: int, expression: str
    ) -> list[tuple[str, float]]:
        hits = self._index.client.search(
            name,
            data=[query.tolist()],
            limit=min(top_k, MAX_TOP_K),
            filter=expression,
            output_fields=["id"],
            search_params=self._index.search_params(name, top_k, bool(expression)),
            **self._index.consistency(name),
        )[0]
        return sorted(((str(h["id"]), float(h["distance"])) for h in hits), key=_rank)

    def stored_rows(self, collection: str) -> tuple[list[str], list[str], list[np.ndarray]]:
        """Every page row of the collection: (page ids, document ids, vectors)."""
        name, client = self.name(collection), self._index.client
        ids: list[str] = []
        doc_ids: list[str] = []
        vectors: list[np.ndarray] = []
        with self._index.lock:
            if not client.has_collection(name):
                return ids, doc_ids, vectors
            self._load(name)
            for row in all_rows(client, name, 'id != ""', ["id", "doc_id", "vector"]):
                ids.append(str(row["id"]))
                doc_ids.append(str(row["doc_id"]))
                vectors.append(np.asarray(row["vector"], np.float32))
        return ids, doc_ids, vectors

    def doc_ids(self, collection: str) -> set[str]:
        name, client = self.name(collection), self._index.client
        with self._index.lock:
            if not client.has_collection(name):
                return set()
            self._load(name)
            return {str(row["doc_id"]) for row in all_rows(client, name, 'id != ""', ["doc_id"])}

    def count(self, collection: str, doc_id: str | None = None) -> int:
        name, client = self.name(collection), self._index.client
        expression = "" if doc_id is None else f"doc_id == {milvus_literal(doc_id)}"
        with self._index.lock:
            if not client.has_collection(name):
                return 0
            self._load(name)
            found: list[dict[str, Any]] = client.query(
                name, filter=expression, output_fields=["count(*)"]
            )
        return int(found[0]["count(*)"])

    def delete_document(self, collection: str, doc_id: str) -> None:
        self._index.remove_rows(self.name(collection), doc_id)

    def drop(self, collection: str) -> None:
        name = self.name(collection)
        with self._index.lock:
            self._index.client.drop_collection(name)
            self._loaded.discard(name)

    def _ensure(self, name: str, dim: int) -> None:
        client = self._index.client
        if client.has_collection(name):
            self._load(name)
            return
        index_params = vector_index_params(self._index.capabilities.index_type)
        client.create_collection(
            name, schema=page_schema(dim), index_params=index_params, consistency_level="Strong"
        )
        self._loaded.add(name)

    def _load(self, name: str) -> None:
        if name not in self._loaded:
            self._index.client.load_collection(name)
            self._loaded.add(name)


def _rank(hit: tuple[str, float]) -> tuple[float, str]:
    """Best first; equal scores by page id (document, then page number), whatever order the
    index found them in."""
    return (-hit[1], hit[0])
