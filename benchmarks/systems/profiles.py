"""The domain words the benchmarks retrieve with.

Every benchmark that asks questions asks about the 10-Ks, alone or in a library that holds them
beside the essay, the eBook and MMLongBench's reports, so each gets the finance profile, as the
10-K articles of config.py do. Its words act only where a question uses filing terms and on
pages titled as financial statements, so the other documents' questions rank as they would
with no profile; the library's figures keep the measured 10-K behaviour.
"""

from __future__ import annotations

import extraction_schemas
from citerag.settings import Settings

FINANCE = extraction_schemas.get_schema("financial").vocabulary


def with_finance_words(settings: Settings) -> Settings:
    return settings.with_overrides(vocabulary=FINANCE)
