"""`Settings`: one run's settings, a frozen model of one group per component.

A setting is named as in config.py (`rrf_k`) and read from its group
(`settings.retrieval.rrf_k`); flat names given to `Settings(...)` or `with_overrides(...)`
go to the group that defines them, so config.py's flat dictionaries stay as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from citerag.errors import ConfigError
from citerag.settings.groups import (
    EmbeddingSettings,
    IngestSettings,
    LlmSettings,
    ParseSettings,
    RetrievalSettings,
    ServerSettings,
    SettingsGroup,
    StorageSettings,
    error_sentence,
)

GROUPS: dict[str, type[SettingsGroup]] = {
    "storage": StorageSettings,
    "parse": ParseSettings,
    "ingest": IngestSettings,
    "embedding": EmbeddingSettings,
    "retrieval": RetrievalSettings,
    "llm": LlmSettings,
    "server": ServerSettings,
}
# Setting name -> the group that defines it (names are unique across groups).
GROUP_OF: dict[str, str] = {
    name: group for group, model in GROUPS.items() for name in model.model_fields
}


class Settings(BaseModel):
    """One run's settings: defaults in the groups, changed by config.py and the environment
    (`settings_from_config`); building one never reads the environment itself."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    storage: StorageSettings = Field(default_factory=StorageSettings)
    parse: ParseSettings = Field(default_factory=ParseSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    retrieval: RetrievalSettings = Field(default_factory=RetrievalSettings)
    llm: LlmSettings = Field(default_factory=LlmSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)

    def __init__(self, **values: object) -> None:
        try:
            super().__init__(**values)
        except ValidationError as error:
            raise ConfigError(error_sentence(error.errors(), values)) from None

    @model_validator(mode="before")
    @classmethod
    def _into_groups(cls, values: Any) -> Any:
        return grouped(values) if isinstance(values, Mapping) else values

    def with_overrides(self, **changes: object) -> Settings:
        """A copy with `changes` (flat names or whole groups), checked like any settings."""
        current: dict[str, object] = {name: getattr(self, name) for name in GROUPS}
        return Settings(**current, **changes)


def grouped(values: Mapping[str, object]) -> dict[str, object]:
    """`values` with each flat setting moved into its group's values (a flat name wins over
    the same name in a group given whole); unknown names are left for the model to refuse."""
    result: dict[str, Any] = {}
    for key, value in values.items():
        if key in GROUPS and key not in result:
            result[key] = _fields(value)
        elif key in GROUPS:
            result[key] = {**_fields(value), **result[key]}
        elif key in GROUP_OF:
            group = GROUP_OF[key]
            result[group] = {**_fields(result.get(group, {})), key: value}
        else:
            result[key] = value
    return result


def _fields(group: object) -> Any:
    if isinstance(group, SettingsGroup):
        return group.values()
    return dict(group) if isinstance(group, Mapping) else group
