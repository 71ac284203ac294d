"""Shared fixtures. Unit tests cannot reach the network: only loopback connections are allowed."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator

import pytest

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
