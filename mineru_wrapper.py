"""Runs MinerU in its own environment (`.mineru_env`) and maps its output to a ParsedDocument.

The machinery lives in `citerag.parse.mineru`; this file is the user's handle on it:

    from mineru_wrapper import MineruParser, mineru_available
    if mineru_available():
        document = MineruParser(tier="flash").parse(Path("paper.pdf"), doc_id="...")
"""

from citerag.parse.mineru import (
    DEFAULT_ENV_DIR,
    TIERS,
    MineruParser,
    check_tier,
    middle_json_to_document,
    mineru_available,
)

__all__ = [
    "DEFAULT_ENV_DIR",
    "TIERS",
    "MineruParser",
    "check_tier",
    "middle_json_to_document",
    "mineru_available",
]
