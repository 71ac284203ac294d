"""The docstore contract's part on sentence and page-head vectors: every encoding round-trips
as float32 within its precision, rows written under another encoding (or before encodings were
named) keep reading, and the compact encodings store fewer bytes.

`DocStoreContract` (citerag.testing.docstore) includes it. A backend's test class gives, beside
its `docstore` fixture:
- `reopen`: a fixture returning a function that opens another handle on the same storage as
  `docstore`, writing new vectors in the encoding given (the handles are closed after);
- `put_unnamed_vectors(docstore, collection, vectors)`: rows as they were written before rows
  named their encoding (float16 bytes, no name);
- `stored_vector_bytes(docstore, collection)`: the bytes the backend holds for the collection's
  vector blobs.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from citerag.settings.choices import SentenceVectorEncoding
from citerag.store.base import DocStore
from citerag.store.vector_codec import ENCODINGS, INT8_LEVELS, bytes_per_vector

Reopen = Callable[[SentenceVectorEncoding], DocStore]
DIM = 384


def unit_rows(rows: int, seed: int = 7) -> np.ndarray:
    """Rows like the embedder's: unit length, float32."""
    values = np.random.default_rng(seed).standard_normal((rows, DIM)).astype(np.float32)
    return values / np.linalg.norm(values, axis=1, keepdims=True)


def assert_close(got: np.ndarray, expected: np.ndarray, encoding: SentenceVectorEncoding) -> None:
    """Within the encoding's precision: float32 exact, float16 to 1e-3, int8 to half a step of
    the row's scale; and the cosine to the written row at least 0.999."""
    assert got.dtype == np.float32
    assert got.shape == expected.shape
    if encoding == "float32":
        np.testing.assert_array_equal(got, expected)
    elif encoding == "float16":
        np.testing.assert_allclose(got, expected, rtol=1e-3, atol=1e-3)
    else:
        half_step = np.abs(expected).max(axis=1, keepdims=True) / INT8_LEVELS / 2
        assert np.all(np.abs(got - expected) <= half_step * 1.001 + 1e-7)
    norms = np.linalg.norm(got, axis=1) * np.linalg.norm(expected, axis=1)
    nonzero = norms > 0
    cosines = (got * expected).sum(axis=1)[nonzero] / norms[nonzero]
    assert np.all(cosines >= 0.999)


class SentenceVectorContract:
    @pytest.mark.parametrize("encoding", ENCODINGS)
    def test_sentence_vectors_round_trip_in_every_encoding(
        self, docstore: DocStore, reopen: Reopen, encoding: SentenceVectorEncoding
    ) -> None:
        store = reopen(encoding)
        scaled = unit_rows(2, seed=3) * 5.0  # not unit length: the scale is per row
        vectors = {
            "d1-c0": unit_rows(3),
            "d1-c1": scaled,
            "d1-c2": np.zeros((2, DIM), np.float32),  # a zero row stays zero
            "d1-c3": np.zeros((0, DIM), np.float32),  # a chunk without sentences
        }
        store.put_sentence_vectors("main", vectors)
        got = store.get_sentence_vectors("main", [*vectors, "unknown"])
        assert set(got) == set(vectors)
        for chunk_id, expected in vectors.items():
            assert_close(got[chunk_id], expected, encoding)
        assert not got["d1-c2"].any()

    def test_a_store_reads_rows_written_under_another_encoding(
        self, docstore: DocStore, reopen: Reopen
    ) -> None:
        written = {encoding: unit_rows(2, seed=i) for i, encoding in enumerate(ENCODINGS)}
        for encoding, matrix in written.items():
            reopen(encoding).put_sentence_vectors("main", {f"c-{encoding}": matrix})
        for reader in ENCODINGS:
            got = reopen(reader).get_sentence_vectors("main", [f"c-{e}" for e in ENCODINGS])
            for encoding, matrix in written.items():
                assert_close(got[f"c-{encoding}"], matrix, encoding)

    def test_rows_written_before_encodings_were_named_read_as_float16(
        self, docstore: DocStore, reopen: Reopen
    ) -> None:
        old = unit_rows(3)
        self.put_unnamed_vectors(docstore, "main", {"d1-c0": old})
        for reader in ENCODINGS:
            got = reopen(reader).get_sentence_vectors("main", ["d1-c0"])
            assert_close(got["d1-c0"], old, "float16")
        # Rewritten under the current encoding, the row reads as that one.
        docstore.put_sentence_vectors("main", {"d1-c0": old})
        assert docstore.get_sentence_vectors("main", ["d1-c0"])["d1-c0"].shape == old.shape

    def test_int8_stores_about_half_the_bytes_of_float16_per_vector(
        self, docstore: DocStore, reopen: Reopen
    ) -> None:
        rows = 50
        stored = {}
        for encoding in ENCODINGS:
            reopen(encoding).put_sentence_vectors(encoding, {"c0": unit_rows(rows)})
            stored[encoding] = self.stored_vector_bytes(docstore, encoding) / rows
            assert stored[encoding] == bytes_per_vector(DIM, encoding)
        assert stored == {"int8": DIM + 4, "float16": 2 * DIM, "float32": 4 * DIM}

    def put_unnamed_vectors(
        self, docstore: DocStore, collection: str, vectors: dict[str, np.ndarray]
    ) -> None:
        raise NotImplementedError("the backend's test class writes rows as they were before")

    def stored_vector_bytes(self, docstore: DocStore, collection: str) -> int:
        raise NotImplementedError("the backend's test class reads its own storage")
