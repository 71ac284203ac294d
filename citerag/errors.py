"""Errors a user can act on. Each message is one sentence: what happened and what to do."""


class RagError(Exception):
    """Base for every error the CLI reports as one line with a non-zero exit; a subclass names
    its exit code in its class line (`exit_code=`), or keeps its parent's."""

    exit_code = 1

    def __init_subclass__(cls, exit_code: int | None = None) -> None:
        super().__init_subclass__()
        if exit_code is not None:
            cls.exit_code = exit_code


class InputError(RagError, exit_code=2):
    """The document or question given by the user cannot be used."""


class ConfigError(RagError, exit_code=3):
    """The configuration (config.py or environment) is malformed or incomplete."""


class BackendUnavailable(RagError, exit_code=4):
    """A configured server (Milvus, MongoDB, an LLM endpoint) cannot be reached."""


class ModelUnavailable(RagError, exit_code=5):
    """Weights a configured component needs are not on this machine."""


class LLMResponseError(RagError, exit_code=6):
    """The LLM answered with something that cannot be used (e.g. broken JSON)."""
