"""Enrichment at ingest: years, dates, amounts, labels and entities per chunk (rules or GLiNER),
and semantic metadata (LangExtract, cached on disk) when an LLM is configured."""
