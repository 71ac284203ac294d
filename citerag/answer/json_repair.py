"""JSON out of an LLM reply, repairing the usual breakage (fences, prose, commas, quotes)."""

from __future__ import annotations

import json
import re
from typing import Any


def loads_repaired(reply: str) -> Any:
    """JSON from an LLM reply: code fences, prose around it, trailing commas, single quotes.
    The first object or array that parses wins; None when none does."""
    text = re.sub(r"```(?:json)?", "", reply).strip()
    for start in sorted(i for i in (text.find("{"), text.find("[")) if i >= 0):
        end = text.rfind("}" if text[start] == "{" else "]")
        if end > start:
            parsed = _parse_lenient(text[start : end + 1])
            if parsed is not None:
                return parsed
    return None


def _parse_lenient(body: str) -> Any:
    for candidate in (body, re.sub(r",\s*([}\]])", r"\1", body)):
        for variant in (candidate, candidate.replace("'", '"')):
            try:
                return json.loads(variant)
            except (ValueError, RecursionError):  # also a 5000-digit number, deep nesting
                continue
    return None
