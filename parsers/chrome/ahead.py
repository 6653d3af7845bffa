"""Reading ahead: the stream of decoded chunks produced on a second thread while the loader turns the previous
chunks into columns.

The producer thread reads the file (a gzip file inflated ahead by :mod:`~gputop_trace.parsers.inflate_ahead` on a
thread of its own; zlib and ISA-L release the GIL while they inflate), finds the element boundaries and runs the
compiled scanner (which releases the GIL too), so with the compiled path that work leaves the loader's thread:
gzip is off the critical path. At most :data:`DEPTH` chunks wait in the queue
(a few MiB), so memory does not grow with the file. Errors and cancellation (``LoadCancelled`` from a progress
callback) raised on the producer are raised again in the consumer, and a consumer that stops early (or
:meth:`ReadAhead.close`) stops the producer. ``GPUTOP_READ_AHEAD=0`` reads on the loader's thread.

This module and what the producer runs first import nothing heavy, so that :mod:`~gputop_trace.parsers.chrome.
opening` can start the producer before the rest of the parser is imported.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Generator
from typing import Any

from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.document import Chunk, DocumentInfo
from gputop_trace.parsers.chrome.parallel_scan import scan_threads
from gputop_trace.parsers.chrome.stream import stream_events
from gputop_trace.parsers.handoff import put_unless_stopped
from gputop_trace.parsers.source import ByteStream

#: chunks (of up to 4 MiB of JSON each) that may wait between the producer and the loader; at least two windows'
#: parts where a window is scanned in more parts than that (:func:`depth`)
DEPTH = 4
READ_AHEAD_ENV = "GPUTOP_READ_AHEAD"


def enabled() -> bool:
    """Whether chunks are read ahead on a second thread (default: yes; ``GPUTOP_READ_AHEAD=0``: no)."""
    return os.environ.get(READ_AHEAD_ENV, "1") not in ("0", "false", "no")


def depth() -> int:
    """How many chunks may wait: :data:`DEPTH`, or two windows' parts (one per scanning thread) where that is more.
    The producer puts a window's parts in the queue, then reads and scans the next window; with room for only
    four of eight parts it could start on the next window only once the loader had taken half of them, and the
    loader, whose thread is the limit there, would wait for it at every window."""
    return max(DEPTH, 2 * scan_threads()) if scanner.enabled() else DEPTH


class ReadAhead:
    """:func:`~gputop_trace.parsers.chrome.stream.stream_events` of ``src``, produced on a second thread from
    the moment this is made when :func:`enabled` (else on the consumer's thread as it iterates). Iterate it once;
    ``info`` is complete once the iteration ends. :meth:`close` stops the producer (iterating to the end, or
    stopping early, closes it too)."""

    def __init__(self, src: ByteStream, info: DocumentInfo) -> None:
        self.src = src
        self.info = info
        self._q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=depth())
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if enabled():
            self._thread = threading.Thread(target=self._produce, name="gputop-read-ahead", daemon=True)
            self._thread.start()

    def _put(self, item: tuple[str, Any]) -> bool:
        return put_unless_stopped(self._q, item, self._stop)

    def _produce(self) -> None:
        try:
            for chunk in stream_events(self.src, self.info):
                if not self._put(("chunk", chunk)):
                    return
            self._put(("end", None))
        except BaseException as e:
            self._put(("error", e))

    def __iter__(self) -> Generator[Chunk, None, None]:
        if self._thread is None:
            yield from stream_events(self.src, self.info)
            return
        try:
            while True:
                kind, item = self._q.get()
                if kind == "chunk":
                    yield item
                elif kind == "end":
                    return
                else:
                    raise item
        finally:
            self.close()

    def close(self) -> None:
        """Stop the producer and wait for it (no chunk is made after this returns)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
