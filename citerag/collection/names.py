"""Which collection names are allowed (they become Milvus collection and folder names)."""

from __future__ import annotations

import re

from citerag.errors import InputError

_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,63}$")


def check_collection_name(name: str) -> str:
    if not _COLLECTION_NAME.match(name):
        raise InputError(
            f"Collection name {name!r} is not allowed; use up to 64 letters, digits, '_' or '-'."
        )
    return name
