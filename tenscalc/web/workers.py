"""Worker processes that compute the page's answers, each with a deadline.

A Python thread cannot be stopped, so the work runs in separate processes: a
request takes an idle worker, sends it the request and waits at most
``timeout`` seconds for the answer.  A worker that misses its deadline (a
pathological input) or dies (out of memory) is killed and replaced, and the
request gets a clear error; the server itself never blocks on the work.

>>> pool = WorkerPool(size=1, timeout=60)
>>> pool.run({"expression": "x *(i,i->) x", "declarations": "x 1", "wrt": "x"})["derivatives"][0]["label"]
'gradient wrt x'
>>> pool.run({"expression": "x *(i,->) x", "declarations": "x 1"})["error"]["message"].splitlines()[0]
"index string '' has 0 letters but `x` has order 1 (line 1, column 3)"
>>> pool.close()
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from collections.abc import Mapping
from multiprocessing.connection import Connection
from typing import Any

DEFAULT_TIMEOUT = 20.0
"""Seconds a computation may take before its worker is killed."""


def _work(conn: Connection) -> None:
    """The worker's loop: read a request, send back its answer, until told to stop."""
    import signal

    # Ctrl-C in the terminal reaches the whole process group: the server stops its
    # workers itself, so a worker ignores it rather than print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .compute import analyse

    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if request is None:
            return
        try:
            answer = analyse(request)
        except Exception as exc:  # noqa: BLE001 - a bug must reach the page as a message, not kill the worker
            answer = {
                "ok": False,
                "error": {
                    "message": f"internal error ({type(exc).__name__}): {exc}",
                    "field": None,
                    "offset": None,
                    "kind": "InternalError",
                },
            }
        try:
            conn.send(answer)
        except (OSError, ValueError):
            return


class _Worker:
    def __init__(self, context: multiprocessing.context.SpawnContext):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_work, args=(child,), daemon=True, name="tenscalc-web-worker")
        self.process.start()
        child.close()

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.process.kill()
        else:
            try:
                self.conn.send(None)
            except (OSError, ValueError):
                self.process.kill()
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=5)
        self.conn.close()


def _failure(message: str, kind: str) -> dict[str, Any]:
    return {"ok": False, "error": {"message": message, "field": None, "offset": None, "kind": kind}}


class WorkerPool:
    """``size`` worker processes; :meth:`run` gives a request to one, with a deadline.

    Workers are started with the ``spawn`` method (a fresh interpreter): forking a
    process that runs server threads is unsafe.
    """

    def __init__(self, size: int = 2, timeout: float = DEFAULT_TIMEOUT):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.timeout = timeout
        self._context = multiprocessing.get_context("spawn")
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(size):
            self._add()

    def _add(self) -> None:
        worker = _Worker(self._context)
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
        worker.stop(kill=True)
        if not self._closed:
            self._add()

    def run(self, request: Mapping[str, Any]) -> dict[str, Any]:
        """The answer to ``request``, or an error when it takes longer than the timeout."""
        if self._closed:
            return _failure("the server is shutting down", "Unavailable")
        try:
            worker = self._idle.get(timeout=self.timeout)
        except queue.Empty:
            return _failure(f"the server is busy: no worker was free within {self.timeout:g} s", "Busy")
        try:
            worker.conn.send(dict(request))
            if not worker.conn.poll(self.timeout):
                self._retire(worker)
                return _failure(
                    f"stopped after {self.timeout:g} s: this input takes too long (try a lower order or a "
                    "smaller expression)",
                    "Timeout",
                )
            answer = worker.conn.recv()
        except (EOFError, OSError, BrokenPipeError):
            self._retire(worker)
            return _failure("the computation crashed (out of memory?); the worker was restarted", "Crashed")
        self._idle.put(worker)
        return answer

    def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.stop()
