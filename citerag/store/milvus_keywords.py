"""Keyword search inside Milvus: its BM25 `Function` turns an analyzed VARCHAR into a sparse
vector, and full-text search ranks it (Milvus Lite 3.x, servers from 2.5).

One keyword collection per user collection, one partition per kind: BM25 statistics (document
count, average length, document frequencies) are kept per segment and a segment belongs to one
partition, so long pages never skew the statistics of short chunks.

Milvus's `standard` analyzer splits on word characters and lower-cases, nothing more: no stop
words, no stemming, and "3.5" becomes two tokens. By default the stored and queried text is the
project's own tokens (`text.tokens.tokenize`) joined by spaces, with a number's "." turned into
"_" (a word character) so that it stays one token; Milvus then ranks the same terms as bm25s.

Milvus Lite computes IDF and average length per segment, not per collection: each flushed
document starts as its own segment and small segments are merged four at a time, so until they
are, a document's chunks are scored against that document's statistics. A term frequent in one
document but rare in the library then weighs less than it would globally (measured in
benchmarks/results/keywords.md).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import NamedTuple

from pymilvus import CollectionSchema, DataType, Function, FunctionType, MilvusClient

from citerag.errors import BackendUnavailable
from citerag.store.keywords import KINDS, KeywordEntry, KeywordKind, KeywordQuery
from citerag.store.milvus_filters import id_filters, milvus_literal
from citerag.store.milvus_index import (
    ID_BYTES,
    MilvusIndex,
    milvus_collection_name,
    truncate_utf8,
)
from citerag.store.milvus_rows import all_rows
from citerag.text.tokens import tokenize
from citerag.types import JSONObject, JSONValue, json_int

SUFFIX = "_kw"
DOC_ID_BYTES = 128
KIND_BYTES = 8
# VARCHAR's ceiling; a page's token text is far shorter, so truncation only guards odd pages.
TEXT_BYTES = 65535
# The project's bm25s ranks with Lucene's IDF and k1 1.5, b 0.75; Milvus Lite's BM25 uses the
# same IDF, and setting k1 and b here makes servers (default k1 1.2) rank the same way.
BM25_PARAMS = {"bm25_k1": 1.5, "bm25_b": 0.75}
# An `id in [...]` filter costs in proportion to its length (Milvus Lite, 666 chunks: 20 ms
# without, 41 ms with 100 ids, 226 ms with 2000), while fetching the best 1000 matches without
# a filter costs ~40 ms. Up to MAX_FILTER_IDS ids go into the filter; more are checked here on
# the best FETCH_FACTOR x top_k (at least FETCH_MIN) unrestricted matches, and only when too few
# of those are allowed is the filter used after all, in slices of FILTER_SLICE ids.
MAX_FILTER_IDS = 200
FETCH_FACTOR = 10
FETCH_MIN = 1000
FILTER_SLICE = 2000
MAX_TOP_K = 16384  # Milvus's ceiling on a search's limit
INSERT_BATCH = 1000


def keyword_collection_name(collection: str) -> str:
    return milvus_collection_name(collection) + SUFFIX


def analyzer_text(text: str) -> str:
    """The project's tokens in a form the standard analyzer splits back into the same tokens."""
    return " ".join(token.replace(".", "_") for token in tokenize(text))


class MilvusKeywordIndex:
    """`KeywordIndex` on the client and locks of a `MilvusIndex` (which owns and closes them).

    `pretokenize` False stores and queries the raw text (Milvus's analyzer alone), kept for the
    comparison in benchmarks/bench_keywords.py.
    """

    def __init__(self, index: MilvusIndex, pretokenize: bool = True) -> None:
        if not index.capabilities.bm25_function:
            raise BackendUnavailable(
                f"Milvus at {index.uri} is version {index.capabilities.version}, which has no "
                "BM25 function (servers from 2.5 and Milvus Lite 3.x do); set keyword_backend to "
                "'bm25-files' with it or upgrade the server."
            )
        self._index = index
        self._client: MilvusClient = index.client
        self._lock = index.lock
        self._read_lock = index.read_lock
        self._pretokenize = pretokenize
        self._loaded: set[str] = set()

    def add_document(self, collection: str, doc_id: str, entries: Sequence[KeywordEntry]) -> None:
        """Replace the document's rows by `entries` (adding the same document twice is safe)."""
        name = keyword_collection_name(collection)
        rows: dict[str, list[JSONObject]] = {kind: [] for kind in KINDS}
        for place, entry in enumerate(entries):
            rows[entry.kind].append(self._row(doc_id, place, entry))
        with self._lock:
            self._ensure(name)
            self._client.delete(name, filter=f"doc_id == {milvus_literal(doc_id)}")
            for kind, kind_rows in rows.items():
                for start in range(0, len(kind_rows), INSERT_BATCH):
                    batch = kind_rows[start : start + INSERT_BATCH]
                    self._client.insert(name, batch, partition_name=kind)
            self._index.flush(name)

    def remove_document(self, collection: str, doc_id: str) -> None:
        self._index.remove_rows(keyword_collection_name(collection), doc_id)

    def search(self, collection: str, query: KeywordQuery) -> list[tuple[str, float]]:
        kind, top_k, allowed_ids = query.kind, query.top_k, query.allowed_ids
        text = self._text(query.text)
        if top_k < 1 or not text.strip() or (allowed_ids is not None and not allowed_ids):
            return []
        name = keyword_collection_name(collection)
        with self._read_lock:
            if not self._client.has_collection(name):
                return []
            self._load(name)
            if allowed_ids is None:
                hits = self._search(name, kind, text, top_k, "")
            elif len(allowed_ids) <= MAX_FILTER_IDS:
                hits = self._search(name, kind, text, top_k, _id_filters(allowed_ids)[0])
            else:
                hits = self._search_among(name, kind, text, top_k, set(allowed_ids))
        return [(hit.id, hit.score) for hit in hits]

    def _search_among(
        self, name: str, kind: KeywordKind, text: str, top_k: int, allowed: set[str]
    ) -> list[_Hit]:
        limit = min(MAX_TOP_K, max(top_k * FETCH_FACTOR, FETCH_MIN))
        hits = self._search(name, kind, text, limit, "")
        found = [hit for hit in hits if hit.id in allowed][:top_k]
        # Exact when top_k allowed ids were among them or every match was fetched.
        if len(found) == top_k or len(hits) < limit:
            return found
        sliced = [self._search(name, kind, text, top_k, f) for f in _id_filters(allowed)]
        return sorted((hit for hits in sliced for hit in hits), key=_rank)[:top_k]

    def _search(
        self, name: str, kind: KeywordKind, text: str, top_k: int, expression: str
    ) -> list[_Hit]:
        hits = self._client.search(
            name,
            data=[text],
            anns_field="sparse",
            limit=min(top_k, MAX_TOP_K),
            filter=expression,
            partition_names=[kind],
            output_fields=["id", "doc_id", "place"],
            search_params={"metric_type": "BM25"},
        )[0]
        # Milvus Lite reports the BM25 score negated as a distance, servers report it as is.
        scored = (_hit(hit["entity"], abs(float(hit["distance"]))) for hit in hits)
        return sorted((hit for hit in scored if hit.score > 0), key=_rank)

    def doc_ids(self, collection: str) -> set[str]:
        name = keyword_collection_name(collection)
        with self._lock:
            if not self._client.has_collection(name):
                return set()
            self._load(name)
            return {
                str(row["doc_id"]) for row in all_rows(self._client, name, 'id != ""', ["doc_id"])
            }

    def doc_ids_among(self, collection: str, doc_ids: Iterable[str]) -> set[str]:
        """One row asked per document (`doc_ids` reads every row of the collection)."""
        name = keyword_collection_name(collection)
        wanted = {truncate_utf8(d, DOC_ID_BYTES): d for d in doc_ids}
        with self._lock:
            if not wanted or not self._client.has_collection(name):
                return set()
            self._load(name)
            return {
                doc_id
                for stored, doc_id in wanted.items()
                if self._client.query(
                    name,
                    filter=f"doc_id == {milvus_literal(stored)}",
                    output_fields=["id"],
                    limit=1,
                )
            }

    def drop_collection(self, collection: str) -> None:
        name = keyword_collection_name(collection)
        with self._lock:
            self._client.drop_collection(name)
            self._loaded.discard(name)

    def close(self) -> None:
        """Nothing to release: the `MilvusIndex` closes the shared client."""

    def _text(self, text: str) -> str:
        return analyzer_text(text) if self._pretokenize else text

    def _row(self, doc_id: str, place: int, entry: KeywordEntry) -> JSONObject:
        if len(entry.id.encode("utf-8")) > ID_BYTES:
            raise ValueError(f"keyword entry id {entry.id!r} is longer than {ID_BYTES} bytes")
        return {
            "id": entry.id,
            "doc_id": truncate_utf8(doc_id, DOC_ID_BYTES),
            "kind": entry.kind,
            "place": place,
            "text": truncate_utf8(self._text(entry.text), TEXT_BYTES),
        }

    def _ensure(self, name: str) -> None:
        if self._client.has_collection(name):
            self._load(name)
            return
        index_params = self._client.prepare_index_params()
        index_params.add_index(
            field_name="sparse",
            index_type="SPARSE_INVERTED_INDEX",
            metric_type="BM25",
            params=dict(BM25_PARAMS),
        )
        self._client.create_collection(
            name, schema=_schema(), index_params=index_params, consistency_level="Strong"
        )
        for kind in KINDS:
            self._client.create_partition(name, kind)
        self._loaded.add(name)

    def _load(self, name: str) -> None:
        if name not in self._loaded:
            self._client.load_collection(name)
            self._loaded.add(name)


def _schema() -> CollectionSchema:
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_BYTES)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=DOC_ID_BYTES)
    schema.add_field("kind", DataType.VARCHAR, max_length=KIND_BYTES)
    schema.add_field("place", DataType.INT64)  # the entry's place in its document (ties)
    schema.add_field("text", DataType.VARCHAR, max_length=TEXT_BYTES, enable_analyzer=True)
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(
            name="bm25",
            function_type=FunctionType.BM25,
            input_field_names=["text"],
            output_field_names=["sparse"],
        )
    )
    return schema


def _id_filters(allowed_ids: Collection[str]) -> list[str]:
    return id_filters(allowed_ids, FILTER_SLICE)


class _Hit(NamedTuple):
    id: str
    score: float
    doc_id: str
    place: int


def _hit(entity: Mapping[str, JSONValue], score: float) -> _Hit:
    return _Hit(str(entity["id"]), score, str(entity["doc_id"]), json_int(entity["place"]))


def _rank(hit: _Hit) -> tuple[float, str, int]:
    """Best score first; ties by document id, then the entry's place in its document."""
    return (-hit.score, hit.doc_id, hit.place)
