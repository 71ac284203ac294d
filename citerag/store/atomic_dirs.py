"""Files and folders replaced and removed by rename, so a process killed mid-write leaves
nothing visible.

Writers stage under `.<name>.tmp-<pid>` and removers rename to `.<name>.old-<pid>` before
deleting; readers skip names that start with a dot, and copies whose writer no longer runs are
deleted by the next writer.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from citerag.types import JSONValue


def write_json_atomically(path: Path, data: JSONValue) -> None:
    """`data` as JSON at `path`: readers see the old file or the whole new one, never a part."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, ensure_ascii=False)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def swap_in(staging: Path, folder: Path) -> None:
    """Put the whole `staging` folder where `folder` is, replacing it."""
    retired = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    shutil.rmtree(retired, ignore_errors=True)
    if folder.exists():
        folder.rename(retired)
    try:
        staging.rename(folder)
    except OSError:  # another process put its own copy there first
        shutil.rmtree(staging, ignore_errors=True)
    shutil.rmtree(retired, ignore_errors=True)


def retire(folder: Path) -> None:
    """Remove `folder`: hidden at once by a rename, then deleted."""
    retired = folder.with_name(f".{folder.name}.old-{os.getpid()}")
    shutil.rmtree(retired, ignore_errors=True)
    try:
        folder.rename(retired)
    except FileNotFoundError:
        return
    shutil.rmtree(retired, ignore_errors=True)


def remove_dead_copies(parent: Path) -> None:
    """Staging and retired copies in `parent` whose process no longer runs (killed mid-write)."""
    for stale in parent.glob(".*.*-*"):
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
