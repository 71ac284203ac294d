"""The chunk collection's name, schema and rows as Milvus takes and gives them.

Scalar text is cut to its column's UTF-8 bytes; enrichment's list fields are bounded ARRAY
columns (`milvus_lists`), written only where the collection has them (one made before them
does not).
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

import numpy as np
from pymilvus import CollectionSchema, DataType, MilvusClient

from citerag.store.base import VectorRow
from citerag.store.milvus_lists import CUT, LIST_COLUMNS, add_list_fields, list_entity

# VARCHAR max_length counts UTF-8 bytes. Ids are content hashes plus a suffix: 128 is ample.
ID_BYTES = 128
SCALAR_FIELDS = {
    "doc_id": 128,
    "doc_name": 512,
    "node_type": 32,
    "section": 512,
    "label": 64,
    "preview": 512,
}
VALID_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
MAX_NAME_CHARS = 200


def milvus_collection_name(collection: str) -> str:
    """A legal Milvus name for a user's collection name, the same every time.

    A name that needed changes gets a hash of the original, so "a-b" and "a_b" stay apart.
    """
    cleaned = re.sub(r"[^A-Za-z0-9_]", "_", collection)[:MAX_NAME_CHARS]
    if cleaned == collection and VALID_NAME.fullmatch(collection):
        return f"c_{collection}"
    digest = hashlib.sha1(collection.encode("utf-8")).hexdigest()[:10]
    return f"c_{cleaned}_{digest}"


def truncate_utf8(text: str, max_bytes: int) -> str:
    """`text` cut to at most `max_bytes` UTF-8 bytes without splitting a character."""
    encoded = text.encode("utf-8")
    if len(encoded) <= max_bytes:
        return text
    return encoded[:max_bytes].decode("utf-8", errors="ignore")


def chunk_schema(dim: int, with_lists: bool = True) -> CollectionSchema:
    """The chunk collection's columns; `with_lists` False gives a collection as made before the
    enrichment-list columns (what tests of such stores build)."""
    schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=ID_BYTES)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    schema.add_field("doc_id", DataType.VARCHAR, max_length=SCALAR_FIELDS["doc_id"])
    schema.add_field("doc_name", DataType.VARCHAR, max_length=SCALAR_FIELDS["doc_name"])
    schema.add_field("page", DataType.INT64)
    for field in ("node_type", "section", "label", "preview"):
        schema.add_field(field, DataType.VARCHAR, max_length=SCALAR_FIELDS[field])
    if with_lists:
        add_list_fields(schema)
    return schema


def entity_of(row: VectorRow, with_lists: bool) -> dict[str, object]:
    """The row as Milvus takes it; the list columns only where the collection has them."""
    if len(row.chunk_id.encode("utf-8")) > ID_BYTES:
        raise ValueError(f"chunk id {row.chunk_id!r} is longer than {ID_BYTES} bytes")
    entity: dict[str, object] = {
        "id": row.chunk_id,
        "vector": np.asarray(row.vector, dtype=np.float32).tolist(),
        "page": int(row.page),
    }
    for field, max_bytes in SCALAR_FIELDS.items():
        entity[field] = truncate_utf8(str(getattr(row, field)), max_bytes)
    if with_lists:
        entity.update(list_entity(row.lists, row.lists_cut))
    return entity


def row_of(entity: dict[str, Any]) -> VectorRow:
    return VectorRow(
        chunk_id=str(entity["id"]),
        vector=np.asarray(entity["vector"], dtype=np.float32),
        page=int(entity["page"]),
        **{field: str(entity[field]) for field in SCALAR_FIELDS},
        lists={name: [str(v) for v in entity[name]] for name in LIST_COLUMNS if name in entity},
        lists_cut=bool(entity.get(CUT, False)),
    )


def readable_field(field: dict[str, Any]) -> dict[str, Any]:
    kind = field["type"]
    type_name = getattr(kind, "name", None) or DataType(int(kind)).name
    params = field.get("params") or {}
    shown = type_name
    if "max_capacity" in params:  # ARRAY<VARCHAR(bytes)>, at most max_capacity values
        element = field.get("element_type")
        element_name = getattr(element, "name", None) or DataType(int(element or 0)).name
        size = f"({params['max_length']})" if "max_length" in params else ""
        shown = f"{type_name}<{element_name}{size}>[{params['max_capacity']}]"
    elif "max_length" in params:
        shown = f"{type_name}({params['max_length']})"
    elif "dim" in params:
        shown = f"{type_name}(dim={params['dim']})"
    return {"name": field["name"], "type": shown, "primary": bool(field.get("is_primary"))}
