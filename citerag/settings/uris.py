"""The storage URIs: what each one names (a Milvus server, a socket, a Milvus Lite file; a
MongoDB deployment), parsed once from its scheme, and checked with one sentence when wrong."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from enum import Enum
from urllib.parse import urlsplit

from citerag.errors import ConfigError


class MilvusScheme(Enum):
    """How pymilvus reaches the vector index, by the URI's scheme."""

    HTTP = "http"
    HTTPS = "https"
    TCP = "tcp"
    GRPC = "grpc"
    UNIX = "unix"  # a server's socket path
    LITE = ""  # no scheme: a Milvus Lite file

    @classmethod
    def of(cls, uri: str) -> MilvusScheme:
        """The scheme `uri` is written with; LITE for a path (or a scheme pymilvus lacks)."""
        scheme, _, _ = _address(uri)
        try:
            return cls(scheme)
        except ValueError:
            return cls.LITE

    @property
    def is_server(self) -> bool:
        return self is not MilvusScheme.LITE

    @property
    def needs_host(self) -> bool:
        return self.is_server and self is not MilvusScheme.UNIX


MONGODB_SCHEMES = ("mongodb", "mongodb+srv")
_PASSWORD = re.compile(r"(//[^:/@]*:)[^@/]*@")


def checked_milvus_uri(uri: str) -> str:
    """`uri` when pymilvus can take it as `milvus_uri`: a server's URI with a host, a `unix:`
    socket, or a Milvus Lite file ending in .db ("": Milvus Lite in the storage folder)."""
    if not uri:
        return uri
    scheme = MilvusScheme.of(uri)
    _, host, _ = _address(uri)
    if scheme is MilvusScheme.UNIX or (scheme.needs_host and host):
        return uri
    if scheme is MilvusScheme.LITE and uri.endswith(".db"):
        return uri
    raise ConfigError(
        f"milvus_uri is {shown_uri(uri)!r}, neither a Milvus server's URI (http://HOST:19530) "
        "nor a Milvus Lite file ending in .db; fix MILVUS_URI (or config.py), or unset it to use "
        "Milvus Lite in the storage folder."
    )


def check_milvus_variable(value: str) -> None:
    """pymilvus reads the MILVUS_URI variable itself when it is imported and fails on anything
    but http[s]://HOST[:PORT] with a host name or IPv4 address; say so before it is imported."""
    _, host, port = _address(value)
    if not value or (
        MilvusScheme.of(value).needs_host and host and ":" not in host and port is not None
    ):
        return
    raise ConfigError(
        f"MILVUS_URI is {shown_uri(value)!r}, which pymilvus cannot read from the environment "
        "(it takes http://HOST:PORT, a host name or IPv4 address); fix the variable, or unset it "
        "and set MILVUS_URI in config.py for a Milvus Lite file or another form."
    )


def check_milvus_environment(environ: Mapping[str, str] | None = None) -> None:
    """The MILVUS_URI variable (of `environ`, default the process's) checked as `milvus_uri` and
    as pymilvus reads it: call before anything imports pymilvus, which reads it on import."""
    variable = (os.environ if environ is None else environ).get("MILVUS_URI", "")
    check_milvus_variable(checked_milvus_uri(variable))


def checked_mongodb_uri(uri: str) -> str:
    """`uri` when it is a MongoDB URI with a host, or several ("": the SQLite docstore)."""
    try:
        parsed = urlsplit(uri)
    except ValueError:
        parsed = None
    hosts = parsed.netloc.rsplit("@", 1)[-1] if parsed else ""
    if not uri or (parsed and parsed.scheme.lower() in MONGODB_SCHEMES and hosts):
        return uri
    raise ConfigError(
        f"mongodb_uri is {shown_uri(uri)!r}, not a MongoDB URI; write it as "
        "mongodb://HOST:27017 (or mongodb+srv://HOST), or unset MONGODB_URI to use the embedded "
        "SQLite docstore."
    )


def shown_uri(uri: str) -> str:
    """`uri` with any password replaced by ***, for messages."""
    return _PASSWORD.sub(r"\1***@", uri)


def _address(uri: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) of `uri`; port 19530 when none is written; ("", "", None) when
    it does not parse, or names a port that is not one."""
    try:
        parsed = urlsplit(uri)
        port = parsed.port
    except ValueError:
        return "", "", None
    port = port if port is not None else 19530
    return parsed.scheme.lower(), parsed.hostname or "", port if 0 <= port < 65535 else None
