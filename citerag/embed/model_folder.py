"""What a SentenceTransformer folder says about its model, read from its files without loading
it: whether the packed graph (`embed.packed`) reproduces it, its vector size and input length.

Loading sentence-transformers imports PyTorch and transformers, seconds of every process that
embeds; the packed graph needs only ONNX Runtime and the tokenizer, so the embedder asks the
folder first and loads the SentenceTransformer only where packing does not apply.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKABLE_MODULES = (("Transformer", "Pooling"), ("Transformer", "Pooling", "Normalize"))
# Models whose positions do not start at 0 for every text (XLM-R) or that pool otherwise are
# not packed: the graph numbers each text's positions from 0 and means its tokens.
PACKABLE_MODEL_TYPES = ("bert",)


@dataclass(frozen=True)
class ModelLayout:
    modules: tuple[str, ...]  # class names, in order
    pooling: str  # "mean", "cls", ... ("" when the folder does not say)
    model_type: str
    max_seq_length: int
    dim: int
    lowercases: bool  # sentence-transformers lowercases texts itself before tokenizing
    prompted: bool  # a default prompt is put before every text

    @property
    def packable(self) -> bool:
        return (
            self.modules in PACKABLE_MODULES
            and self.pooling == "mean"
            and self.model_type in PACKABLE_MODEL_TYPES
            and self.max_seq_length > 0
            and self.dim > 0
            and not self.lowercases
            and not self.prompted
        )


def read_layout(folder: Path) -> ModelLayout | None:
    """The folder's layout, or None when its files do not describe it (then the
    SentenceTransformer is loaded and asked)."""
    try:
        modules = _json(folder / "modules.json")
        transformer = _json(folder / "sentence_bert_config.json")
        config = _json(folder / "config.json")
        pooling_entry = next(m for m in modules if str(m.get("type", "")).endswith(".Pooling"))
        pooling = _json(folder / str(pooling_entry.get("path", "")) / "config.json")
        extras = _json_or_empty(folder / "config_sentence_transformers.json")
    except (OSError, ValueError, StopIteration, AttributeError):
        return None
    return ModelLayout(
        modules=tuple(str(m.get("type", "")).rsplit(".", 1)[-1] for m in modules),
        pooling=_pooling_mode(pooling),
        model_type=str(config.get("model_type", "")),
        max_seq_length=int(transformer.get("max_seq_length") or 0),
        dim=int(pooling.get("word_embedding_dimension") or 0),
        lowercases=bool(transformer.get("do_lower_case", False)),
        prompted=bool(extras.get("default_prompt_name")),
    )


def _pooling_mode(pooling: dict[str, Any]) -> str:
    if isinstance(pooling.get("pooling_mode"), str):
        return str(pooling["pooling_mode"])
    modes = [key for key, on in pooling.items() if key.startswith("pooling_mode_") and on is True]
    if modes == ["pooling_mode_mean_tokens"]:
        return "mean"
    return ",".join(mode.removeprefix("pooling_mode_") for mode in modes)


def _json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def _json_or_empty(path: Path) -> dict[str, Any]:
    return _json(path) if path.is_file() else {}
