"""GLiNER zero-shot entities, used when its weights are on this machine (never downloaded).

A configured folder (`gliner_model`) or a hub id already in the local cache loads; otherwise
`find_gliner` says why not and enrichment falls back to the rules extractor.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from citerag.enrich.fields import ENTITIES, Fields
from citerag.extras import require

log = logging.getLogger(__name__)
DEFAULT_GLINER = "urchade/gliner_medium-v2.1"
THRESHOLD = 0.5
BATCH = 8


def find_gliner(configured: str = "") -> tuple[str | None, str]:
    """(where the weights are, why), or (None, why not): a folder, else the hub cache."""
    candidate = configured or DEFAULT_GLINER
    if Path(candidate).expanduser().is_dir():
        return str(Path(candidate).expanduser()), f"folder {candidate}"
    try:
        from huggingface_hub import try_to_load_from_cache
    except ImportError:  # pragma: no cover - huggingface_hub ships with transformers
        return None, "huggingface_hub is not installed"
    cached = try_to_load_from_cache(candidate, "gliner_config.json")
    if isinstance(cached, str):
        return candidate, f"{candidate} in the local cache"
    return None, f"no GLiNER weights for {candidate!r} on this machine"


class EntityModel(Protocol):
    """What is used of a GLiNER model (`inference`, batched, where the release has it)."""

    def predict_entities(
        self, text: str, labels: list[str], *, threshold: float
    ) -> Sequence[Mapping[str, object]]: ...


class GlinerExtractor:
    """Entities per text from a loaded GLiNER model, as `label` → values."""

    name = "gliner"

    def __init__(
        self, model: EntityModel, labels: Sequence[str], threshold: float = THRESHOLD
    ) -> None:
        self._model = model
        self._labels = [label.lower() for label in labels]
        self._threshold = threshold

    @classmethod
    def load(cls, where: str, labels: Sequence[str]) -> GlinerExtractor:
        require("gliner", "gliner", "GLiNER")
        from gliner import GLiNER

        model = GLiNER.from_pretrained(where, local_files_only=True)
        return cls(model, labels)

    def fields(self, texts: Sequence[str]) -> list[Fields]:
        """The entities' texts, each once (their labels only choose what is found)."""
        return [
            {ENTITIES: list(dict.fromkeys(text for _label, text in pairs))}
            for pairs in self.entities(texts)
        ]

    def entities(self, texts: Sequence[str]) -> list[list[tuple[str, str]]]:
        """(label, text) pairs per input text, in order, each once."""
        results: list[list[tuple[str, str]]] = []
        for start in range(0, len(texts), BATCH):
            batch = [t[: 4 * 384] for t in texts[start : start + BATCH]]
            predicted = self._predict(batch)
            for found in predicted:
                pairs = {(str(e["label"]), " ".join(str(e["text"]).split())): None for e in found}
                results.append([pair for pair in pairs if pair[1]])
        return results

    def _predict(self, batch: list[str]) -> list[Sequence[Mapping[str, object]]]:
        model = self._model
        if hasattr(model, "inference"):
            return list(model.inference(batch, self._labels, threshold=self._threshold))
        return [model.predict_entities(t, self._labels, threshold=self._threshold) for t in batch]
