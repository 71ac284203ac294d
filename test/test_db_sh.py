"""`bash db.sh` without Docker: the embedded Milvus server and nx-27017 start, the configured
demo run answers against them (MILVUS_URI, MONGODB_URI), status shows them, stop_all stops them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import PROJECT_DIR

from devservers import free_ports

pytestmark = [pytest.mark.slow, pytest.mark.server]


def db_sh(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", str(PROJECT_DIR / "db.sh"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=PROJECT_DIR,
    )


def test_db_sh_without_docker_serves_the_configured_demo(tmp_path: Path) -> None:
    if shutil.which("bash") is None:
        pytest.skip("bash is needed")
    milvus_port, mongo_port = free_ports(2)
    env = {
        **os.environ,
        "DB_MODE": "embedded",
        "DB_DATA_DIR": str(tmp_path / "servers"),
        "MILVUS_PORT": str(milvus_port),
        "MONGO_PORT": str(mongo_port),
        "PYTHON": sys.executable,
    }
    started = db_sh(env, "start_all")
    try:
        assert started.returncode == 0, started.stderr
        assert "milvus (127.0.0.1:" in started.stdout and "is healthy" in started.stdout
        assert "mongodb (127.0.0.1:" in started.stdout
        assert "Attu needs Docker" in started.stdout
        assert db_sh(env, "start_all").returncode == 0  # a second start is a no-op
        status = db_sh(env, "status").stdout
        assert "milvus: running" in status and "mongodb: running" in status
        run_env = {
            **env,
            "MILVUS_URI": f"http://127.0.0.1:{milvus_port}",
            "MONGODB_URI": f"mongodb://127.0.0.1:{mongo_port}",
            "RAG_STORAGE_DIR": str(tmp_path / "storage"),
        }
        answered = subprocess.run(
            [sys.executable, "main.py"],
            capture_output=True,
            text=True,
            env=run_env,
            timeout=600,
            cwd=PROJECT_DIR,
        )
        assert answered.returncode == 0, answered.stderr[-2000:]
        assert "citerag_demo.pdf: ingested" in answered.stdout
        assert "[1]" in answered.stdout
        assert not (tmp_path / "storage" / "milvus.db").exists()  # the server held the vectors
        assert not (tmp_path / "storage" / "docstore.sqlite").exists()
    finally:
        stopped = db_sh(env, "stop_all")
    assert stopped.returncode == 0, stopped.stderr
    assert "milvus stopped" in stopped.stdout and "mongodb stopped" in stopped.stdout
    assert "milvus: stopped" in db_sh(env, "status").stdout


def test_db_sh_refuses_a_busy_port_in_one_line_and_starts_nothing(tmp_path: Path) -> None:
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        env = {
            **os.environ,
            "DB_MODE": "embedded",
            "DB_DATA_DIR": str(tmp_path / "servers"),
            "MILVUS_PORT": str(busy.getsockname()[1]),
            "PYTHON": sys.executable,
        }
        result = db_sh(env, "start_milvus")
    assert result.returncode != 0
    assert result.stderr.strip().count("\n") == 0 and "already in use" in result.stderr
    assert not (tmp_path / "servers" / "milvus.pid").exists()
    assert "milvus: stopped" in db_sh(env, "status").stdout
