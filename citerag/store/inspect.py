"""`main.py inspect COLLECTION`: what Attu would show, from the terminal (Attu needs Docker).

Milvus's schema with readable types, its vector index, the deployment's capabilities, rows per
document on both sides with their health, and a sample of rows without their vectors.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from citerag.store.base import DocStore
from citerag.store.milvus_index import MilvusIndex

PREVIEW_SHOWN = 60


class FieldRow(TypedDict):
    name: str
    type: str
    primary: bool


class DocumentHealth(TypedDict):
    name: str
    docId: str
    status: str
    rowsInMilvus: int
    chunksInDocstore: int
    health: str
    card: Mapping[str, object]  # what the document is (issuer, kind, period), {} when unread


class Inspection(TypedDict):
    collection: str
    milvusCollection: str
    capabilities: Mapping[str, object]
    fields: list[FieldRow]
    indexes: list[Mapping[str, object]]
    rows: int
    documents: list[DocumentHealth]
    sample: Sequence[Mapping[str, object]]


def inspect_collection(
    docstore: DocStore, vectors: MilvusIndex, collection: str, rows: int = 5
) -> Inspection:
    described = vectors.describe(collection)
    cards = docstore.get_cards(collection)
    documents: list[DocumentHealth] = []
    for record in docstore.list_documents(collection, include_pending=True):
        in_milvus = vectors.count(collection, record.doc_id) if described else 0
        in_docstore = docstore.count_chunks(collection, record.doc_id)
        documents.append(
            {
                "name": record.name,
                "docId": record.doc_id,
                "status": record.status,
                "rowsInMilvus": in_milvus,
                "chunksInDocstore": in_docstore,
                "health": "ok" if in_milvus == in_docstore > 0 else "inconsistent",
                "card": dict(cards.get(record.doc_id, {})),
            }
        )
    return {
        "collection": collection,
        "milvusCollection": described.get("name", ""),
        "capabilities": vectors.capabilities.to_dict(),
        "fields": described.get("fields", []),
        "indexes": described.get("indexes", []),
        "rows": described.get("rows", 0),
        "documents": documents,
        "sample": vectors.sample(collection, rows) if described else [],
    }


def format_inspection(data: Inspection) -> str:
    caps = data["capabilities"]
    lines = [
        f"Collection {data['collection']!r} (Milvus collection {data['milvusCollection']}) on "
        f"Milvus {caps['kind']} {caps['version']}: vector index {caps['indexType']}, server-side "
        f"BM25 function {'available' if caps['bm25Function'] else 'not available (bm25-files)'}",
        "",
        "Fields:",
    ]
    width = max((len(f["name"]) for f in data["fields"]), default=4)
    for field in data["fields"]:
        primary = "  primary key" if field["primary"] else ""
        lines.append(f"  {field['name']:<{width}}  {field['type']}{primary}")
    for index in data["indexes"]:
        lines.append(
            f"Index on {index.get('field_name', '?')}: {index.get('index_type', '?')}"
            f" ({index.get('metric_type', '?')})"
        )
    lines += ["", f"Rows: {data['rows']}", "", "Per document (Milvus rows / docstore chunks):"]
    for doc in data["documents"]:
        lines.append(
            f"  {doc['name']}  {doc['docId'][:12]}  {doc['status']}  "
            f"{doc['rowsInMilvus']} / {doc['chunksInDocstore']}  {doc['health']}"
        )
        if doc["card"]:
            lines.append(f"    card: {_card_line(doc['card'])}")
    lines += ["", f"Sample of {len(data['sample'])} rows:"]
    for row in data["sample"]:
        preview = str(row.get("preview", ""))[:PREVIEW_SHOWN].replace("\n", " ")
        lines.append(
            f"  {row.get('id')}  {row.get('doc_name')}  page {row.get('page')}  "
            f"{row.get('node_type')}  {str(row.get('section', ''))[:40]!r}  {preview!r}"
        )
    return "\n".join(lines)


def _card_line(card: Mapping[str, object]) -> str:
    """ "annual report, Adobe Inc. (ADBE), fiscal 2022 to 2022-12-02": what is known of it."""
    kind, organisation, ticker = card.get("kind"), card.get("organisation"), card.get("ticker")
    parts = [str(kind or "kind unknown")]
    if organisation:
        parts.append(f"{organisation} ({ticker})" if ticker else str(organisation))
    if card.get("fiscal_year"):
        quarter = f"Q{card['quarter']} " if card.get("quarter") else ""
        ended = f" to {card['period_end']}" if card.get("period_end") else ""
        parts.append(f"{quarter}fiscal {card['fiscal_year']}{ended}")
    if card.get("title"):
        parts.append(repr(str(card["title"])[:PREVIEW_SHOWN]))
    return ", ".join(parts)
