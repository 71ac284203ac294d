"""Storage backends chosen by configuration: a URI switches to a server, nothing else changes."""

from __future__ import annotations

from citerag.errors import ConfigError
from citerag.settings import Settings
from citerag.store.base import DocStore, VectorIndex
from citerag.store.bm25_files import BM25FilesIndex
from citerag.store.keywords import KeywordIndex
from citerag.store.milvus_index import MilvusIndex, is_server_uri
from citerag.store.mongo_docstore import MongoDocStore
from citerag.store.sqlite_docstore import SQLiteDocStore


def open_docstore(settings: Settings) -> DocStore:
    """MongoDB when `mongodb_uri` is set, else the SQLite file in the storage folder."""
    if settings.mongodb_uri:
        return MongoDocStore(settings.mongodb_uri, settings.mongodb_database)
    settings.storage_dir.mkdir(parents=True, exist_ok=True)
    return SQLiteDocStore(settings.sqlite_path)


def open_vector_index(settings: Settings) -> VectorIndex:
    """The Milvus server at `milvus_uri` when set, else Milvus Lite in the storage folder."""
    uri = settings.milvus_uri or str(settings.milvus_lite_path)
    if not is_server_uri(uri):
        settings.storage_dir.mkdir(parents=True, exist_ok=True)
    return MilvusIndex(uri, settings.milvus_token)


def open_keyword_index(settings: Settings, vectors: VectorIndex | None) -> KeywordIndex:
    """`keyword_backend`: "bm25s" (files under the storage folder), or "auto", which is bm25s
    until the Milvus BM25 backend is chosen from the version the deployment reports."""
    if settings.keyword_backend == "milvus":
        raise ConfigError(
            "keyword_backend 'milvus' needs the Milvus BM25 backend, which this build lacks; "
            "set it to 'bm25s' or 'auto' in config.py."
        )
    return BM25FilesIndex(settings.keywords_dir)
