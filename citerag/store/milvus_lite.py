"""Milvus Lite's process-level side: who holds a Lite folder, and its log noise.

pymilvus runs Milvus Lite in process, one server per folder; `MilvusIndex` counts its users here
and asks whether another process holds a folder's lock when opening it fails.
"""

from __future__ import annotations

import fcntl
import logging
import os
import threading
from pathlib import Path

from milvus_lite.server_manager import server_manager_instance


class _UnimplementedLiteCall(logging.Filter):
    """pymilvus 3 asks Milvus Lite's in-process gRPC server for AllocTimestamp when it creates a
    collection; Lite does not implement it and the call's failure is harmless, but grpc logs it
    with a traceback that would greet every first ingest."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Method not implemented" not in record.getMessage()


logging.getLogger("grpc._server").addFilter(_UnimplementedLiteCall())


class _LiteStartFailure(logging.Filter):
    """Milvus Lite logs a 20-line traceback when its folder is locked or cannot be opened; the
    index then raises BackendUnavailable with one sentence that says what to do instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to start MilvusLite server" not in record.getMessage()


logging.getLogger("milvus_lite.server_manager").addFilter(_LiteStartFailure())


class LiteUsers:
    """Counts open indexes per Milvus Lite folder in this process.

    pymilvus starts one in-process Lite server per folder and never stops it, so the folder stays
    locked against other processes until exit. The last index to close stops it.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[str, int] = {}

    def acquire(self, uri: str) -> None:
        with self._lock:
            key = os.path.abspath(uri)
            self._counts[key] = self._counts.get(key, 0) + 1

    def release(self, uri: str) -> None:
        key = os.path.abspath(uri)
        with self._lock:
            remaining = self._counts.get(key, 0) - 1
            if remaining > 0:
                self._counts[key] = remaining
                return
            self._counts.pop(key, None)
        server_manager_instance.release_server(uri)


lite_users = LiteUsers()


def locked_by_another_process(folder: Path) -> bool:
    """Whether another process holds Milvus Lite's lock (pymilvus only says "open failed")."""
    lock_file = folder.expanduser() / "LOCK"
    if not lock_file.exists():
        return False
    fd = os.open(lock_file, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing the descriptor releases a lock taken here
    return False
