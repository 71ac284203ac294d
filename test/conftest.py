"""Shared fixtures. Unit tests cannot reach the network: only loopback connections are allowed."""

from __future__ import annotations

import importlib.util
import os
import socket
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tree_collection import FourCollection

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_real_connect = socket.socket.connect


def _guarded_connect(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if self.family == socket.AF_UNIX or host in _LOOPBACK:
        return _real_connect(self, address)  # type: ignore[arg-type]
    raise RuntimeError(f"unit tests must not reach the network (tried {address!r})")


@pytest.fixture(autouse=True)
def _block_network(request: pytest.FixtureRequest) -> Iterator[None]:
    if request.node.get_closest_marker("integration"):
        yield
        return
    socket.socket.connect = _guarded_connect  # type: ignore[method-assign]
    try:
        yield
    finally:
        socket.socket.connect = _real_connect  # type: ignore[method-assign]


@pytest.fixture(scope="session")
def milvus_server_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """One real Milvus standalone server (milvus==2.3.5) for the session, on free loopback ports.

    MILVUS_TEST_URI names an existing server instead (its collections are dropped by the tests).
    """
    from devservers import start_milvus

    existing = os.environ.get("MILVUS_TEST_URI", "")
    if existing:
        yield existing
        return
    if importlib.util.find_spec("milvus") is None:
        pytest.skip("milvus==2.3.5 is not installed (setup.sh installs it on Linux x86_64)")
    server = start_milvus(tmp_path_factory.mktemp("milvus_server"))
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture(scope="session")
def mongo_wire_uri(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """MONGODB_URI when set (a real mongod), else nx-27017 started for the session."""
    from devservers import start_mongo_wire

    existing = os.environ.get("MONGODB_URI", "")
    if existing:
        yield existing
        return
    if importlib.util.find_spec("nx_27017") is None:
        pytest.skip("nx-27017 is not installed (setup.sh installs it)")
    server = start_mongo_wire(tmp_path_factory.mktemp("mongo_wire"))
    try:
        yield server.uri
    finally:
        server.stop()


@pytest.fixture(scope="session")
def four_collection(tmp_path_factory: pytest.TempPathFactory) -> FourCollection:
    """The four shared PDFs ingested once, with no LLM, for the tree-collection tests."""
    from tree_collection import ingest_four

    return ingest_four(tmp_path_factory.mktemp("four") / "storage")


@pytest.fixture
def four(four_collection: FourCollection, monkeypatch: pytest.MonkeyPatch) -> FourCollection:
    """The four-PDF collection, which the CLI reads for this test (with no LLM configured)."""
    from tree_collection import use_storage

    use_storage(monkeypatch, four_collection.storage)
    return four_collection
