"""Contract tests every backend of a seam must pass, as mixins (pytest is needed to use them).

A backend's test module subclasses the seam's mixin and gives the class the one fixture the
mixin names (an empty store, a parser, a scorer, ...), as `haystack.testing` does for document
stores. One module per seam: `docstore`, `vector_index`, `keyword_index`, `parser`, `rerank`,
`llm`, `enricher`.
"""
