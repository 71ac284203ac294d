"""Document names as a reader sees them: a file's name made safe to store, print and show.

A document is stored, listed and cited under its file name. Two kinds of name would mislead or
break that: bytes that are not UTF-8 (Linux gives any bytes; Python hands them over as lone
surrogates, which no UTF-8 writer, JSON reply or PyMuPDF path takes), and Unicode's
bidirectional controls, which reorder what follows them on screen (`invoice\u202egnp.pdf` shows
as `invoicefdp.png`). Each becomes U+FFFD, visible where the name is shown; so do control
characters. A plain name comes back unchanged.
"""

from __future__ import annotations

import os
import re

REPLACEMENT = "\ufffd"
# Embeddings, overrides, isolates and marks (LRM, RLM, ALM): what reorders or hides text.
_BIDI_CONTROLS = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_UNSAFE = re.compile(f"[\\x00-\\x1f\\x7f-\\x9f{_BIDI_CONTROLS}\\ud800-\\udfff]")


def display_name(name: str | bytes) -> str:
    """`name` (a file name as the OS gave it, str or bytes) as a document is named: undecodable
    bytes, bidirectional controls and control characters each replaced by U+FFFD."""
    raw = name if isinstance(name, bytes) else _os_bytes(name)
    text = raw.decode("utf-8", errors="replace") if raw is not None else str(name)
    return _UNSAFE.sub(REPLACEMENT, text)


def _os_bytes(name: str) -> bytes | None:
    """The bytes the OS holds for a name Python decoded with surrogateescape; None when the
    name holds surrogates that escape no byte (then each is replaced as it is)."""
    try:
        return os.fsencode(name)
    except UnicodeError:
        return None
