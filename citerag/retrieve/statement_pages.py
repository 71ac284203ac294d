"""Financial statement pages: found by their printed title, used as evidence for statement words.

A statement (income statement, balance sheet, cash flow statement, ...) is a page that is almost
all table under a title line such as "CONSOLIDATED STATEMENTS OF CASH FLOWS" or "BALANCE SHEETS
(In millions)". Those titles are fixed by US GAAP and IFRS practice, so they are recognised
across filers; a page counts only when a title is a whole line near its top and the page holds a
table, which keeps out notes and prose that merely mention a statement.
"""

from __future__ import annotations

import re

_HOLDERS = r"(?:stock|share)holders[’'`]?\s+(?:equity|deficit)"
_TITLE = (
    r"(?:consolidated\s+)?(?:"
    r"(?:income|operations|earnings|cash\s+flows?|comprehensive\s+(?:income|loss)|"
    + _HOLDERS
    + r")"
    r"\s+statements?"
    r"|statements?\s+of\s+(?:consolidated\s+)?(?:operations|income|earnings|cash\s+flows?"
    r"|comprehensive\s+(?:income|loss)|financial\s+(?:position|condition)|profit\s+or\s+loss"
    r"|changes\s+in\s+" + _HOLDERS + r"|" + _HOLDERS + r")"
    r"|balance\s+sheets?)"
)
_TITLE_LINE = re.compile(r"\s*" + _TITLE + r"\s*(?:\(.*)?", re.IGNORECASE)
LINES_SEARCHED = 4  # a company name or an "Item 8" line may come before the title


def has_statement_title(page_text: str) -> bool:
    """True when one of the page's first non-empty lines is a statement title."""
    lines = [line for line in page_text.splitlines() if line.strip()][:LINES_SEARCHED]
    return any(_TITLE_LINE.fullmatch(line) for line in lines)
