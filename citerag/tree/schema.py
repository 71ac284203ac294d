"""The JSON Schema of the PageIndex export, and a checker for the subset of JSON Schema it uses
(type, required, properties, additionalProperties, items, pattern, minimum, $ref to itself).

`jsonschema` is not a dependency; this checker covers exactly what `PAGEINDEX_SCHEMA` needs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TypedDict

from citerag.types import JSONValue, json_int, json_list, json_object

# The JSON Schema keywords this checker understands.
Schema = TypedDict(
    "Schema",
    {
        "type": str,
        "required": list[str],
        "additionalProperties": bool,
        "properties": "dict[str, Schema]",
        "items": "Schema",
        "pattern": str,
        "minimum": int,
        "$ref": str,
        "definitions": "dict[str, Schema]",
    },
    total=False,
)

NODE_SCHEMA: Schema = {
    "type": "object",
    "required": ["title", "node_id", "start_index", "end_index", "summary", "nodes"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string"},
        "node_id": {"type": "string", "pattern": r"^\d{4,}$"},
        "start_index": {"type": "integer", "minimum": 1},
        "end_index": {"type": "integer", "minimum": 1},
        "summary": {"type": "string"},
        "text": {"type": "string"},
        "chunk_ids": {"type": "array", "items": {"type": "string"}},
        "nodes": {"type": "array", "items": {"$ref": "#/definitions/node"}},
    },
}
PAGEINDEX_SCHEMA: Schema = {
    "type": "object",
    "required": ["doc_name", "structure"],
    "additionalProperties": False,
    "properties": {
        "doc_name": {"type": "string"},
        "structure": {"type": "array", "items": {"$ref": "#/definitions/node"}},
    },
    "definitions": {"node": NODE_SCHEMA},
}
_TYPES: dict[str, type | tuple[type, ...]] = {
    "object": dict,
    "array": list,
    "string": str,
    "integer": int,
}


def schema_errors(data: object, schema: Schema = PAGEINDEX_SCHEMA) -> list[str]:
    """Every way `data` breaks `schema`, as "path: problem" lines; empty when it conforms."""
    errors: list[str] = []
    _check(data, schema, schema, "$", errors)
    return errors


def _check(data: object, schema: Schema, root: Schema, at: str, out: list[str]) -> None:
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        _check(data, root["definitions"][name], root, at, out)
        return
    expected = schema.get("type")
    if expected and (not isinstance(data, _TYPES[expected]) or isinstance(data, bool)):
        out.append(f"{at}: expected {expected}, got {type(data).__name__}")
        return
    if isinstance(data, dict):
        _check_object(data, schema, root, at, out)
    elif isinstance(data, list):
        for index, item in enumerate(data):
            _check(item, schema.get("items", {}), root, f"{at}[{index}]", out)
    elif isinstance(data, str) and "pattern" in schema and not re.search(schema["pattern"], data):
        out.append(f"{at}: {data!r} does not match {schema['pattern']}")
    elif isinstance(data, int) and "minimum" in schema and data < schema["minimum"]:
        out.append(f"{at}: {data} is below {schema['minimum']}")


def _check_object(
    data: Mapping[str, object], schema: Schema, root: Schema, at: str, out: list[str]
) -> None:
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in data:
            out.append(f"{at}: missing {key!r}")
    for key, value in data.items():
        if key in properties:
            _check(value, properties[key], root, f"{at}.{key}", out)
        elif schema.get("additionalProperties", True) is False:
            out.append(f"{at}: unexpected {key!r}")


def tree_errors(data: Mapping[str, JSONValue], ordered_ids: bool = True) -> list[str]:
    """Schema errors plus what a schema cannot say: unique ids in depth-first order (only
    unique when not `ordered_ids`: a tree imported from PageIndex keeps its ids), spans that
    run forwards and children inside their parent's pages."""
    errors = schema_errors(data)
    if errors:
        return errors
    ids: list[str] = []

    def visit(node: Mapping[str, JSONValue], parent: tuple[int, int] | None) -> None:
        ids.append(str(node["node_id"]))
        start, end = json_int(node["start_index"]), json_int(node["end_index"])
        if end < start:
            errors.append(f"node {node['node_id']}: end_index {end} before start_index {start}")
        if parent and not (parent[0] <= start and end <= parent[1]):
            errors.append(f"node {node['node_id']}: pages {start}-{end} outside its parent's")
        for child in json_list(node["nodes"]):
            visit(json_object(child), (start, end))

    for node in json_list(data["structure"]):
        visit(json_object(node), None)
    if ordered_ids and ids != [f"{i:04d}" for i in range(len(ids))]:
        errors.append("node ids are not 0000, 0001, ... in depth-first order")
    elif len(set(ids)) != len(ids):
        errors.append("node ids are not unique")
    return errors
