"""What ingest and split-brain repair share: the parts a document is written with."""

from __future__ import annotations

from citerag.embed.embedder import Embedder
from citerag.enrich.step import Enricher
from citerag.settings import Settings
from citerag.store.base import Stores


class DocumentWriter:
    """Settings, the stores a document's text, vectors and keywords go to, the embedder and the
    enricher (the "none" enricher when not given)."""

    def __init__(
        self,
        settings: Settings,
        stores: Stores,
        embedder: Embedder,
        enricher: Enricher | None = None,
    ) -> None:
        self._settings = settings
        self._enricher = enricher or Enricher("none")
        self._stores = stores
        self._docstore = stores.docstore
        self._vectors = stores.vectors
        self._keywords = stores.keywords
        self._embedder = embedder
