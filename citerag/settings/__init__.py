"""Typed settings: every default, every choice list and every environment variable's name,
defined once, on the field of the group that uses it (`groups.py`).

`config.py` holds only what a project or an article changes; environment variables take
precedence over it (`environment.py`).
"""

from citerag.settings.choices import (
    EMBEDDING_BACKENDS,
    KEYWORD_BACKENDS,
    LLM_PROVIDERS,
    METADATA,
    MINERU_TIERS,
    PARSERS,
    RERANKERS,
    require_choice,
)
from citerag.settings.environment import (
    KNOWN_VARIABLES,
    VARIABLES,
    build_settings,
    environment_values,
    settings_from_config,
    unknown_variable_warnings,
)
from citerag.settings.groups import (
    DEFAULT_OCR_LANGUAGES,
    EVIDENCE_SETTINGS,
    EmbeddingSettings,
    EvidenceWeights,
    IngestSettings,
    LlmSettings,
    ParseSettings,
    RetrievalSettings,
    ServerSettings,
    StorageSettings,
)
from citerag.settings.model import GROUPS, Settings
from citerag.settings.uris import (
    MilvusScheme,
    check_milvus_environment,
    checked_milvus_uri,
    checked_mongodb_uri,
    shown_uri,
)

__all__ = [
    "DEFAULT_OCR_LANGUAGES",
    "EMBEDDING_BACKENDS",
    "EVIDENCE_SETTINGS",
    "GROUPS",
    "KEYWORD_BACKENDS",
    "KNOWN_VARIABLES",
    "LLM_PROVIDERS",
    "METADATA",
    "MINERU_TIERS",
    "PARSERS",
    "RERANKERS",
    "VARIABLES",
    "EmbeddingSettings",
    "EvidenceWeights",
    "IngestSettings",
    "LlmSettings",
    "MilvusScheme",
    "ParseSettings",
    "RetrievalSettings",
    "ServerSettings",
    "Settings",
    "StorageSettings",
    "build_settings",
    "check_milvus_environment",
    "checked_milvus_uri",
    "checked_mongodb_uri",
    "environment_values",
    "require_choice",
    "settings_from_config",
    "shown_uri",
    "unknown_variable_warnings",
]
