"""JSON out of an LLM reply: prose and code fences around it cut off, the rest repaired by
json-repair (trailing commas, single quotes, missing commas or closing brackets)."""

from __future__ import annotations

import re
from typing import Any

import json_repair

_FENCE = re.compile(r"```(?:json)?")


def loads_repaired(reply: str) -> Any:
    """The first object or array in the reply that parses once repaired; None when none does.
    A stretch holding two values ("[see below]: {...}") is not one value: the next one wins.
    A reply cut off before its closing brackets is closed."""
    text = _FENCE.sub("", reply).strip()
    for start in sorted(i for i in (text.find("{"), text.find("[")) if i >= 0):
        end = text.rfind("}" if text[start] == "{" else "]")
        # no closer after the start: a reply cut off by the token limit, closed by the repair
        parsed = _repaired(text[start : end + 1] if end > start else text[start:])
        if isinstance(parsed, dict | list):
            return parsed
    return None


def _repaired(body: str) -> Any:
    try:
        # strict: two top-level values or an empty object with text inside raise, not guess
        return json_repair.loads(body, strict=True)
    except (ValueError, RecursionError):  # also a 5000-digit number, deep nesting
        return None
