"""What a document carries after enrichment, for `list --json`: per field, how many chunks hold
a value, how many distinct values there are, and the most frequent ones."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from llama_index.core.schema import BaseNode

from citerag.enrich.fields import ENRICHED_BY, LIST_FIELDS
from citerag.types import JSONObject

TOP_VALUES = 5


def enrichment_summary(chunks: Sequence[BaseNode]) -> JSONObject:
    methods = sorted({str(c.metadata.get(ENRICHED_BY, "")) for c in chunks} - {""})
    fields: JSONObject = {}
    for key in LIST_FIELDS:
        counts = Counter(v for c in chunks for v in c.metadata.get(key) or [])
        if counts:
            fields[key] = {
                "chunks": sum(1 for c in chunks if c.metadata.get(key)),
                "distinct": len(counts),
                "top": [value for value, _ in counts.most_common(TOP_VALUES)],
            }
    return {"enrichedBy": ", ".join(methods) or "none", "fields": fields}
