"""`.env` at start-up: keys and settings kept in a file, never overriding the environment; the
entry points (main.py, rag_factory.py) set what it returns.

The file is the current directory's `.env`, else the project's (next to `main.py`). A variable
already set in the environment keeps its value; a line that is not `KEY=VALUE` stops start-up
with one sentence naming the line, so a typo never silently drops a key.
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from pathlib import Path

from dotenv import dotenv_values
from dotenv.parser import parse_stream

from citerag.errors import ConfigError

ENV_FILE = ".env"
PROJECT_ROOT = Path(__file__).resolve().parent.parent


def find_env_file(cwd: Path | None = None) -> Path | None:
    """The `.env` start-up reads: the current directory's, else the project's; None if neither."""
    for folder in (cwd or Path.cwd(), PROJECT_ROOT):
        candidate = folder / ENV_FILE
        if candidate.is_file():
            return candidate
    return None


def env_file_variables(
    path: Path | None = None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of `path` (default: `find_env_file()`) that `environ` (default: the
    process's) lacks, for the entry point to set. A ConfigError names the first line that is not
    `KEY=VALUE`."""
    path = path if path is not None else find_env_file()
    environ = os.environ if environ is None else environ
    if path is None:
        return {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ConfigError(f"{path} cannot be read ({error}); fix or remove it.") from None
    for binding in parse_stream(io.StringIO(text)):
        if binding.error:
            raise ConfigError(
                f"{path} line {binding.original.line} is not KEY=VALUE "
                f"({binding.original.string.strip()[:40]!r}); fix or remove that line."
            )
    return {
        key: value
        for key, value in dotenv_values(path, interpolate=True).items()
        if key not in environ and value is not None
    }
