"""tenscalc in the browser: a local, offline page for derivatives of tensor expressions.

Start it with ``tenscalc serve [--port N] [--open] [--host H]``, or from Python:

>>> from tenscalc.web import make_server, serve_in_thread
>>> server = make_server(port=0, workers=1)  # port 0: any free port
>>> server.url.startswith("http://127.0.0.1:")
True
>>> server.close()

The page (``static/``) posts what the user typed to ``/api/analyse``; the answers
come from :func:`tenscalc.web.compute.analyse`, run in worker processes with a
deadline (:mod:`tenscalc.web.workers`).
"""

from __future__ import annotations

from .compute import MAX_INPUT, MAX_ORDER, analyse
from .server import DEFAULT_PORT, make_server, serve_in_thread

__all__ = ["analyse", "make_server", "serve_in_thread", "DEFAULT_PORT", "MAX_INPUT", "MAX_ORDER"]
