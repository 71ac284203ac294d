"""The HTTP API and the web viewer: a thin FastAPI layer over one `citerag.engine.Engine`."""

from citerag.serve.app import create_app

__all__ = ["create_app"]
