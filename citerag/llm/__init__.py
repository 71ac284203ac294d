"""LLM connections every stage may use (enrichment, planning, tree search, answers): the
configured LlamaIndex `LLM` and a plain chat over it with the project's one-sentence errors."""
