"""``tenscalc serve``: the page and its JSON API on a local HTTP server.

The standard library's :class:`http.server.ThreadingHTTPServer` serves the
static page (``static/``: HTML, JS, CSS and the vendored KaTeX) and one API
endpoint, ``POST /api/analyse``, whose JSON body is a request of
:func:`tenscalc.web.compute.analyse`.  The work runs in the worker processes
of :class:`tenscalc.web.workers.WorkerPool`, each request with a deadline.

Safety for a server on the user's own machine: it listens on 127.0.0.1 unless
``--host`` says otherwise; it answers only requests whose ``Host`` header names
the address it listens on or this machine (no DNS rebinding, also when listening
beyond loopback); the API takes only ``application/json`` bodies (a cross-site
form cannot post one) of at most :data:`MAX_BODY` bytes, nested at most
:data:`MAX_DEPTH` deep, with whole-number orders in range (anything else is a 4xx
JSON error); only the files shipped in ``static/`` are served, and no other site
may frame them.  The listen backlog holds :data:`BACKLOG` connections and a
connection that sends nothing for :data:`IDLE_TIMEOUT` seconds is closed.

Work nobody waits for is stopped: a request whose client hung up, or one that a
newer request of the same page (``session`` and a larger ``seq``) supersedes,
gives its worker back at once (see :meth:`WorkerPool.run`).

>>> server = make_server(port=0, workers=1)
>>> server.server_address[0]
'127.0.0.1'
>>> server.close()
"""

from __future__ import annotations

import argparse
import json
import select
import signal
import socket
import sys
import threading
import webbrowser
from collections import OrderedDict
from collections.abc import Callable, Sequence
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any

from .compute import MAX_INPUT, InputError, check_request
from .workers import DEFAULT_TIMEOUT, WorkerPool

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
MAX_BODY = MAX_INPUT * 4 + 1024
"""Largest API request body in bytes (the input limit, in UTF-8, plus the JSON around it)."""
MAX_DEPTH = 16
"""Deepest nesting of JSON arrays and objects accepted (a request is one flat object)."""
BACKLOG = 128
"""Connections the operating system queues before the server accepts them."""
IDLE_TIMEOUT = 30.0
"""Seconds a connection may stay silent (half-sent request, idle keep-alive) before it is closed."""
MAX_SESSIONS = 1024
"""Pages whose latest request number is remembered (the oldest are forgotten first)."""
CSP = (
    "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; font-src 'self'; "
    "frame-ancestors 'none'"
)
"""The page loads nothing from elsewhere (drawings come as data: images) and no site may frame it."""
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


def allowed_hosts(host: str, port: int) -> set[str]:
    """The ``Host`` header values a server bound to ``host:port`` answers.

    Loopback names always; the bound address; and, when it listens on every
    address (``0.0.0.0``, ``::``), this machine's names and addresses, so that
    another machine reaches it by name or address while a page of some other
    site (DNS rebinding) is still refused.

    >>> sorted(allowed_hosts("127.0.0.1", 8765))
    ['127.0.0.1:8765', '[::1]:8765', 'localhost:8765']
    >>> "evil.example:8765" in allowed_hosts("0.0.0.0", 8765)
    False
    >>> f"{socket.gethostname()}:8765" in allowed_hosts("0.0.0.0", 8765)
    True
    """
    names = {"127.0.0.1", "localhost", "::1"}
    if host not in ("", "0.0.0.0", "::"):
        names.add(host)
    else:
        for name in (socket.gethostname(), socket.getfqdn()):
            names.add(name)
            try:
                names.update(str(info[4][0]) for info in socket.getaddrinfo(name, None))
            except OSError:  # a name this machine cannot resolve: the name itself is still allowed
                pass
    shown = {(f"[{n}]" if ":" in n else n).lower() for n in names if n}
    return {f"{n}:{port}" for n in shown} | ({n for n in shown} if port == 80 else set())


class Server(ThreadingHTTPServer):
    """The HTTP server with its static files and worker pool."""

    daemon_threads = True
    request_queue_size = BACKLOG
    verbose = False

    def __init__(self, address: tuple[str, int], pool: WorkerPool, idle_timeout: float = IDLE_TIMEOUT):
        self.pool = pool
        self.files = static_files()
        self.idle_timeout = idle_timeout
        self._sessions: OrderedDict[str, int] = OrderedDict()
        self._sessions_lock = threading.Lock()
        super().__init__(address, Handler)
        host, port = str(self.server_address[0]), self.server_address[1]
        self.allowed_hosts = allowed_hosts(host, port)

    def note_request(self, session: str, seq: int) -> None:
        """Remember the newest request number of a page (older ones are superseded)."""
        with self._sessions_lock:
            self._sessions[session] = max(seq, self._sessions.get(session, seq))
            self._sessions.move_to_end(session)
            while len(self._sessions) > MAX_SESSIONS:
                self._sessions.popitem(last=False)

    def superseded(self, session: str, seq: int) -> bool:
        """Whether the page ``session`` sent a request newer than ``seq``."""
        with self._sessions_lock:
            return self._sessions.get(session, seq) > seq

    def handle_error(self, request: Any, client_address: Any) -> None:
        # a client that hung up or stayed silent is no error of the server's
        if isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            return
        super().handle_error(request, client_address)

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

    def setup(self) -> None:
        super().setup()
        # the socket's timeout: a silent connection is closed instead of holding a thread
        self.connection.settimeout(self.server.idle_timeout)

    def client_gone(self) -> bool:
        """Whether the client closed its side of the connection (it no longer waits)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            # readable with nothing to read: the other side closed (a pipelined request is data)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
        if self.server.verbose:
            super().log_message(format, *args)

    def _host_ok(self) -> bool:
        host = self.headers.get("Host", "")
        if host.lower() in self.server.allowed_hosts:
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
            request = read_json(self.rfile.read(length))
            check_request(request)
        except InputError as exc:
            self._send_json(_error(str(exc)), HTTPStatus.BAD_REQUEST)
            return
        session, seq = request.get("session"), request.get("seq")
        cancelled = self.client_gone
        if isinstance(session, str) and isinstance(seq, int):
            self.server.note_request(session, seq)
            cancelled = lambda: self.server.superseded(session, seq) or self.client_gone()  # noqa: E731
        if request.get("parts") is not None:
            self._stream(request, cancelled)
            return
        answer = self.server.pool.run(request, cancelled)
        if answer.get("error", {}).get("kind") == "Cancelled":
            self.close_connection = True
            if self.client_gone():
                return  # nobody to tell
            self._send_json(answer, HTTPStatus.CONFLICT)
            return
        self._send_json(answer, HTTPStatus.OK)

    def _stream(self, request: dict[str, Any], cancelled: Callable[[], bool]) -> None:
        """The answers to the parts of one input, one JSON line each as soon as it is ready."""
        answers = self.server.pool.stream(request, cancelled)
        self.close_connection = True  # the end of the body is the end of the connection
        try:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "application/x-ndjson")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Connection", "close")
            self.end_headers()
            for answer in answers:
                if answer.get("error", {}).get("kind") == "Cancelled" and self.client_gone():
                    return  # nobody to tell
                self.wfile.write(json.dumps(answer).encode("utf-8") + b"\n")
                self.wfile.flush()
        except (ConnectionError, TimeoutError):
            pass  # the client hung up: closing the answers below gives its work up
        finally:
            answers.close()

    def _send_json(self, payload: dict[str, Any], status: HTTPStatus) -> None:
        self._send(json.dumps(payload).encode("utf-8"), "application/json", status)

    def _send(self, body: bytes, media: str, status: HTTPStatus, cache: bool = False) -> None:
        self.send_response(status)
        self.send_header("Content-Type", media)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Cache-Control", "max-age=3600" if cache else "no-cache")
        self.send_header("X-Frame-Options", "DENY")
        if media.startswith("text/html"):
            self.send_header("Content-Security-Policy", CSP)
        if self.close_connection:
            self.send_header("Connection", "close")
        try:
            self.end_headers()
            self.wfile.write(body)
        except (ConnectionError, TimeoutError):
            self.close_connection = True  # the client hung up: nothing to report


def read_json(body: bytes) -> dict[str, Any]:
    """The request object in ``body``, or an :class:`InputError` saying what is wrong with it.

    Nesting is measured before parsing (the standard parser recurses, so deep
    nesting would raise ``RecursionError``); ``NaN`` and ``Infinity`` are refused.

    >>> read_json(b'{"expression": "x", "order": 2}')
    {'expression': 'x', 'order': 2}
    >>> read_json(b'{"order": Infinity}')
    Traceback (most recent call last):
    ...
    tenscalc.web.compute.InputError: the body is not JSON: Infinity is not a number JSON allows
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"the body is not UTF-8: {exc}") from None
    depth = json_depth(text)
    if depth > MAX_DEPTH:
        raise InputError(f"the body is nested {depth} deep; a request is one object (at most {MAX_DEPTH} deep)")
    try:
        request = json.loads(text, parse_constant=_refuse_constant)
    except InputError:
        raise
    except (ValueError, RecursionError) as exc:  # ValueError: also an integer of too many digits
        raise InputError(f"the body is not JSON: {exc}") from None
    if not isinstance(request, dict):
        raise InputError("the body must be a JSON object")
    return request


def _refuse_constant(name: str) -> Any:
    raise InputError(f"the body is not JSON: {name} is not a number JSON allows")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (brackets inside strings do not count).

    >>> json_depth('{"a": [1, {"b": "[[["}]}')
    3
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _error(message: str) -> dict[str, Any]:
    return {"ok": False, "error": {"message": message, "field": None, "offset": None, "kind": "InputError"}}


def make_server(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    workers: int = 2,
    timeout: float = DEFAULT_TIMEOUT,
    idle_timeout: float = IDLE_TIMEOUT,
) -> Server:
    """A server bound to ``host:port`` (port 0: any free port), not yet serving.

    Call ``serve_forever()`` (in a thread, for tests) and ``close()`` at the end.
    """
    pool = WorkerPool(size=workers, timeout=timeout)
    try:
        return Server((host, port), pool, idle_timeout)
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
