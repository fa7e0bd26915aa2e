"""Worker processes that compute the page's answers, each with a deadline.

A Python thread cannot be stopped, so the work runs in separate processes: a
request takes an idle worker, sends it the request and waits at most
``timeout`` seconds for the answer.  A worker that misses its deadline (a
pathological input) or dies (out of memory) is killed and replaced, and the
request gets a clear error; the server itself never blocks on the work.

Work nobody waits for any more is stopped too: :meth:`WorkerPool.run` takes a
``cancelled`` test (the client hung up, or a newer request of the same page
superseded this one) and, when it turns true, kills the worker and starts a
fresh one, so an abandoned heavy input never holds a worker until its deadline.
A worker is handed out only once it has imported and warmed up (it says
"ready"), so a replacement being started never delays a request that another
worker can take.

>>> pool = WorkerPool(size=1, timeout=60)
>>> pool.run({"expression": "x *(i,i->) x", "declarations": "x 1", "wrt": "x"})["derivatives"][0]["label"]
'gradient wrt x'
>>> pool.run({"expression": "x *(i,->) x", "declarations": "x 1"})["error"]["message"].split(";")[0]
"index string '' has 0 letters but `x` has order 1"
>>> pool.close()
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Callable, Generator, Iterator, Mapping
from multiprocessing.connection import Connection
from typing import Any

DEFAULT_TIMEOUT = 20.0
"""Seconds a computation may take before its worker is killed."""
POLL = 0.05
"""Seconds between two looks at whether the client still waits for the answer."""
_READY = "ready"
MAX_START_FAILURES = 3
"""Workers that die one after another before they are ready: then the pool stops starting them."""


def _work(conn: Connection) -> None:
    """The worker's loop: read a request, send back its answer, until told to stop."""
    import signal

    # Ctrl-C in the terminal reaches the whole process group: the server stops its
    # workers itself, so a worker ignores it rather than print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    from .compute import analyse

    # the first answer pays for lazy imports and caches: pay it before any user waits
    analyse({"expression": "x *(i,i->) x", "declarations": "x 1", "wrt": "x"})
    try:
        conn.send(_READY)
    except (OSError, ValueError):
        return
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError, KeyboardInterrupt):
            return
        if request is None:
            return
        # every answer as soon as it is ready, then the end mark
        try:
            for answer in _answers(request):
                conn.send(("answer", answer))
            conn.send(("end", None))
        except (OSError, ValueError):
            return


def _answers(request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The answers to one request: one part (``part``) or several (``parts``)."""
    from .compute import analyse, analyse_parts

    try:
        if request.get("parts") is None:
            yield analyse(request)
        else:
            yield from analyse_parts(request, list(request["parts"]))
    except Exception as exc:  # noqa: BLE001 - a bug must reach the page as a message, not kill the worker
        yield _failure(f"internal error ({type(exc).__name__}): {exc}", "InternalError")


class _Worker:
    def __init__(self, context: Any):
        self.conn, child = context.Pipe()
        self.process = context.Process(target=_work, args=(child,), daemon=True, name="tenscalc-web-worker")
        self.process.start()
        child.close()

    def wait_ready(self, timeout: float) -> bool:
        """Whether the worker said it is ready within ``timeout`` seconds."""
        try:
            return bool(self.conn.poll(timeout)) and self.conn.recv() == _READY
        except (EOFError, OSError):
            return False

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


def _start_method() -> Any:
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # only taken into account when the fork server is not running yet
        context.set_forkserver_preload(["tenscalc.web.compute"])
        return context
    return multiprocessing.get_context("spawn")


def _failure(message: str, kind: str) -> dict[str, Any]:
    return {"ok": False, "error": {"message": message, "field": None, "offset": None, "kind": kind}}


class WorkerPool:
    """``size`` worker processes; :meth:`run` gives a request to one, with a deadline.

    Workers are started by the ``forkserver`` method where there is one (a clean
    process that imported tenscalc once forks each worker: a replacement is ready in
    a fraction of a second) and by ``spawn`` elsewhere (a fresh interpreter); never
    by a plain fork of the server, which runs threads.
    """

    def __init__(self, size: int = 2, timeout: float = DEFAULT_TIMEOUT):
        if size < 1:
            raise ValueError("a worker pool needs at least one worker")
        self.timeout = timeout
        self._context = _start_method()
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        self._start_failures = 0
        self.cancelled = 0
        """How many requests were stopped because nobody waited for them any more."""
        for _ in range(size):
            self._add()

    def _add(self) -> None:
        """Start a worker; it joins the idle ones once it says it is ready (from a thread:
        the caller does not wait for a fresh interpreter to import tenscalc)."""
        worker = _Worker(self._context)
        with self._lock:
            self._all.append(worker)
        threading.Thread(target=self._admit, args=(worker,), name="tenscalc-web-start", daemon=True).start()

    def _admit(self, worker: _Worker) -> None:
        # a worker that cannot start within the deadline is as good as dead
        if worker.wait_ready(max(self.timeout, 60.0)):
            self._start_failures = 0
            self._idle.put(worker)
            return
        self._start_failures += 1
        if self._start_failures < MAX_START_FAILURES:
            self._retire(worker)
            return
        # workers that die while starting will keep dying: stop trying, and say so
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
        worker.stop(kill=True)

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
        worker.stop(kill=True)
        if not self._closed:
            self._add()

    def ready(self) -> int:
        """How many workers are idle and ready now."""
        return self._idle.qsize()

    def run(self, request: Mapping[str, Any], cancelled: Callable[[], bool] | None = None) -> dict[str, Any]:
        """The answer to ``request`` (one part), or an error when it takes longer than the timeout.

        ``cancelled()`` is asked every :data:`POLL` seconds while the request waits for
        a worker or for its answer; once it is true the work is given up (its worker
        killed and replaced) and a ``"Cancelled"`` error comes back.
        """
        return list(self.stream({**request, "parts": None}, cancelled))[0]

    def stream(
        self, request: Mapping[str, Any], cancelled: Callable[[], bool] | None = None
    ) -> Generator[dict[str, Any], None, None]:
        """The answers to ``request`` (each part of ``request["parts"]``) as the worker sends them.

        Each answer has its own deadline; a failure (timeout, crash, cancelled, busy) is
        the last answer.  Closing the generator before its end gives the work up (the
        worker is killed and replaced): nobody reads the rest.
        """
        if self._closed:
            yield _failure("the server is shutting down", "Unavailable")
            return
        if self._start_failures >= MAX_START_FAILURES:
            yield _failure("the worker processes cannot start (see the server's terminal)", "Unavailable")
            return
        gone = cancelled or (lambda: False)
        worker = self._take(time.monotonic() + self.timeout, gone)
        if worker is None:
            if gone():
                self.cancelled += 1
                yield _failure("cancelled: nobody waits for this answer any more", "Cancelled")
            else:
                yield _failure(f"the server is busy: no worker was free within {self.timeout:g} s", "Busy")
            return
        done = False
        try:
            worker.conn.send(dict(request))
            while True:
                failure = self._wait(worker, gone)
                if failure is not None:
                    done = True
                    self._retire(worker)
                    yield failure
                    return
                kind, answer = worker.conn.recv()
                if kind == "end":
                    done = True
                    self._idle.put(worker)
                    return
                yield answer
        except (EOFError, OSError):
            done = True
            self._retire(worker)
            yield _failure("the computation crashed (out of memory?); the worker was restarted", "Crashed")
        finally:
            if not done:  # the reader stopped before the end
                self.cancelled += 1
                self._retire(worker)

    def _wait(self, worker: _Worker, gone: Callable[[], bool]) -> dict[str, Any] | None:
        """Wait for the worker's next message: None when it came, else the failure to report."""
        deadline = time.monotonic() + self.timeout
        while not worker.conn.poll(POLL):
            if gone():
                self.cancelled += 1
                return _failure("cancelled: nobody waits for this answer any more", "Cancelled")
            if time.monotonic() >= deadline:
                return _failure(
                    f"stopped after {self.timeout:g} s: this input takes too long (try a lower order or a "
                    "smaller expression)",
                    "Timeout",
                )
        return None

    def _take(self, deadline: float, gone: Callable[[], bool]) -> _Worker | None:
        """An idle worker, or None when the deadline passes or the request is cancelled first."""
        while not gone():
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            try:
                return self._idle.get(timeout=min(POLL, left))
            except queue.Empty:
                continue
        return None

    def close(self) -> None:
        """Stop every worker."""
        self._closed = True
        with self._lock:
            workers, self._all = self._all, []
        for worker in workers:
            worker.stop()
