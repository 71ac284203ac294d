"""The project as a benchmark system: one collection per PDF, retrieval through its own parts.

`ProjectSystem.retrieve` runs what `Engine.retrieve` runs (the hybrid retriever and the
reranker postprocessor) with the settings of one variant, so several variants (page evidence
on/off, each reranker) are measured over the same stored data in one process.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path

from llama_index.core.schema import QueryBundle

from benchmarks.baselines import RetrievedPassage
from citerag.engine import Engine
from citerag.nodes import doc_name_of, page_of
from citerag.query.factory import QueryFactory
from citerag.settings import Settings


def collection_for(pdf_name: str) -> str:
    return "b" + hashlib.sha256(pdf_name.encode()).hexdigest()[:12]


def ingest_all(engine: Engine, pdfs: Sequence[Path]) -> list[tuple[str, int, int, float]]:
    """Ingest each PDF into its own collection; (name, pages, chunks, seconds) per PDF."""
    rows = []
    for pdf in pdfs:
        outcome = engine.ingest(pdf, collection_for(pdf.name))
        rows.append((pdf.name, outcome.pages, outcome.chunks, outcome.seconds))
        print(f"ingested {pdf.name}: {outcome.status}, {outcome.chunks} chunks")
    return rows


class ProjectSystem:
    def __init__(self, name: str, engine: Engine, settings: Settings) -> None:
        self.name = name
        self._engine = engine
        self._factory = QueryFactory(
            settings, engine.docstore, engine.vectors, engine.embed_model, engine.embedder
        )

    def retrieve(self, question: str, document: str, top_k: int) -> list[RetrievedPassage]:
        collection = collection_for(document)
        state = self._engine.collection_state(collection)
        query = QueryBundle(question)
        nodes = self._factory.retriever(state).retrieve(query)
        reranker = self._factory.postprocessors(collection, top_k)[0]
        ranked = reranker.postprocess_nodes(nodes, query_bundle=query)
        return [
            RetrievedPassage(
                doc_name_of(n.node), page_of(n.node), n.node.get_content(), n.score or 0
            )
            for n in ranked
        ]


def project_variants(
    engine: Engine, variants: Mapping[str, Mapping[str, object]]
) -> list[ProjectSystem]:
    return [
        ProjectSystem(name, engine, engine.settings.with_overrides(**changes))
        for name, changes in variants.items()
    ]
