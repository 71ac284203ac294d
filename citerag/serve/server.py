"""`python main.py serve`: one engine for the process, served by uvicorn."""

from __future__ import annotations

import logging
import socket
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from citerag.article import DEFAULT_COLLECTION, Article
from citerag.engine import Engine
from citerag.errors import InputError
from citerag.serve.app import create_app
from citerag.settings import Settings

log = logging.getLogger(__name__)


def check_port_free(host: str, port: int) -> None:
    """An InputError before any model loads when the address cannot be listened on."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as error:
            raise InputError(
                f"Cannot listen on {host}:{port} ({error.strerror}); choose another --port "
                "or --host."
            ) from None


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 8000,
    pdf_folders: Sequence[Path] = (),
    article: Article | None = None,
) -> None:
    """Open the engine (with the article's extraction schema, if one is given; an error here is
    the CLI's one sentence), then serve until stopped."""
    if not 0 < port < 65536:
        raise InputError(f"Port {port} is not valid; use 1 to 65535.")
    check_port_free(host, port)
    engine = Engine(settings, schema=article.schema if article else None)
    app = create_app(engine, pdf_folders, article.collection if article else DEFAULT_COLLECTION)
    if host not in {"127.0.0.1", "localhost", "::1"} and not settings.server.api_key:
        log.warning("serving on %s without an API key: set RAG_API_KEY to require one", host)
    if article is not None and article.name is not None:
        print(
            f"citerag: article {article.name!r}; questions ask {article.collection!r} unless "
            "they name a collection"
        )
    print(f"citerag: viewer at http://{host}:{port}/  API docs at http://{host}:{port}/docs")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        engine.close()
