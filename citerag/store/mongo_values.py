"""The MongoDB docstore's list values: each chunk document carries its enrichment lists' values
case-folded, as "field:value" strings in one indexed array (`VALUES`), so a serving process asks
which chunks carry a value instead of holding every chunk's lists (`DocStore.chunks_carrying`).

On the chunk document rather than in a collection of their own: a standalone server has no
multi-document transaction, and values written by the chunk's own replace (and deleted with it)
can never disagree with the chunk after a writer stops half-way."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pymongo import ASCENDING, UpdateOne
from pymongo.collection import Collection

from citerag.nodes import VALUE_SOURCES, folded, folded_values
from citerag.types import JSONValue

VALUES = "list_values"
_BACKFILL_BATCH = 1000
# A document in the database's `migrations` collection once every chunk carries `VALUES`: an
# open then skips the search for chunks without it (a scan of every chunk).
FILLED = {"_id": "chunk list values"}


def values_field(metadata: Mapping[str, object]) -> list[str]:
    """What a chunk document holds under `VALUES` (empty for a chunk with no values, so that
    chunks written before the field are told apart by its absence)."""
    return [f"{field}:{value}" for field, value in folded_values(metadata)]


def index_and_backfill(chunks: Collection[dict[str, Any]]) -> None:
    """The index, and the field on chunk documents written before it (read from their stored
    metadata; once, since every write since sets it). A process stopped half-way leaves no
    mark, and the next open fills the rest."""
    chunks.create_index([("collection", ASCENDING), (VALUES, ASCENDING)])
    migrations = chunks.database["migrations"]
    if migrations.find_one(FILLED) is not None:
        return
    projection = {"_id": 1, **{f"node.metadata.{key}": 1 for key in VALUE_SOURCES}}
    writes: list[UpdateOne] = []
    for data in chunks.find({VALUES: {"$exists": False}}, projection):
        metadata = {key: projected(data, f"node.metadata.{key}") for key in VALUE_SOURCES}
        writes.append(UpdateOne({"_id": data["_id"]}, {"$set": {VALUES: values_field(metadata)}}))
        if len(writes) >= _BACKFILL_BATCH:
            chunks.bulk_write(writes, ordered=False)
            writes = []
    if writes:
        chunks.bulk_write(writes, ordered=False)
    migrations.replace_one(FILLED, FILLED, upsert=True)


def read_carried(
    chunks: Collection[dict[str, Any]], collection: str, field: str, values: Sequence[str]
) -> set[str]:
    """`DocStore.values_carried`: the asked values among the chunks' held ones, grouped on the
    server (an indexed `$in`, one row per value back, no chunk read whole)."""
    keys = {f"{field}:{value}": value for value in folded(values)}
    if not keys:
        return set()
    asked = {"$in": list(keys)}
    pipeline: list[dict[str, Any]] = [
        {"$match": {"collection": collection, VALUES: asked}},
        {"$unwind": f"${VALUES}"},
        {"$match": {VALUES: asked}},
        {"$group": {"_id": f"${VALUES}"}},
    ]
    return {keys[row["_id"]] for row in chunks.aggregate(pipeline) if row["_id"] in keys}


def read_carriers(
    chunks: Collection[dict[str, Any]],
    collection: str,
    field: str,
    values: Sequence[str],
    partial: bool,
) -> dict[str, set[str]]:
    """`DocStore.chunks_carrying` over the chunk documents."""
    wanted = folded(values)
    prefix = f"{field}:"
    found: dict[str, set[str]] = {}
    if partial:  # the server finds candidates; the field's own values are checked here
        for needle in wanted:
            query = {"collection": collection, VALUES: {"$regex": re.escape(needle)}}
            ids = {
                str(data["id"])
                for data in chunks.find(query, {"_id": 0, "id": 1, VALUES: 1})
                if any(
                    held.startswith(prefix) and needle in held[len(prefix) :]
                    for held in data.get(VALUES) or ()
                )
            }
            if ids:
                found[needle] = ids
        return found
    keys = {prefix + value: value for value in wanted}
    query = {"collection": collection, VALUES: {"$in": list(keys)}}
    for data in chunks.find(query, {"_id": 0, "id": 1, VALUES: 1}):
        for held in data.get(VALUES) or ():
            if held in keys:
                found.setdefault(keys[held], set()).add(str(data["id"]))
    return found


def projected(data: Mapping[str, JSONValue], path: str) -> JSONValue:
    """A projected field: nested as MongoDB returns it, or under its dotted name as nx-27017
    does."""
    if path in data:
        return data[path]
    value: JSONValue = data
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return None
        value = value[part]
    return value
