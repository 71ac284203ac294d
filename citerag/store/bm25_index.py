"""Lexical retrieval over bm25s, persisted as plain .npy arrays and JSON (never pickle)."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import bm25s
import numpy as np
from bm25s.stopwords import STOPWORDS_EN

# Lucene's IDF, log(1 + (N - n + 0.5) / (n + 0.5)), stays positive. Robertson's is log((N - n +
# 0.5) / (n + 0.5)), which bm25s clamps to zero for terms in more than half of the chunks: in one
# PDF's small corpus those are often the very words a question is about (the company's name in its
# own 10-K), and they would count for nothing.
DEFAULT_METHOD = "lucene"
METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")

# A number is one token ("2,427,077", "3.5"); thousands separators are dropped so that a figure
# matches however it is written ("4,585,289" and "4585289").
TOKEN_PATTERN = re.compile(r"\d+(?:[.,]\d+)*|\w+")
STOPWORDS = frozenset(STOPWORDS_EN)
BM25S_FOLDER = "bm25s"
IDS_FILE = "ids.json"


def tokenize(text: str) -> list[str]:
    """Lower-cased word and number tokens, English stopwords removed, plurals folded."""
    tokens = TOKEN_PATTERN.findall(text.lower())
    return [stem(token.replace(",", "")) for token in tokens if token not in STOPWORDS]


def stem(token: str) -> str:
    """Harman's S-stemmer: folds regular plurals only, so it rarely conflates distinct words."""
    if not token.isalpha() or len(token) <= 3:
        return token
    if token.endswith("ies") and not token.endswith(("eies", "aies")):
        return token[:-3] + "y"
    if token.endswith("es") and not token.endswith(("aes", "ees", "oes")):
        return token[:-1]
    if token.endswith("s") and not token.endswith(("us", "ss")):
        return token[:-1]
    return token


class BM25Index:
    """BM25 over a fixed list of (id, text); rebuilt when the corpus changes."""

    def __init__(self, method: str = DEFAULT_METHOD) -> None:
        if method not in METHODS:
            raise ValueError(f"BM25 method {method!r} is not one of {', '.join(METHODS)}")
        self.method = method
        self._ids: list[str] = []
        self._position: dict[str, int] = {}
        self._retriever: bm25s.BM25 | None = None

    def __len__(self) -> int:
        return len(self._ids)

    def build(self, ids: list[str], texts: list[str]) -> None:
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids but {len(texts)} texts")
        self._set_ids(ids)
        if not ids:
            self._retriever = None
            return
        retriever = bm25s.BM25(method=self.method)
        retriever.index([tokenize(text) for text in texts], show_progress=False)
        self._retriever = retriever

    def search(
        self, query: str, top_k: int, allowed_ids: set[str] | None = None
    ) -> list[tuple[str, float]]:
        """The best `top_k` ids with a positive score, best first, restricted to `allowed_ids`."""
        if self._retriever is None or top_k < 1:
            return []
        token_ids = self._retriever.get_tokens_ids(tokenize(query))
        if not token_ids:
            return []
        scores = np.asarray(self._retriever.get_scores_from_ids(token_ids), dtype=np.float64)
        candidates = np.flatnonzero(scores > 0)
        if allowed_ids is not None:
            allowed = [self._position[i] for i in allowed_ids if i in self._position]
            candidates = np.intersect1d(candidates, np.asarray(allowed, dtype=np.int64))
        return self._best(candidates, scores, top_k)

    def _best(
        self, candidates: np.ndarray, scores: np.ndarray, top_k: int
    ) -> list[tuple[str, float]]:
        # Stable sort on the negated score: ties keep corpus order, so results are reproducible.
        order = candidates[np.argsort(-scores[candidates], kind="stable")][:top_k]
        return [(self._ids[i], float(scores[i])) for i in order]

    def save(self, folder: Path, extra: dict[str, object] | None = None) -> None:
        """Write the index (and `extra` JSON files beside it) to `folder`, replacing what is
        there only once the new copy is whole; copies left by killed writers are removed."""
        folder.parent.mkdir(parents=True, exist_ok=True)
        _remove_dead_copies(folder)
        staging = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        meta = {"method": self.method, "ids": self._ids}
        (staging / IDS_FILE).write_text(json.dumps(meta), encoding="utf-8")
        for name, content in (extra or {}).items():
            (staging / name).write_text(json.dumps(content), encoding="utf-8")
        if self._retriever is not None:
            self._retriever.save(str(staging / BM25S_FOLDER), show_progress=False)
        _swap_in(staging, folder)

    @classmethod
    def load(cls, folder: Path) -> BM25Index:
        meta = json.loads((folder / IDS_FILE).read_text(encoding="utf-8"))
        index = cls(method=meta["method"])
        index._set_ids(meta["ids"])
        if index._ids:
            index._retriever = bm25s.BM25.load(
                str(folder / BM25S_FOLDER), allow_pickle=False, show_progress=False
            )
        return index

    def _set_ids(self, ids: list[str]) -> None:
        self._ids = list(ids)
        self._position = {chunk_id: i for i, chunk_id in enumerate(self._ids)}


def _swap_in(staging: Path, folder: Path) -> None:
    retired = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    if folder.exists():
        folder.rename(retired)
    staging.rename(folder)
    shutil.rmtree(retired, ignore_errors=True)


def _remove_dead_copies(folder: Path) -> None:
    """Staging and retired copies whose writer process no longer runs (killed mid-save)."""
    for stale in folder.parent.glob(f".{folder.name}.*-*"):
        owner = stale.name.rsplit("-", 1)[-1]
        if owner.isdigit() and not _process_alive(int(owner)):
            shutil.rmtree(stale, ignore_errors=True)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
