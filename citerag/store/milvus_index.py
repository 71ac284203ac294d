"""The vector index: Milvus Lite (a local .db folder) or a Milvus server, explicit schema."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import numpy as np
from pymilvus import MilvusClient, MilvusException

from citerag.errors import BackendUnavailable, ConfigError, InputError
from citerag.settings import MilvusScheme
from citerag.store.base import PageIndex, VectorQuery, VectorRow
from citerag.store.lite_page_files import PageFiles, pages_folder
from citerag.store.lite_pages import ExactPageCache
from citerag.store.milvus_caps import (
    capabilities,
    search_params,
    vector_index_params,
    vector_index_type,
)
from citerag.store.milvus_filters import milvus_literal, search_expression
from citerag.store.milvus_freshness import DEFAULT_WINDOW_S, Freshness
from citerag.store.milvus_lists import CUT, LIST_COLUMNS, list_keys
from citerag.store.milvus_lite import lite_users, locked_by_another_process
from citerag.store.milvus_pages import MilvusPages
from citerag.store.milvus_rows import all_rows
from citerag.store.milvus_schema import (
    ID_BYTES,
    SCALAR_FIELDS,
    chunk_schema,
    entity_of,
    milvus_collection_name,
    readable_field,
    row_of,
    truncate_utf8,
)

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
ROWS_PER_GET = 1000  # ids per `get` when reading rows back with their vectors

# Matching chunks up to which a list filter goes to the search as their ids
# (benchmarks/results/list_filters.md, 60k rows): Milvus Lite scans an array filter row by
# row in Python, 15-17x slower than an id list of 1,754 or 5,902 ids, so ids there; the 2.3.5
# server applies the array filter faster than an id list (6-19 ms vs 48-90 ms).
ID_LIST_LIMIT_LITE = 100_000
ID_LIST_LIMIT_SERVER = 0
__all__ = ["ID_BYTES", "SCALAR_FIELDS", "MilvusIndex", "milvus_collection_name", "truncate_utf8"]

# Index types come from `milvus_caps.capabilities`. Measured on Milvus Lite 3.2 (2 cores, 384
# dims, after flush): FLAT and AUTOINDEX both answer a top-10 query in ~20 ms at 5k rows, and at
# 20k FLAT was faster (77 ms vs 270 ms). FLAT is exact, so filters never cost recall.


class MilvusIndex:
    """`VectorIndex` over `pymilvus.MilvusClient`.

    Writes and schema changes hold `lock` (a check then a create, a delete then a flush, must
    not interleave). Searches hold `read_lock`: on a server that is no lock at all (the gRPC
    client serves calls from many threads, so questions answered on several threads search
    at once); Milvus Lite's single local process is driven as the one lock serialises it."""

    def __init__(
        self,
        uri: str,
        token: str = "",
        strong_window_s: float = DEFAULT_WINDOW_S,
        index_type: str = "auto",
    ) -> None:
        self.uri = uri
        self.is_server = MilvusScheme.of(uri).is_server
        self._freshness = Freshness(strong_window_s)
        self._lock = threading.RLock()
        self._read_lock: AbstractContextManager[object] = (
            nullcontext() if self.is_server else self._lock
        )
        self._loaded: set[str] = set()
        self._fields: dict[str, frozenset[str]] = {}  # Milvus name -> its schema's field names
        self._index_types: dict[str, str] = {}  # Milvus name -> the index its vectors have
        self.id_list_limit = ID_LIST_LIMIT_LITE if not self.is_server else ID_LIST_LIMIT_SERVER
        self._page_rows = MilvusPages(self)
        self.pages: PageIndex = self._page_rows
        if not self.is_server:
            Path(uri).expanduser().parent.mkdir(parents=True, exist_ok=True)
        try:
            self._client = MilvusClient(uri=uri, token=token, timeout=CONNECT_TIMEOUT_S)
        except MilvusException as error:
            raise self._unavailable(error) from None
        if not self.is_server:
            # Lite scans every row per search, and no other process writes its folder: its page
            # rows are searched in a copy held here and kept in its folder (`lite_pages`).
            files = PageFiles(pages_folder(uri), Path(uri).expanduser())
            rows = self._page_rows
            self.pages = ExactPageCache(rows, rows.stored_rows, files, rows.name)
        if not self.is_server:
            lite_users.acquire(uri)
        try:
            self.capabilities = capabilities(
                str(self._client.get_server_version()), self.is_server, uri, index_type
            )
        except BaseException:
            self.close()
            raise

    @property
    def client(self) -> MilvusClient:
        """The shared client; hold `lock` around every call on it."""
        return self._client

    @property
    def lock(self) -> threading.RLock:
        """Held around writes and schema changes on the shared client."""
        return self._lock

    @property
    def read_lock(self) -> AbstractContextManager[object]:
        """Held around searches: the write lock on Milvus Lite, nothing on a server."""
        return self._read_lock

    def _unavailable(self, error: Exception) -> BackendUnavailable:
        if not self.is_server and locked_by_another_process(Path(self.uri)):
            return BackendUnavailable(
                f"Milvus Lite at {self.uri} is open in another process; stop that process (one "
                "process at a time can use a Milvus Lite folder) or set MILVUS_URI to a server."
            )
        reason = getattr(error, "message", None) or type(error).__name__
        if self.is_server:
            return BackendUnavailable(
                f"Milvus at {self.uri} cannot be reached ({reason}); start it (`bash db.sh "
                "start_all`) or unset MILVUS_URI to use the local Milvus Lite file."
            )
        return BackendUnavailable(
            f"Milvus Lite at {self.uri} cannot be opened ({reason}); close other processes "
            "using it or point the storage folder elsewhere."
        )

    def ensure_collection(self, collection: str, dim: int) -> None:
        name = milvus_collection_name(collection)
        with self._lock:
            if self._client.has_collection(name):
                self._check_dim(collection, name, dim)
                self._load(name)
                return
            schema = chunk_schema(dim)
            index_params = vector_index_params(self.capabilities.index_type)
            self._client.create_collection(
                name, schema=schema, index_params=index_params, consistency_level="Strong"
            )
            self._loaded.add(name)
            self._fields[name] = frozenset(f.name for f in schema.fields)

    def _check_dim(self, collection: str, name: str, dim: int) -> None:
        fields = self._client.describe_collection(name)["fields"]
        self._note_fields(collection, name, fields)
        stored = next(int(f["params"]["dim"]) for f in fields if f["name"] == "vector")
        if stored != dim:
            raise ConfigError(
                f"Collection {collection!r} holds {stored}-dimensional vectors but the embedding "
                f"model gives {dim}; use a new collection or delete this one and ingest again."
            )

    def list_fields(self, collection: str) -> frozenset[str]:
        name = milvus_collection_name(collection)
        known = self._fields.get(name)
        if known is None:
            with self._lock:
                if not self._client.has_collection(name):
                    return frozenset(LIST_COLUMNS)  # the schema it will be made with
                fields = self._client.describe_collection(name)["fields"]
                known = self._note_fields(collection, name, fields)
        return known & frozenset(LIST_COLUMNS)

    def _note_fields(
        self, collection: str, name: str, fields: Sequence[dict[str, Any]]
    ) -> frozenset[str]:
        """Remembers the collection's field names; says once how to upgrade an old schema."""
        known = frozenset(str(f["name"]) for f in fields)
        if name not in self._fields and CUT not in known:
            log.warning(
                "Milvus collection %r was made before the list-field columns: filters on years, "
                "entities and topics go to the search as chunk-id lists (up to 5,000 chunks) "
                "and are otherwise applied after it, which loses hits; run `python main.py "
                "reindex %s` once to rebuild its rows from the docstore with those columns",
                collection,
                collection,
            )
        self._fields[name] = known
        return known

    def _load(self, name: str) -> None:
        # Loading twice from two searching threads is harmless: Milvus loads a collection once.
        if name not in self._loaded:
            self._client.load_collection(name)
            self._loaded.add(name)

    def insert(self, collection: str, rows: Sequence[VectorRow]) -> None:
        """Upsert `rows` (same id twice never duplicates) and make them searchable at once."""
        if not rows:
            return
        dim = int(np.asarray(rows[0].vector).shape[-1])
        name = milvus_collection_name(collection)
        for attempt in (1, 2):
            self.ensure_collection(collection, dim)
            with_lists = CUT in self._fields.get(name, frozenset())
            data = [entity_of(row, with_lists) for row in rows]
            with self._lock:
                try:
                    self._client.upsert(name, data)
                except MilvusException:
                    if attempt == 2:
                        raise
                    # Another process may have rebuilt it in the other schema (`reindex`).
                    self._fields.pop(name, None)
                    self._loaded.discard(name)
                    continue
                self.flush(name)
                return

    def note_change(self, collection: str) -> None:
        """The collection changed (here or through another process): searches on a server are
        Strong for a while (`milvus_freshness`), its page searches too."""
        self._freshness.changed(milvus_collection_name(collection))
        self._freshness.changed(self._page_rows.name(collection))

    def flush(self, name: str) -> None:
        """Flush the Milvus collection `name` on Milvus Lite (nothing on a server) after a
        write; a server's searches are Strong for a while after it."""
        self._freshness.changed(name)
        # Strong consistency already shows new rows to search. On Milvus Lite unflushed rows sit
        # in a growing segment that is scanned slowly (~200 ms vs ~20 ms at 5k rows; BM25
        # statistics are rebuilt on every search) and a flush costs ~40 ms per 250 rows; a server
        # indexes growing segments itself, keeps them in its write-ahead log, and a flush there
        # waits ~1-2 s for a segment to seal.
        if not self.is_server:
            self._client.flush(name)

    def search(self, collection: str, query: VectorQuery) -> list[list[tuple[str, float]]]:
        """Per query vector, (chunk id, cosine similarity) pairs, best first, among the rows
        `query.filters` match (translated to a Milvus expression); `query.node_ids` limits the
        search to those chunks (how filters on enrichment lists reach Milvus)."""
        queries = np.atleast_2d(np.asarray(query.vectors, dtype=np.float32))
        name = milvus_collection_name(collection)
        empty: list[list[tuple[str, float]]] = [[] for _ in range(len(queries))]
        missing = list_keys(query.filters) - self.list_fields(collection)
        if missing:
            raise InputError(
                f"Collection {collection!r} was indexed before filters on "
                f"{', '.join(sorted(missing))} could reach the search; run `python main.py "
                f"reindex {collection}` once."
            )
        expression = search_expression(query.filters, query.node_ids)
        if query.top_k < 1 or len(queries) == 0 or expression is None:
            return empty
        with self._read_lock:
            # A loaded collection is searched at once (a has_collection round trip per question
            # cost more than the search); one dropped meanwhile by another process fails the
            # search, and is then found missing.
            if name not in self._loaded:
                if not self._client.has_collection(name):
                    return empty
                self._load(name)
            try:
                hits = self._client.search(
                    name,
                    data=list(queries),
                    limit=query.top_k,
                    filter=expression,
                    output_fields=["id"],
                    search_params=self.search_params(name, query.top_k, bool(expression)),
                    **self.consistency(name),
                )
            except MilvusException:
                if self._client.has_collection(name):
                    raise
                self._loaded.discard(name)
                return empty
        return [[(str(h["id"]), float(h["distance"])) for h in per_query] for per_query in hits]

    def search_params(self, name: str, top_k: int, filtered: bool = False) -> dict[str, object]:
        """What a search of the Milvus collection `name` asks of the index it was built with
        (a collection made under another setting keeps its own)."""
        index_type = self._index_types.get(name)
        if index_type is None and self.is_server:
            index_type = vector_index_type(self._client, name)
            if index_type is not None:  # not kept unread: the next search asks again
                self._index_types[name] = index_type
        return search_params(index_type or self.capabilities.index_type, top_k, filtered)

    def consistency(self, name: str) -> dict[str, str]:
        """The consistency level a search of the Milvus collection `name` asks for."""
        # Milvus Lite applies every write before the next call: it takes no level.
        return {"consistency_level": self._freshness.level(name)} if self.is_server else {}

    def count(self, collection: str, doc_id: str | None = None) -> int:
        name = milvus_collection_name(collection)
        expression = "" if doc_id is None else f"doc_id == {milvus_literal(doc_id)}"
        with self._lock:
            if not self._client.has_collection(name):
                return 0
            self._load(name)
            result = self._client.query(name, filter=expression, output_fields=["count(*)"])
        return int(result[0]["count(*)"])

    def ids_of(self, collection: str, doc_id: str) -> list[str]:
        return self._field_values(collection, f"doc_id == {milvus_literal(doc_id)}", "id")

    def rows_of(self, collection: str, doc_id: str) -> list[VectorRow]:
        """The document's rows with their vectors, as stored (what a rename writes back under
        the new name without embedding anything again)."""
        name = milvus_collection_name(collection)
        ids = self.ids_of(collection, doc_id)
        fields = ["id", "vector", *SCALAR_FIELDS, "page"]
        if self.list_fields(collection):
            fields += [*LIST_COLUMNS, CUT]
        rows: list[dict[str, Any]] = []
        with self._lock:
            for start in range(0, len(ids), ROWS_PER_GET):
                rows += self._client.get(
                    name, ids=ids[start : start + ROWS_PER_GET], output_fields=fields
                )
        return [row_of(row) for row in rows]

    def delete_document(self, collection: str, doc_id: str) -> None:
        """The document's chunk rows and page rows."""
        self.remove_rows(milvus_collection_name(collection), doc_id)
        self.pages.delete_document(collection, doc_id)

    def remove_rows(self, name: str, doc_id: str) -> None:
        """Delete `doc_id`'s rows from the Milvus collection `name`, when it exists."""
        with self._lock:
            if self._client.has_collection(name):
                self._client.delete(name, filter=f"doc_id == {milvus_literal(doc_id)}")
                self.flush(name)

    def delete_ids(self, collection: str, chunk_ids: Sequence[str]) -> None:
        name = milvus_collection_name(collection)
        with self._lock:
            if not chunk_ids or not self._client.has_collection(name):
                return
            self._client.delete(name, ids=list(chunk_ids))
            self.flush(name)

    def doc_ids_except(self, collection: str, known: Sequence[str]) -> list[str]:
        """Document ids that rows carry but `known` does not list (rows of unknown documents)."""
        expression = (
            f"doc_id not in [{', '.join(milvus_literal(d) for d in known)}]" if known else ""
        )
        return sorted(set(self._field_values(collection, expression or 'id != ""', "doc_id")))

    def _field_values(self, collection: str, expression: str, field: str) -> list[str]:
        """`field` of every row `expression` matches, however many, sorted."""
        name = milvus_collection_name(collection)
        with self._lock:
            if not self._client.has_collection(name):
                return []
            self._load(name)
            values = [str(row[field]) for row in all_rows(self._client, name, expression, [field])]
        return sorted(values)

    def has_collection(self, collection: str) -> bool:
        with self._lock:
            return bool(self._client.has_collection(milvus_collection_name(collection)))

    def describe(self, collection: str) -> dict[str, Any]:
        """Fields with readable types, the vector index, and the collection's row count."""
        name = milvus_collection_name(collection)
        with self._lock:
            if not self._client.has_collection(name):
                return {}
            described = self._client.describe_collection(name)
            indexes = [
                self._client.describe_index(name, index_name)
                for index_name in self._client.list_indexes(name)
            ]
        fields = [readable_field(f) for f in described["fields"]]
        return {"name": name, "fields": fields, "indexes": indexes, "rows": self.count(collection)}

    def sample(self, collection: str, limit: int = 5) -> list[dict[str, Any]]:
        """The first `limit` rows without their vectors."""
        name = milvus_collection_name(collection)
        with self._lock:
            if not self._client.has_collection(name):
                return []
            self._load(name)
            fields = ["id", "doc_name", "page", "node_type", "section", "label", "preview"]
            rows = self._client.query(name, filter='id != ""', output_fields=fields, limit=limit)
        return [dict(row) for row in rows]

    def drop_collection(self, collection: str) -> None:
        """The chunk collection and its page collection."""
        self.pages.drop(collection)
        with self._lock:
            self._client.drop_collection(milvus_collection_name(collection))
            self._freshness.changed(milvus_collection_name(collection))
            self._loaded.discard(milvus_collection_name(collection))
            self._fields.pop(milvus_collection_name(collection), None)
            for name in (milvus_collection_name(collection), self._page_rows.name(collection)):
                self._index_types.pop(name, None)  # a collection made again gets today's index

    def close(self) -> None:
        try:
            if isinstance(self.pages, ExactPageCache):
                self.pages.save()
        finally:
            with self._lock:
                self._client.close()
                if not self.is_server:
                    lite_users.release(self.uri)
