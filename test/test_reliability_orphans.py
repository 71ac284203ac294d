"""A real `main.py ingest` killed with SIGKILL leaves no process behind (issue 28): its background
parse process (and the resource tracker that process keeps alive) used to wait on its pipe for
ever, about 220 MB each time. Both end within seconds of their parent, on Linux through the
kernel (PR_SET_PDEATHSIG) and everywhere through the worker's own watch of its parent, which the
second test exercises alone (it is what macOS relies on)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import PROJECT_DIR, long_pdf

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and parent death are POSIX"),
]
GONE_WITHIN_S = 10.0

try:
    import psutil
except ImportError:  # read /proc instead (Linux)
    psutil = None


def process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process this user can see."""
    if psutil is not None:
        table = {}
        for process in psutil.process_iter(["ppid", "cmdline"]):
            table[process.pid] = (
                process.info["ppid"] or 0,
                " ".join(process.info["cmdline"] or []),
            )
        return table
    if not Path("/proc/self/stat").exists():
        pytest.skip("neither psutil nor /proc is here to list processes")
    table = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue  # ended meanwhile
        table[int(entry.name)] = (int(stat.rsplit(")", 1)[1].split()[1]), cmdline.strip())
    return table


def descendants(root: int) -> dict[int, str]:
    """Every process below `root`: pid -> command line."""
    table = process_table()
    found: dict[int, str] = {}
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, cmdline) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = cmdline
                frontier.append(pid)
    return found


def running(pid: int) -> bool:
    """Alive and not a zombie (an ended child its new parent has not reaped yet)."""
    if psutil is not None:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in {"Z", "X"}


def left_after(pids: dict[int, str], seconds: float) -> dict[int, str]:
    deadline = time.monotonic() + seconds
    while True:
        left = {pid: cmd for pid, cmd in pids.items() if running(pid)}
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.1)


@pytest.fixture
def reaper() -> Iterator[list[int]]:
    """Pids to SIGKILL after the test whatever happened (the processes this test made)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        if running(pid):
            os.kill(pid, signal.SIGKILL)


def clean_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"MILVUS_URI", "MONGODB_URI"}}
    return {**env, "PYTHONPATH": str(PROJECT_DIR), **extra}


def test_a_killed_ingest_leaves_no_process_of_it_behind(tmp_path: Path, reaper: list[int]) -> None:
    shelf = tmp_path / "shelf"
    shelf.mkdir()
    for number in range(8):  # enough that the run is still parsing ahead when it is killed
        long_pdf(shelf / f"filing{number}.pdf", pages=30)
    ingest = subprocess.Popen(
        [sys.executable, str(PROJECT_DIR / "main.py"), "ingest", str(shelf), "--collection", "k"],
        cwd=tmp_path,
        env=clean_env(RAG_STORAGE_DIR=str(tmp_path / "storage")),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    reaper.append(ingest.pid)
    deadline = time.monotonic() + 300
    below: dict[int, str] = {}
    while not any("spawn_main" in cmd for cmd in below.values()):
        assert ingest.poll() is None, "the ingest ended before its parse process was seen"
        assert time.monotonic() < deadline, f"no background parse process appeared: {below}"
        time.sleep(0.1)
        below = descendants(ingest.pid)
    time.sleep(0.5)  # the parse process at work
    below = descendants(ingest.pid)
    reaper.extend(below)
    assert any("resource_tracker" in cmd for cmd in below.values()), below

    os.kill(ingest.pid, signal.SIGKILL)
    ingest.wait(timeout=30)
    assert left_after(below, GONE_WITHIN_S) == {}


WATCHED_POOL = textwrap.dedent(
    """
    import multiprocessing, os, time
    from concurrent.futures import ProcessPoolExecutor

    from citerag.ingest.prefetch import end_with_parent

    if __name__ == "__main__":
        pool = ProcessPoolExecutor(
            max_workers=1,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=end_with_parent,
            initargs=(os.getpid(), False),  # no kernel signal: the watch alone, as on macOS
        )
        print(pool.submit(os.getpid).result(), flush=True)
        time.sleep(600)
    """
)


def test_the_workers_own_watch_ends_it_when_its_parent_is_killed(
    tmp_path: Path, reaper: list[int]
) -> None:
    script = tmp_path / "pool.py"
    script.write_text(WATCHED_POOL)
    parent = subprocess.Popen(
        [sys.executable, str(script)],
        cwd=PROJECT_DIR,
        env=clean_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    reaper.append(parent.pid)
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    below = descendants(parent.pid)
    reaper.extend(below)
    assert worker in below and running(worker)
    os.kill(parent.pid, signal.SIGKILL)
    parent.wait(timeout=30)
    assert left_after(below, GONE_WITHIN_S) == {}
