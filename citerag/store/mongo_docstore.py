"""The server docstore: MongoDB collections with compound indexes and bulk writes."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import numpy as np
from bson.binary import Binary
from llama_index.core.schema import TextNode
from pymongo import ASCENDING, DESCENDING, MongoClient, ReplaceOne
from pymongo.errors import ConfigurationError, DuplicateKeyError, PyMongoError

from citerag.errors import BackendUnavailable, ConfigError
from citerag.nodes import doc_id_of, from_record, page_vector_prefix, to_record
from citerag.settings import shown_uri
from citerag.settings.choices import SentenceVectorEncoding
from citerag.store.base import ChunkMetadata
from citerag.store.journal import JOURNAL_KEEP, ChangeKind, ChangeSet, change_set, reaches
from citerag.store.mongo_values import (
    VALUES,
    index_and_backfill,
    projected,
    read_carried,
    read_carriers,
    values_field,
)
from citerag.store.vector_codec import (
    DEFAULT_ENCODING,
    checked_encoding,
    decode_vectors,
    encode_vectors,
)
from citerag.types import DocumentRecord, JSONObject, json_int

SERVER_SELECTION_TIMEOUT_MS = 3000
# Writers racing for the same generation: each lost race means another writer's entry landed.
CLAIM_TRIES = 1000
DOCUMENT_FIELDS = (
    "doc_id",
    "name",
    "collection",
    "pages",
    "parser",
    "status",
    "created_at",
    "source",
)


class MongoDocStore:
    """`DocStore` over pymongo: collections `documents`, `chunks` and `sentence_vectors`, and
    the change journal `changes` (`citerag.store.journal`).

    A journal entry takes its generation by inserting it under a unique (collection,
    generation) index, after the write it records: the entry and its generation land in one
    atomic write, so a reader that sees generation g sees every entry up to g (an `$inc`ed
    counter and a separate insert would leave a gap a reader could step over for good). With
    no multi-document transaction (it needs a replica set), a process killed between a write
    and its entry leaves a change other processes see at their next listing."""

    def __init__(
        self,
        uri: str,
        database: str,
        vector_encoding: SentenceVectorEncoding = DEFAULT_ENCODING,
        journal_keep: int = JOURNAL_KEEP,
    ) -> None:
        self._keep = journal_keep
        self._vector_encoding = checked_encoding(vector_encoding)
        try:
            self._client: MongoClient[dict[str, Any]] = MongoClient(
                uri, serverSelectionTimeoutMS=SERVER_SELECTION_TIMEOUT_MS, tz_aware=True
            )
        except (ConfigurationError, ValueError, TypeError) as error:  # InvalidURI, bad options
            raise ConfigError(
                f"MONGODB_URI {shown_uri(uri)!r} cannot be used ({error}); fix it, or unset it "
                "to use the embedded SQLite docstore."
            ) from None
        try:
            self._client.admin.command("ping")
        except PyMongoError as error:
            self._client.close()
            raise BackendUnavailable(
                f"MongoDB at {uri} cannot be reached ({type(error).__name__}); start the server "
                "(`bash db.sh start_all`) or unset MONGODB_URI to use the embedded SQLite docstore."
            ) from None
        db = self._client[database]
        self._documents = db["documents"]
        self._chunks = db["chunks"]
        self._vectors = db["sentence_vectors"]
        self._trees = db["trees"]
        self._cards = db["cards"]
        self._doc_states = db["doc_states"]
        self._changes = db["changes"]
        self._create_indexes()

    def _create_indexes(self) -> None:
        self._documents.create_index(
            [("collection", ASCENDING), ("doc_id", ASCENDING)], unique=True
        )
        self._documents.create_index([("collection", ASCENDING), ("name", ASCENDING)])
        self._chunks.create_index([("collection", ASCENDING), ("id", ASCENDING)], unique=True)
        self._chunks.create_index(
            [("collection", ASCENDING), ("doc_id", ASCENDING), ("chunk_index", ASCENDING)]
        )
        self._vectors.create_index(
            [("collection", ASCENDING), ("chunk_id", ASCENDING)], unique=True
        )
        self._changes.create_index(
            [("collection", ASCENDING), ("generation", ASCENDING)], unique=True
        )
        for keyed_by_doc in (self._trees, self._cards, self._doc_states):
            keyed_by_doc.create_index(
                [("collection", ASCENDING), ("doc_id", ASCENDING)], unique=True
            )
        index_and_backfill(self._chunks)

    def _journal(self, collection: str, doc_id: str, kind: ChangeKind) -> None:
        for _ in range(CLAIM_TRIES):
            generation = self.generation(collection) + 1
            entry = {"collection": collection, "generation": generation}
            try:
                self._changes.insert_one({**entry, "doc_id": doc_id, "kind": kind})
            except DuplicateKeyError:
                continue  # another writer took it: try the next
            self._changes.delete_many(
                {"collection": collection, "generation": {"$lte": generation - self._keep}}
            )
            return
        raise BackendUnavailable(
            f"MongoDB: no journal generation for collection {collection!r} after "
            f"{CLAIM_TRIES} tries; other writers keep taking them."
        )

    def generation(self, collection: str) -> int:
        last = list(
            self._changes.find({"collection": collection}, {"_id": 0, "generation": 1})
            .sort("generation", DESCENDING)
            .limit(1)
        )
        return int(last[0]["generation"]) if last else 0

    def changes_since(self, collection: str, generation: int) -> ChangeSet | None:
        # The entries first, the records after (see SQLite's `read_changes`).
        cursor = self._changes.find(
            {"collection": collection, "generation": {"$gte": generation}},
            {"_id": 0, "generation": 1, "doc_id": 1},
        ).sort("generation", ASCENDING)
        entries = [(int(e["generation"]), str(e["doc_id"])) for e in cursor]
        if not reaches(generation, [g for g, _ in entries]):
            return None
        changed = list(dict.fromkeys(d for g, d in entries if g > generation))
        if not changed:
            return ChangeSet(generation)
        found = self._documents.find({"collection": collection, "doc_id": {"$in": changed}})
        return change_set(entries[-1][0], changed, [_record(data) for data in found])

    def put_document(self, record: DocumentRecord) -> None:
        fields = {name: getattr(record, name) for name in DOCUMENT_FIELDS}
        self._documents.replace_one(
            {"collection": record.collection, "doc_id": record.doc_id}, fields, upsert=True
        )
        kind: ChangeKind = "ready" if record.status == "ready" else "pending"
        self._journal(record.collection, record.doc_id, kind)

    def put_chunks(self, collection: str, chunks: Sequence[TextNode]) -> None:
        writes = [
            ReplaceOne(
                {"collection": collection, "id": c.node_id},
                {**to_record(c), "collection": collection, VALUES: values_field(c.metadata)},
                upsert=True,
            )
            for c in chunks
        ]
        if writes:
            self._chunks.bulk_write(writes, ordered=False)
            # A document's kept state is derived from its chunks: any chunk written drops it.
            doc_ids = sorted({doc_id_of(c) for c in chunks})
            self._doc_states.delete_many({"collection": collection, "doc_id": {"$in": doc_ids}})

    def put_sentence_vectors(self, collection: str, vectors: dict[str, np.ndarray]) -> None:
        """Delete, then insert: replacing a document that holds BSON binary fails on MongoDB wire
        servers such as nx-27017 ("bytes is not JSON serializable"); inserting it works on all.
        The document is pending while these are written, so nothing reads the gap."""
        documents = []
        for chunk_id, matrix in vectors.items():
            rows, dim, blob = encode_vectors(matrix, self._vector_encoding)
            documents.append(
                {
                    "collection": collection,
                    "chunk_id": chunk_id,
                    "row_count": rows,
                    "dim": dim,
                    "vectors": Binary(blob),
                    "encoding": self._vector_encoding,
                }
            )
        if not documents:
            return
        ids = [d["chunk_id"] for d in documents]
        self._vectors.delete_many({"collection": collection, "chunk_id": {"$in": ids}})
        self._vectors.insert_many(documents, ordered=False)

    def mark_ready(self, collection: str, doc_id: str) -> None:
        self._documents.update_one(
            {"collection": collection, "doc_id": doc_id}, {"$set": {"status": "ready"}}
        )
        self._journal(collection, doc_id, "ready")

    def get_document(self, collection: str, doc_id: str) -> DocumentRecord | None:
        found = self._documents.find_one({"collection": collection, "doc_id": doc_id})
        return _record(found) if found else None

    def find_by_name(self, collection: str, name: str) -> list[DocumentRecord]:
        cursor = self._documents.find({"collection": collection, "name": name}).sort(
            [("created_at", ASCENDING), ("doc_id", ASCENDING)]
        )
        return [_record(found) for found in cursor]

    def list_documents(
        self, collection: str, include_pending: bool = False
    ) -> list[DocumentRecord]:
        query: JSONObject = {"collection": collection}
        if not include_pending:
            query["status"] = "ready"
        cursor = self._documents.find(query).sort([("name", ASCENDING), ("doc_id", ASCENDING)])
        return [_record(found) for found in cursor]

    def get_chunks(self, collection: str, chunk_ids: Sequence[str]) -> list[TextNode]:
        cursor = self._chunks.find({"collection": collection, "id": {"$in": list(chunk_ids)}})
        found = {data["id"]: from_record(data) for data in cursor}
        return [found[i] for i in chunk_ids if i in found]

    def get_sentence_vectors(
        self, collection: str, chunk_ids: Sequence[str]
    ) -> dict[str, np.ndarray]:
        cursor = self._vectors.find(
            {"collection": collection, "chunk_id": {"$in": list(chunk_ids)}}
        )
        # Documents written before they named their encoding have no "encoding" field.
        return {
            data["chunk_id"]: decode_vectors(
                bytes(data["vectors"]),
                int(data["row_count"]),
                int(data["dim"]),
                checked_encoding(data.get("encoding")),
            )
            for data in cursor
        }

    def chunks_of(self, collection: str, doc_id: str) -> list[TextNode]:
        cursor = self._chunks.find({"collection": collection, "doc_id": doc_id}).sort(
            "chunk_index", ASCENDING
        )
        return [from_record(data) for data in cursor]

    def ready_chunks(self, collection: str) -> list[TextNode]:
        ready = sorted(d.doc_id for d in self.list_documents(collection))
        cursor = self._chunks.find({"collection": collection, "doc_id": {"$in": ready}}).sort(
            [("doc_id", ASCENDING), ("chunk_index", ASCENDING)]
        )
        return [from_record(data) for data in cursor]

    def chunk_metadata(
        self, collection: str, doc_id: str, keys: Sequence[str]
    ) -> list[ChunkMetadata]:
        projection = {"_id": 0, "id": 1, "node.start_char_idx": 1}
        projection.update({f"node.metadata.{key}": 1 for key in keys})
        cursor = self._chunks.find({"collection": collection, "doc_id": doc_id}, projection).sort(
            "chunk_index", ASCENDING
        )
        found = []
        for data in cursor:
            values = {k: projected(data, f"node.metadata.{k}") for k in keys}
            metadata = {k: v for k, v in values.items() if v is not None}
            start = json_int(projected(data, "node.start_char_idx") or 0)
            found.append(ChunkMetadata(data["id"], start, metadata))
        return found

    def chunks_carrying(
        self, collection: str, field: str, values: Sequence[str], partial: bool = False
    ) -> dict[str, set[str]]:
        return read_carriers(self._chunks, collection, field, values, partial)

    def values_carried(self, collection: str, field: str, values: Collection[str]) -> set[str]:
        return read_carried(self._chunks, collection, field, list(values))

    def count_chunks(self, collection: str, doc_id: str) -> int:
        return int(self._chunks.count_documents({"collection": collection, "doc_id": doc_id}))

    def chunk_stats(self, collection: str) -> dict[str, tuple[int, int]]:
        """Per document id (record or not): its chunk count and highest chunk index."""
        pipeline: list[JSONObject] = [
            {"$match": {"collection": collection}},
            {"$group": {"_id": "$doc_id", "n": {"$sum": 1}, "top": {"$max": "$chunk_index"}}},
        ]
        return {
            str(row["_id"]): (int(row["n"]), int(row["top"]))
            for row in self._chunks.aggregate(pipeline)
        }

    def delete_document(self, collection: str, doc_id: str) -> None:
        # No multi-document transaction (it needs a replica set): the record goes first, so a
        # delete stopped half-way leaves orphans that nothing lists rather than a broken document.
        self._documents.delete_one({"collection": collection, "doc_id": doc_id})
        self._journal(collection, doc_id, "deleted")
        chunk_ids = self._chunks.distinct("id", {"collection": collection, "doc_id": doc_id})
        self._vectors.delete_many({"collection": collection, "chunk_id": {"$in": chunk_ids}})
        prefix = re.escape(page_vector_prefix(doc_id))
        self._vectors.delete_many({"collection": collection, "chunk_id": {"$regex": f"^{prefix}"}})
        self._chunks.delete_many({"collection": collection, "doc_id": doc_id})
        self._trees.delete_many({"collection": collection, "doc_id": doc_id})
        self._cards.delete_many({"collection": collection, "doc_id": doc_id})
        self._doc_states.delete_many({"collection": collection, "doc_id": doc_id})

    def put_tree(self, collection: str, doc_id: str, tree: JSONObject) -> None:
        key = {"collection": collection, "doc_id": doc_id}
        self._trees.replace_one(key, {**key, "tree": tree}, upsert=True)

    def get_tree(self, collection: str, doc_id: str) -> JSONObject | None:
        found = self._trees.find_one({"collection": collection, "doc_id": doc_id})
        return dict(found["tree"]) if found else None

    def put_card(self, collection: str, doc_id: str, card: JSONObject) -> None:
        key = {"collection": collection, "doc_id": doc_id}
        self._cards.replace_one(key, {**key, "card": card}, upsert=True)

    def get_cards(
        self, collection: str, doc_ids: Sequence[str] | None = None
    ) -> dict[str, JSONObject]:
        query: JSONObject = {"collection": collection}
        if doc_ids is not None:
            query["doc_id"] = {"$in": list(doc_ids)}
        found = self._cards.find(query)
        return {str(row["doc_id"]): dict(row["card"]) for row in found}

    def put_doc_states(self, collection: str, states: Mapping[str, JSONObject]) -> None:
        if not states:
            return
        writes = [
            ReplaceOne(
                {"collection": collection, "doc_id": doc_id},
                {"collection": collection, "doc_id": doc_id, "state": state},
                upsert=True,
            )
            for doc_id, state in states.items()
        ]
        self._doc_states.bulk_write(writes, ordered=False)

    def get_doc_states(self, collection: str, doc_ids: Sequence[str]) -> dict[str, JSONObject]:
        query = {"collection": collection, "doc_id": {"$in": list(doc_ids)}}
        return {str(row["doc_id"]): dict(row["state"]) for row in self._doc_states.find(query)}

    def collections(self) -> list[str]:
        return sorted(self._documents.distinct("collection", {"status": "ready"}))

    def drop_database(self) -> None:
        """Remove everything this store holds (used by tests on throwaway databases)."""
        self._client.drop_database(self._documents.database.name)

    def close(self) -> None:
        self._client.close()


def _record(data: dict[str, Any]) -> DocumentRecord:
    return DocumentRecord(
        doc_id=data["doc_id"],
        name=data["name"],
        collection=data["collection"],
        pages=int(data["pages"]),
        parser=data["parser"],
        status=data["status"],
        created_at=float(data["created_at"]),
        source=str(data.get("source") or ""),  # absent from records written before sources
    )
