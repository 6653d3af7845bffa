"""A load running on its own thread, watched from outside: what ``gputop-trace view`` starts before it imports the
app, so that reading the trace overlaps the app's start (about a second of imports), and what the app polls for its
progress screen.

The load itself is the command line's: :func:`gputop_trace.load.resources.check_paths` then
:func:`gputop_trace.load.loader.load_paths`, with the same cache. The thread only records the latest progress;
whoever shows it reads :attr:`BackgroundLoad.progress` at its own pace, so that a fast loader never floods a user
interface with updates (each one redrawn on the UI thread, which holds the GIL the parser needs)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from gputop_trace.errors import LoadCancelled
from gputop_trace.model.trace import Trace

#: seconds: the interpreter's switch interval while a background load runs (Python's default is 5 ms). The load's
#: thread lets the GIL go at every numpy call and compiled scan, and whenever the UI thread (the app's imports, at
#: ``view``'s start) holds it, waits up to the whole interval to get it back: with 0.1 ms, ``view`` of a 182 MB
#: trace drew its first screen ~75 ms sooner on a 2-core machine (benchmarks/NOTES.md); loads alone gain nothing.
LOAD_SWITCH_INTERVAL = 1e-4


class _ShortSwitchInterval:
    """Counts the background loads running; the first to start sets :data:`LOAD_SWITCH_INTERVAL` (unless the
    interval is shorter already), the last to end puts back the one it found."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._before = 0.0

    @property
    def running(self) -> int:
        """Loads running now."""
        return self._running

    def enter(self) -> None:
        with self._lock:
            if self._running == 0:
                self._before = sys.getswitchinterval()
                sys.setswitchinterval(min(LOAD_SWITCH_INTERVAL, self._before))
            self._running += 1

    def exit(self) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                sys.setswitchinterval(self._before)


_switch = _ShortSwitchInterval()

#: what a load's ``then`` hook makes of the trace (the app's prepared view)
T = TypeVar("T")


class BackgroundLoad(Generic[T]):
    """Loads ``paths`` on a daemon thread, started at once.

    ``progress`` is ``(bytes_done, bytes_total, events_so_far)``; :meth:`cancel` stops the parse at its next
    progress report; :meth:`result` gives the trace or raises what the load raised (a :class:`TraceError`, a
    :class:`MemoryError`, :class:`LoadCancelled` once cancelled).

    ``then(trace)``, when given, runs on the same thread once the trace is loaded: what the caller needs next that
    can be computed before anyone asks (``view`` prepares the timeline there while the app is still being
    imported); :meth:`then_result` gives what it returned, and what it raises, :meth:`result` raises.

    While any background load runs, the interpreter's switch interval is :data:`LOAD_SWITCH_INTERVAL`; the one
    before is put back when the last of them ends."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        max_memory: int | None = None,
        use_cache: bool = True,
        include_python: bool = True,
        then: Callable[[Trace], T] | None = None,
    ) -> None:
        self.paths = list(paths)
        self.max_memory = max_memory
        self.use_cache = use_cache
        self.include_python = include_python
        self.progress: tuple[int, int, int] = (0, 0, 0)
        self._cancelled = threading.Event()
        self._done = threading.Event()
        self._trace: Trace | None = None
        self._then = then
        self._then_result: T | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="gputop-trace load", daemon=True)
        _switch.enter()
        try:
            self._thread.start()
        except BaseException:
            _switch.exit()
            raise

    def matches(self, paths: Sequence[str], *, use_cache: bool, include_python: bool) -> bool:
        """Whether this load is the one asked for (same paths and options), so that it can be taken over."""
        return (
            list(paths) == self.paths
            and use_cache == self.use_cache
            and include_python == self.include_python
            and not self._cancelled.is_set()
        )

    def _report(self, done: int, total: int, events: int) -> None:
        if self._cancelled.is_set():
            raise LoadCancelled()
        self.progress = (done, total, events)

    def _run(self) -> None:
        from gputop_trace.load.loader import load_paths
        from gputop_trace.load.resources import check_paths

        try:
            check_paths(self.paths, self.max_memory)  # refuse what cannot fit, before any parsing
            self._trace = load_paths(
                self.paths, progress=self._report, use_cache=self.use_cache, include_python=self.include_python
            )
            if self._then is not None and not self._cancelled.is_set():
                self._then_result = self._then(self._trace)
        except BaseException as e:  # handed to whoever waits, on its own thread
            self._error = e
        finally:
            _switch.exit()
            self._done.set()

    def wait(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds; True once the load has finished (or failed)."""
        return self._done.wait(timeout)

    def cancel(self) -> None:
        """Ask the load to stop (it does at its next progress report, within about a megabyte of input)."""
        self._cancelled.set()

    def result(self) -> Trace:
        """The loaded trace, once :meth:`wait` returned True; raises what the load raised."""
        if not self._done.is_set():
            raise RuntimeError("the load has not finished")
        if self._error is not None:
            raise self._error
        assert self._trace is not None
        self.progress = (self.progress[0], self.progress[1], len(self._trace))
        return self._trace

    def then_result(self) -> T | None:
        """What ``then`` returned, once :meth:`result` returned the trace (None without ``then``)."""
        return self._then_result
