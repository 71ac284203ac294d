"""`python main.py serve`: one engine for the process, served by uvicorn."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import uvicorn

from citerag.engine import Engine
from citerag.errors import InputError
from citerag.serve.app import create_app
from citerag.settings import Settings

log = logging.getLogger(__name__)


def serve(
    settings: Settings,
    host: str = "127.0.0.1",
    port: int = 8000,
    pdf_folders: Sequence[Path] = (),
) -> None:
    """Open the engine (an error here is the CLI's one sentence), then serve until stopped."""
    if not 0 < port < 65536:
        raise InputError(f"Port {port} is not valid; use 1 to 65535.")
    engine = Engine(settings)
    app = create_app(engine, pdf_folders)
    if host not in {"127.0.0.1", "localhost", "::1"} and not settings.api_key:
        log.warning("serving on %s without an API key: set RAG_API_KEY to require one", host)
    print(f"citerag: viewer at http://{host}:{port}/  API docs at http://{host}:{port}/docs")
    try:
        uvicorn.run(app, host=host, port=port, log_level="warning", access_log=False)
    finally:
        engine.close()
