"""Timing a system's ingest as a fresh process, the way a user starts it.

Both sides of a comparison are timed from outside: the process starts, imports, loads its model,
ingests and exits. With fresh caches the project's exported model graphs (under
`$XDG_CACHE_HOME/citerag`) are absent, as on a fresh clone; the libraries' own caches (the
tokenizer data LlamaIndex fetched once) are kept, since both sides read them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


class ProcessFailed(RuntimeError):
    pass


def base_environment(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment, offline, with `extra` on top."""
    return {**os.environ, **OFFLINE, **(extra or {})}


def fresh_cache_home(folder: Path) -> Path:
    """A cache home holding every cache of the user's except the project's own (links to the
    others), so the project exports its models again as on a fresh clone."""
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    folder.mkdir(parents=True, exist_ok=True)
    if home.is_dir():
        for entry in home.iterdir():
            link = folder / entry.name
            if entry.name != "citerag" and not link.exists():
                link.symlink_to(entry)
    return folder


def timed_run(command: Sequence[str], env: Mapping[str, str]) -> tuple[float, str]:
    """Seconds from start to exit of `command`, and its standard output."""
    started = time.perf_counter()
    done = subprocess.run(
        list(command), env=dict(env), cwd=PROJECT, capture_output=True, text=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise ProcessFailed(f"{' '.join(command[:4])} failed:\n{done.stderr[-3000:]}")
    return seconds, done.stdout


def python_module(module: str, *args: str) -> list[str]:
    """The command that runs `module` in a fresh interpreter of this environment."""
    return [sys.executable, "-m", module, *args]
