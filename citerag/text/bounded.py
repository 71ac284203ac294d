"""Files a user names that could be large or nested without end (history files, tree files),
read within stated limits: each problem is one InputError sentence, never a traceback.

A path is read as a stream, so a FIFO or `/dev/stdin` (`--history <(...)`) is read like a file;
JSON is measured for nesting before it is parsed, since Python's reader and every recursive
check after it fail with a RecursionError somewhere under a thousand levels.
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from pathlib import Path
from typing import Any

from citerag.errors import InputError

_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def read_bounded(path: Path, max_bytes: int, what: str) -> bytes:
    """The bytes of `path` (a file, a FIFO, a device such as /dev/stdin), or an InputError
    naming `what` ("History file") when it is missing, a folder, unreadable or over
    `max_bytes`."""
    if not path.exists():
        raise InputError(f"{what} {path} does not exist; check the path.")
    if path.is_dir():
        raise InputError(f"{what} {path} is a folder; give the path of a file.")
    try:
        with path.open("rb") as stream:
            data = stream.read(max_bytes + 1)
    except OSError as error:
        raise InputError(
            f"{what} {path} cannot be read ({error.strerror or error}); check its permissions."
        ) from None
    if len(data) > max_bytes:
        raise InputError(
            f"{what} {path} is larger than {_size(max_bytes)}, the most this engine reads; "
            "give a smaller file."
        )
    return data


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of JSON `text` nest (brackets inside strings left out;
    0 for a bare value)."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    steps = (1 if char in "[{" else -1 for char in brackets)
    return max(accumulate(steps), default=0)


def load_json(text: str, max_depth: int, what: str, deepest: str = "") -> Any:
    """`text` parsed as JSON, or an InputError naming `what` ("History file h.json"): not JSON,
    nested deeper than `max_depth` (`deepest` says what that depth holds), or a number too long
    to read."""
    depth = json_depth(text)
    if depth > max_depth:
        holds = f" ({deepest})" if deepest else ""
        raise InputError(
            f"{what} nests arrays and objects {depth:,} levels deep; it may nest {max_depth}"
            f"{holds}, so give a flatter file."
        )
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise InputError(f"{what} is not valid JSON ({error.msg}).") from None
    except (ValueError, RecursionError) as error:  # a 5,000-digit number, say
        reason = str(error).split(";")[0] or type(error).__name__
        raise InputError(f"{what} cannot be read as JSON ({reason}).") from None


def _size(count: int) -> str:
    return f"{count / 2**20:g} MB" if count >= 2**20 else f"{count:,} bytes"
