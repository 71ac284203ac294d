"""Errors a user can act on. Each message is one sentence: what happened and what to do."""


class RagError(Exception):
    """Base for every error the CLI reports as one line with a non-zero exit."""

    exit_code = 1


class InputError(RagError):
    """The document or question given by the user cannot be used."""

    exit_code = 2


class ConfigError(RagError):
    """The configuration (config.py or environment) is malformed or incomplete."""

    exit_code = 3


class BackendUnavailable(RagError):
    """A configured server (Milvus, MongoDB, an LLM endpoint) cannot be reached."""

    exit_code = 4


class ModelUnavailable(RagError):
    """Weights a configured component needs are not on this machine."""

    exit_code = 5


class LLMResponseError(RagError):
    """The LLM answered with something that cannot be used (e.g. broken JSON)."""

    exit_code = 6
