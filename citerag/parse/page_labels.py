"""Each page's printed number: the PDF's page labels, else the number printed in its header or
footer where the pages agree on one offset from the sheet number.

Reports and manuals number their pages after a cover and a table of contents, so "page 28" of a
question is often sheet 29. A PDF's own labels (`/PageLabels`: "i", "ii", "1", "2", ...) are
taken as they are. Without them, a bare number alone on a margin line ("28", "- 28 -",
"Page 28") is read on each page; when most of the pages that print one agree on `number - sheet`,
every page from the first sheet that offset makes 1 gets `sheet + offset`, and earlier sheets
(the cover, the contents) get none.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence

import pymupdf

MARGIN_BAND = 0.1  # top/bottom fraction of the page where a printed number is looked for
MIN_AGREEING = 3  # pages that must print a number at one offset
AGREEING_SHARE = 0.6  # of the pages printing a margin number
PRINTED_NUMBER = re.compile(r"^(?:page\s+)?[-–—(\[]?\s*(\d{1,4})\s*[-–—)\]]?$", re.IGNORECASE)


def pdf_labels(doc: pymupdf.Document) -> list[str | None]:
    """The PDF's page labels, one per sheet (None for a sheet without one), or all None."""
    if not doc.get_page_labels():
        return [None] * doc.page_count
    labels = [page.get_label() for page in doc.pages()]
    return [label or None for label in labels]


def printed_number(lines: Sequence[tuple[str, float, float]], page_height: float) -> int | None:
    """The number printed alone on a margin line of the page; `lines` are (text, y0, y1)."""
    band = page_height * MARGIN_BAND
    found = [
        int(match.group(1))
        for text, y0, y1 in lines
        if (y1 <= band or y0 >= page_height - band)
        and (match := PRINTED_NUMBER.match(" ".join(text.split())))
    ]
    return found[-1] if len(set(found)) == 1 else None


def offset_labels(printed: Sequence[int | None]) -> list[str | None]:
    """Labels from the numbers the sheets print (index 0 is sheet 1), when one offset holds."""
    offsets = Counter(n - sheet for sheet, n in enumerate(printed, start=1) if n is not None)
    if not offsets:
        return [None] * len(printed)
    offset, agreeing = offsets.most_common(1)[0]
    if offset == 0 or agreeing < MIN_AGREEING or agreeing < AGREEING_SHARE * offsets.total():
        return [None] * len(printed)  # no labels, or labels that say what the sheet says
    return [
        str(sheet + offset) if sheet + offset >= 1 else None for sheet in range(1, len(printed) + 1)
    ]


def page_labels(
    doc: pymupdf.Document, margin_lines: Sequence[Sequence[tuple[str, float, float]]]
) -> list[str | None]:
    """One label per sheet: the PDF's labels, else the offset the printed numbers agree on."""
    labels = pdf_labels(doc)
    if any(labels):
        return labels
    printed = [
        printed_number(lines, page.rect.height)
        for lines, page in zip(margin_lines, doc.pages(), strict=True)
    ]
    return offset_labels(printed)
