"""The HTTP service (``hopgraph serve``): search and live updates of one index folder.

Needs the ``serve`` extra (FastAPI, uvicorn). :func:`create_app` builds the application;
:class:`ServedIndex` holds the served snapshot and applies updates.
"""

from hopgraph.serve.app import create_app
from hopgraph.serve.settings import Settings
from hopgraph.serve.state import ServedIndex

__all__ = ["ServedIndex", "Settings", "create_app"]
