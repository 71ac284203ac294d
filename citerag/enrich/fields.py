"""The chunk metadata keys enrichment fills. Every one is a list of strings (possibly empty).

They live in the docstore's node metadata and in the collection state used for candidate-id
filtering; none is sent to the embedder or to an LLM.
"""

from __future__ import annotations

YEARS = "years"
DATES = "dates"
MONEY = "money"
PERCENTS = "percents"
LABELS = "labels"  # "figure:1", "table:2", "equation:3": what the chunk defines (captions)
ENTITIES = "entities"  # named entities as written ("Paul Graham", "Viaweb")
TOPICS = "topics"  # LangExtract attributes as "attribute=value"
ENRICHED_BY = "enriched_by"  # "rules", "gliner", "rules+langextract", ...

LIST_FIELDS = (YEARS, DATES, MONEY, PERCENTS, LABELS, ENTITIES, TOPICS)
ALL_KEYS = (*LIST_FIELDS, ENRICHED_BY)
