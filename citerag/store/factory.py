"""Storage backends chosen by configuration: a URI switches to a server, nothing else changes."""

from __future__ import annotations

from citerag.errors import ConfigError
from citerag.extras import require
from citerag.settings import MilvusScheme, StorageSettings
from citerag.store.base import DocStore, VectorIndex
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordIndex
from citerag.store.milvus_index import MilvusIndex
from citerag.store.milvus_keywords import MilvusKeywordIndex
from citerag.store.sqlite_docstore import SQLiteDocStore


def open_docstore(settings: StorageSettings) -> DocStore:
    """MongoDB when `mongodb_uri` is set, else the SQLite file in the storage folder."""
    if settings.mongodb_uri:
        require("pymongo", "mongo", "MongoDB support (pymongo)")
        from citerag.store.mongo_docstore import MongoDocStore  # imports pymongo

        return MongoDocStore(
            settings.mongodb_uri, settings.mongodb_database, settings.sentence_vector_encoding
        )
    settings.storage_dir.mkdir(parents=True, exist_ok=True)
    return SQLiteDocStore(settings.sqlite_path, settings.sentence_vector_encoding)


def open_vector_index(settings: StorageSettings) -> VectorIndex:
    """The Milvus server at `milvus_uri` when set, else Milvus Lite in the storage folder."""
    uri = settings.milvus_uri or str(settings.milvus_lite_path)
    if not MilvusScheme.of(uri).is_server:
        settings.storage_dir.mkdir(parents=True, exist_ok=True)
    return MilvusIndex(
        uri, settings.milvus_token, settings.milvus_strong_window_s, settings.milvus_index_type
    )


def open_keyword_index(settings: StorageSettings, vectors: VectorIndex | None) -> KeywordIndex:
    """`keyword_backend`: "bm25-files" (the project's BM25 in files under the storage folder),
    "milvus" (Milvus's BM25 function in the vector index's deployment, refused on servers before
    2.5) or "auto": Milvus BM25 on a server that reports it, so every `serve` process searches
    one keyword index, else the files (on Milvus Lite they ranked better and ~100x faster:
    benchmarks/results/keywords.md)."""
    choice = settings.keyword_backend
    if choice == "bm25-files" or (choice == "auto" and not _server_with_bm25(vectors)):
        return BM25FilesIndex(settings.keywords_dir, settings.keyword_cache_mib)
    if not isinstance(vectors, MilvusIndex):
        raise ConfigError(
            "keyword_backend 'milvus' keeps keywords in the Milvus vector index, which is not "
            "open here; set keyword_backend to 'bm25-files' or 'auto' in config.py."
        )
    return MilvusKeywordIndex(vectors)


def _server_with_bm25(vectors: VectorIndex | None) -> bool:
    return (
        isinstance(vectors, MilvusIndex)
        and vectors.is_server
        and vectors.capabilities.bm25_function
    )
