"""``tenscalc serve``: the page and its JSON API on a local HTTP server.

The standard library's :class:`http.server.ThreadingHTTPServer` serves the
static page (``static/``: HTML, JS, CSS and the vendored KaTeX) and one API
endpoint, ``POST /api/analyse``, whose JSON body is a request of
:func:`tenscalc.web.compute.analyse`.  The work runs in the worker processes
of :class:`tenscalc.web.workers.WorkerPool`, each request with a deadline.

Safety for a server on the user's own machine: it listens on 127.0.0.1 unless
``--host`` says otherwise; it answers only requests whose ``Host`` header names
the address it listens on (no DNS rebinding); the API takes only
``application/json`` bodies (a cross-site form cannot post one) of at most
:data:`MAX_BODY` bytes; only the files shipped in ``static/`` are served.

>>> server = make_server(port=0, workers=1)
>>> server.server_address[0]
'127.0.0.1'
>>> server.close()
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import webbrowser
from collections.abc import Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from .compute import MAX_INPUT
from .workers import DEFAULT_TIMEOUT, WorkerPool

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_BODY = MAX_INPUT * 4 + 1024
"""Largest API request body in bytes (the input limit, in UTF-8, plus the JSON around it)."""
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".woff2": "font/woff2",
    ".woff": "font/woff",
    ".ttf": "font/ttf",
    ".svg": "image/svg+xml",
    ".txt": "text/plain",
    ".png": "image/png",
    ".ico": "image/x-icon",
}


def static_files() -> dict[str, tuple[bytes, str]]:
    """URL path -> (content, media type) of every file the page is made of."""
    root = resources.files(__package__).joinpath("static")
    found: dict[str, tuple[bytes, str]] = {}

    def walk(folder, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            else:
                suffix = "." + entry.name.rsplit(".", 1)[-1] if "." in entry.name else ""
                if entry.name == "LICENSE":
                    suffix = ".txt"
                if suffix in _TYPES:
                    found[f"/{prefix}{entry.name}"] = (entry.read_bytes(), _TYPES[suffix])

    walk(root, "")
    found["/"] = found["/index.html"]
    return found


class Server(ThreadingHTTPServer):
    """The HTTP server with its static files and worker pool."""

    daemon_threads = True
    verbose = False

    def __init__(self, address: tuple[str, int], pool: WorkerPool):
        self.pool = pool
        self.files = static_files()
        super().__init__(address, Handler)
        host, port = str(self.server_address[0]), self.server_address[1]
        self.allowed_hosts = {f"{h}:{port}" for h in ("127.0.0.1", "localhost", "[::1]", host)}

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
        return f"http://{shown}:{port}/"

    def close(self) -> None:
        """Stop serving (when running) and stop the workers."""
        self.server_close()
        self.pool.close()


class Handler(BaseHTTPRequestHandler):
    """Serves the static page and ``POST /api/analyse``."""

    server: Server
    server_version = "tenscalc"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            super().log_message(format, *args)

    def _host_ok(self) -> bool:
        host = self.headers.get("Host", "")
        if self.server.server_address[0] in ("0.0.0.0", "", "::") or host in self.server.allowed_hosts:
            return True
        self._send_json({"ok": False, "error": {"message": f"unexpected Host header {host!r}"}}, HTTPStatus.FORBIDDEN)
        return False

    def do_GET(self) -> None:  # noqa: N802 - the base class's name
        if not self._host_ok():
            return
        path = self.path.split("?", 1)[0]
        found = self.server.files.get(path)
        if found is None:
            self._send(b"not found\n", "text/plain; charset=utf-8", HTTPStatus.NOT_FOUND)
            return
        body, media = found
        self._send(body, media, HTTPStatus.OK, cache=not path.endswith((".html", "/")))

    def do_POST(self) -> None:  # noqa: N802 - the base class's name
        if not self._host_ok():
            return
        if self.path != "/api/analyse":
            self._send_json({"ok": False, "error": {"message": "not found"}}, HTTPStatus.NOT_FOUND)
            return
        if self.headers.get("Content-Type", "").split(";")[0].strip() != "application/json":
            self._send_json(
                {"ok": False, "error": {"message": "the body must be application/json"}},
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            )
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send_json(
                {"ok": False, "error": {"message": "Content-Length is required"}}, HTTPStatus.LENGTH_REQUIRED
            )
            return
        if length > MAX_BODY or length < 0:
            # the body is not read: the connection is closed instead
            self.close_connection = True
            self._send_json(
                _error(f"the input is too long ({length:,} bytes; at most {MAX_BODY:,})"),
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            )
            return
        try:
            request = json.loads(self.rfile.read(length).decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            self._send_json(_error(f"the body is not JSON: {exc}"), HTTPStatus.BAD_REQUEST)
            return
        if not isinstance(request, dict):
            self._send_json(_error("the body must be a JSON object"), HTTPStatus.BAD_REQUEST)
            return
        self._send_json(self.server.pool.run(request), HTTPStatus.OK)

    def _send_json(self, payload: dict[str, Any], status: HTTPStatus) -> None:
        self._send(json.dumps(payload).encode("utf-8"), "application/json", status)

    def _send(self, body: bytes, media: str, status: HTTPStatus, cache: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "max-age=3600" if cache else "no-cache")
        if media.startswith("text/html"):
            # the page loads nothing from elsewhere; drawings come as data: images
            self.send_header(
                "Content-Security-Policy",
                "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self'",
            )
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"message": message, "field": None, "offset": None, "kind": "InputError"}}


def make_server(
    host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, workers: int = 2, timeout: float = DEFAULT_TIMEOUT
) -> Server:
    """A server bound to ``host:port`` (port 0: any free port), not yet serving.

    Call ``serve_forever()`` (in a thread, for tests) and ``close()`` at the end.
    """
    pool = WorkerPool(size=workers, timeout=timeout)
    try:
        return Server((host, port), pool)
    except BaseException:
        pool.close()
        raise


def serve_in_thread(server: Server) -> threading.Thread:
    """Serve ``server`` from a daemon thread (stop it with ``server.shutdown()``)."""
    thread = threading.Thread(target=server.serve_forever, name="tenscalc-web", daemon=True)
    thread.start()
    return thread


def build_parser() -> argparse.ArgumentParser:
    """Options of ``tenscalc serve``."""
    parser = argparse.ArgumentParser(
        prog="tenscalc serve",
        description="Serve the tenscalc page (derivatives, LaTeX, drawings, Python code, numeric check, "
        "convexity) on this machine; it works offline.",
    )
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free)")
    parser.add_argument(
        "--host",
        default=DEFAULT_HOST,
        help=f"address to listen on (default {DEFAULT_HOST}: this machine only; anything else exposes the "
        "server to your network)",
    )
    parser.add_argument("--open", action="store_true", help="open the page in the web browser")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        help=f"seconds a computation may take (default {DEFAULT_TIMEOUT:g})",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``tenscalc serve``; returns when interrupted (Ctrl-C)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    if args.workers < 1 or args.timeout <= 0:
        print("tenscalc serve: error: --workers must be at least 1 and --timeout positive", file=sys.stderr)
        return 2
    try:
        server = make_server(args.host, args.port, args.workers, args.timeout)
    except OSError as exc:
        print(
            f"tenscalc serve: error: cannot listen on {args.host}:{args.port}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    server.verbose = args.verbose
    print(f"tenscalc: serving on {server.url}  (Ctrl-C stops it)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"tenscalc: warning: listening on {args.host}: other machines can reach this page", file=sys.stderr)
    if args.open:
        webbrowser.open(server.url)
    # `kill` (SIGTERM) stops it as cleanly as Ctrl-C: the workers are stopped too
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        print("tenscalc: stopped", file=sys.stderr)
    finally:
        signal.signal(signal.SIGTERM, previous)
        server.close()
    return 0


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt
