"""Settings from config.py and the environment, and the warnings for variables nobody reads.

Each variable's name is declared on its field (`validation_alias` in citerag/settings/groups.py);
the environment wins over config.py, and an empty variable counts as unset.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from difflib import get_close_matches
from types import ModuleType

from citerag.settings.model import GROUPS, Settings
from citerag.settings.uris import check_milvus_environment

# Setting name -> the environment variable that sets it, read off the fields.
VARIABLES: dict[str, str] = {
    name: variable for model in GROUPS.values() for name, variable in model.variables().items()
}
# Variables read besides the settings': by main.py, the LLM and embedding providers, the tests.
OTHER_VARIABLES = (
    "RAG_LOG_LEVEL",
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "GOOGLE_API_KEY",
    "GEMINI_API_KEY",
    "MILVUS_TEST_URI",
)
KNOWN_VARIABLES = frozenset([*VARIABLES.values(), *OTHER_VARIABLES])
_CLOSE_ENOUGH = 0.85  # difflib's ratio: MILVUS_URL 0.90, OPENAI_API_BASE 0.76 (the SDK's own)


def environment_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """Setting name -> value for the settings `environ` (default the process's) sets."""
    source = os.environ if environ is None else environ
    return {name: source[var] for name, var in VARIABLES.items() if source.get(var, "").strip()}


def settings_from_config(
    config: ModuleType, article: str | None = None, environ: Mapping[str, str] | None = None
) -> Settings:
    """The package defaults, changed by config.py (DEFAULT_RAG_SETTINGS, then the article's
    ARTICLE_RAG_OVERRIDES, then its upper-case constants named after a setting the
    environment may set, e.g. STORAGE_DIR) and by the environment."""
    values: dict[str, object] = dict(getattr(config, "DEFAULT_RAG_SETTINGS", {}))
    if article:
        values.update(getattr(config, "ARTICLE_RAG_OVERRIDES", {}).get(article, {}))
    for name in VARIABLES:
        constant = getattr(config, name.upper(), None)
        if constant is not None:
            values[name] = constant
    check_milvus_environment(environ)
    values.update(environment_values(environ))
    return build_settings(values)


def build_settings(values: Mapping[str, object]) -> Settings:
    """Settings from a mapping of (flat or group) names to values, or one ConfigError sentence."""
    return Settings(**values)


def unknown_variable_warnings(names: Iterable[str], source: str = ".env") -> list[str]:
    """A sentence for each name (set from `source`) that citerag does not read but that is
    close to one it reads (a misspelling, named with the nearest) or that starts with RAG_;
    other names belong to other programs and are left alone."""
    warnings = []
    for name in names:
        if name in KNOWN_VARIABLES:
            continue
        nearest = get_close_matches(name.upper(), KNOWN_VARIABLES, n=1, cutoff=_CLOSE_ENOUGH)
        if nearest:
            warnings.append(
                f"{name} (from {source}) is not a setting citerag reads and is ignored; did "
                f"you mean {nearest[0]}?"
            )
        elif name.upper().startswith("RAG_"):
            warnings.append(
                f"{name} (from {source}) is not a setting citerag reads and is ignored; the "
                "variables are listed in README.md (Configuration) and declared on the fields "
                "of citerag/settings/groups.py."
            )
    return warnings
