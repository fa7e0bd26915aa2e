"""What long symbolic work is doing: standard ``logging`` and an optional progress display.

Every stage of the pipeline (parse, differentiate, simplify, compile and bind)
logs to the ``tenscalc`` logger: a DEBUG record when it starts and an INFO record
when it ends, with its sizes and its time.  Nothing is printed by default (the
package adds only a ``NullHandler``); configure ``logging`` as for any library,
or ask tenscalc to show it:

* ``tc.set_verbosity(True)`` (or ``"debug"``) shows the records on standard error
  from then on, ``tc.set_verbosity(False)`` stops;
* ``with tc.verbose(): ...`` shows them for a block;
* ``verbose=True`` on ``tc.derivative``, ``tc.gradient``, ``tc.hessian`` and
  ``tc.compile`` shows them for that call; ``tenscalc --verbose`` for a command.

When `tqdm <https://tqdm.github.io>`_ is installed, the display also shows a
live bar for the simplifier's passes; without it, plain lines.  Records are per
stage (and per simplifier pass at DEBUG), never per node: the cost when nothing
is shown is a clock reading and a level check per stage.

Examples
--------
>>> import sys, tenscalc as tc
>>> f = tc.parse("x *(i,ij->j) A *(j,j->) x", {"x": 1, "A": 2})
>>> with tc.verbose(stream=sys.stdout, timing=False):   # standard error by default
...     g = tc.gradient(f, "x")
tenscalc: differentiate: by x: 4 nodes -> ... nodes
tenscalc: simplify: ... nodes -> ... nodes (... passes)
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from typing import IO, Any

from .errors import TensCalcError

Text = str | Callable[[], str]
"""A description, or a function making it: sizes are counted only when a record is shown."""

logger = logging.getLogger("tenscalc")
logger.addHandler(logging.NullHandler())  # a library prints nothing unless asked

_LEVELS = {"debug": logging.DEBUG, "info": logging.INFO}


class _Display(logging.Handler):
    """Records as ``tenscalc: message`` lines on a stream (through tqdm.write when tqdm is installed)."""

    def __init__(self, stream: IO[str] | None, timing: bool):
        super().__init__()
        self.stream = stream
        self.timing = timing
        self.setFormatter(logging.Formatter("tenscalc: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        if not self.timing and getattr(record, "seconds", None) is not None:
            record = logging.makeLogRecord({**record.__dict__, "msg": record.untimed, "args": ()})  # type: ignore[attr-defined]
        line = self.format(record)
        stream = self.stream or sys.stderr
        tqdm = _tqdm()
        if tqdm is not None:
            tqdm.write(line, file=stream)
        else:
            stream.write(line + "\n")
            stream.flush()


_display: _Display | None = None
_saved_level = logging.NOTSET


def set_verbosity(level: bool | str | int | None, *, stream: IO[str] | None = None, timing: bool = True) -> None:
    """Show tenscalc's log records on ``stream`` (standard error by default), or stop.

    Parameters
    ----------
    level : bool, str, int or None
        ``True`` or ``"info"`` (one line per stage), ``"debug"`` (also when each stage
        starts, and each simplifier pass), a ``logging`` level, or ``False``/``None``
        to stop showing them.
    stream : file, optional
        Where the lines go (standard error by default).
    timing : bool
        ``False`` leaves the seconds out of the lines.

    Examples
    --------
    >>> import tenscalc as tc
    >>> tc.set_verbosity(True)
    >>> tc.set_verbosity(False)
    """
    global _display, _saved_level
    if _display is not None:
        logger.removeHandler(_display)
        logger.setLevel(_saved_level)
        _display = None
    if level is None or level is False:
        return
    number = logging.INFO if level is True else _LEVELS.get(str(level).lower(), level)
    if not isinstance(number, int):
        raise TensCalcError(f"verbosity must be True, False, 'info', 'debug' or a logging level, not {level!r}")
    _display = _Display(stream, timing)
    _display.setLevel(number)
    _saved_level = logger.level
    logger.addHandler(_display)
    if logger.level == logging.NOTSET or logger.level > number:
        logger.setLevel(number)


@contextlib.contextmanager
def verbose(
    level: bool | str | int | None = True, *, stream: IO[str] | None = None, timing: bool = True
) -> Iterator[None]:
    """``set_verbosity(level, ...)`` for a block, then back to what was shown before.

    Examples
    --------
    >>> import sys, tenscalc as tc
    >>> with tc.verbose(stream=sys.stdout, timing=False):
    ...     e = tc.parse("x'*A*x")
    tenscalc: parse: 6 characters -> 4 nodes
    """
    previous = None if _display is None else (_display.level, _display.stream, _display.timing)
    set_verbosity(level, stream=stream, timing=timing)
    try:
        yield
    finally:
        if previous is None:
            set_verbosity(None)
        else:
            set_verbosity(previous[0], stream=previous[1], timing=previous[2])


def optionally_verbose(flag: bool) -> contextlib.AbstractContextManager[None]:
    """``verbose()`` when ``flag`` (a function's ``verbose=True``), else nothing at all."""
    return verbose() if flag else contextlib.nullcontext()


class Stage:
    """One stage of work being logged: ``stage()`` makes it; ``done(...)`` says what came out."""

    def __init__(self, name: str, start: Text):
        self.name = name
        self.start = start
        self.result: Text = ""
        self.began = time.perf_counter()
        self._bar: Any = None

    def done(self, result: Text) -> None:
        """What the stage produced (described when it ends, if a record is shown)."""
        self.result = result

    def step(self, what: str) -> None:
        """One round of a stage that repeats (a simplifier pass): a DEBUG record, and the bar moves."""
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("%s: %s", self.name, what)
        if _display is not None:
            tqdm = _tqdm()
            if tqdm is not None:
                if self._bar is None:
                    self._bar = tqdm(desc=f"tenscalc {self.name}", unit="pass", leave=False, file=_display.stream)
                self._bar.update(1)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _text(text: Text) -> str:
    return text() if callable(text) else text


@contextlib.contextmanager
def stage(name: str, start: Text) -> Iterator[Stage]:
    """Log the stage ``name`` (what it starts from: ``start``), its result and its time.

    Examples
    --------
    >>> with stage("simplify", "7 nodes") as s:   # nothing shown: tenscalc is quiet by default
    ...     s.done("6 nodes")
    """
    current = Stage(name, start)
    if logger.isEnabledFor(logging.DEBUG):
        logger.debug("%s: %s ...", name, _text(start))
    try:
        yield current
    finally:
        current.close()
    if logger.isEnabledFor(logging.INFO):
        seconds = time.perf_counter() - current.began
        result = _text(current.result)
        untimed = f"{name}: {_text(start)}" + (f" -> {result}" if result else "")
        logger.info("%s in %.3f s", untimed, seconds, extra={"seconds": seconds, "untimed": untimed})


def _tqdm() -> Any:
    """tqdm's class when it is installed (an optional display), else None."""
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm
