"""Reading every row a Milvus filter matches, however many: a plain query answers at most
16,384 rows (Milvus's query result window), so listings page through a query iterator."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from typing import Any

from pymilvus import MilvusClient

QUERY_BATCH = 4096


class _LiteSessionTimestamp(logging.Filter):
    """Milvus Lite answers no session timestamp to a query iterator, which then uses the
    client's clock (harmless: collections here are strongly consistent) and warns every time."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "failed to get mvccTs" not in record.getMessage()


logging.getLogger("pymilvus.client.iterator.query_iterator").addFilter(_LiteSessionTimestamp())


def all_rows(
    client: MilvusClient, name: str, expression: str, fields: list[str]
) -> Iterator[Mapping[str, Any]]:
    """Every row of collection `name` that `expression` matches, `fields` only, page by page.

    The caller holds the client's lock until the iterator is exhausted or closed."""
    rows = client.query_iterator(
        name, batch_size=QUERY_BATCH, filter=expression, output_fields=fields
    )
    try:
        while batch := rows.next():
            yield from batch
    finally:
        rows.close()
