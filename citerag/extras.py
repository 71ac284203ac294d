"""Optional heavy dependencies, installed as the package's extras and imported where used.

`pip install 'citerag[colbert]'` (and `[gliner]`, `[langextract]`, `[llms]`, `[mongo]`) adds
one; `require` is called before the first import of each and, when it is missing, says in one
sentence which extra installs it.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from citerag.errors import ConfigError


class MissingExtra(ConfigError):
    """The configuration needs an optional dependency that is not installed."""


def require(module: str, extra: str, what: str) -> ModuleType:
    """`module` imported, or MissingExtra naming `extra` when it (or its parent) is absent.

    An ImportError from inside an installed module (a broken install) is not hidden."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        missing = error.name or ""
        if missing and not (module == missing or module.startswith(f"{missing}.")):
            raise
        raise MissingExtra(f"{what} is not installed: pip install 'citerag[{extra}]'") from None
