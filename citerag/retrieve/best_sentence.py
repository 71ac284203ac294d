"""The candidates' best sentences: each chunk scored by its one sentence closest to the question.

A chunk's vector is the mean of its sentences' vectors; on a page of short items (steps, table
rows, specifications) that mean matches no question, while one of its sentences does. A sentence
printed on many pages (a running header or footer, a figure's source line such as "Pew Research
Center's Internet Project July 18-September 30, 2013 tracking survey.") is the best sentence of
every chunk that prints it, so it ties them all and the ranking falls back on the order the
candidates came in. Such a sentence is skipped: one found on more than `MAX_SHARED_PAGES` of the
candidates' pages tells them apart no better than nothing. Repeats are found by their vectors,
identical for identical text since ingest encodes each distinct sentence once
(`sentence_vectors=pooled` gives a sentence a vector of its page, so there nothing is skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np

# Two: the overlap of two chunks of one page, or a sentence quoted once elsewhere, is kept.
MAX_SHARED_PAGES = 2


def best_sentence_scores(
    vectors: Mapping[str, np.ndarray],
    page_of: Callable[[str], Hashable],
    query_vector: np.ndarray,
) -> dict[str, float]:
    """Chunk id -> the best cosine between the question and one of its own sentences (rows of
    `vectors`, normalized); a chunk whose every sentence is shared has no score."""
    keys: dict[str, list[bytes]] = {}
    pages: dict[bytes, set[Hashable]] = {}
    for chunk_id, rows in vectors.items():
        page = page_of(chunk_id)
        keys[chunk_id] = [row.tobytes() for row in rows]
        for key in keys[chunk_id]:
            pages.setdefault(key, set()).add(page)
    best: dict[str, float] = {}
    for chunk_id, rows in vectors.items():
        own = [
            score
            for score, key in zip((rows @ query_vector).tolist(), keys[chunk_id], strict=True)
            if len(pages[key]) <= MAX_SHARED_PAGES
        ]
        if own:
            best[chunk_id] = max(own)
    return best
