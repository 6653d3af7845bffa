"""Reading ahead: the stream of decoded chunks produced on a second thread while the loader turns the previous
chunks into columns.

The producer thread reads the file (a gzip file inflated ahead by :mod:`~gputop_trace.parsers.inflate_ahead` on a
thread of its own; zlib and ISA-L release the GIL while they inflate), finds the element boundaries and runs the
compiled scanner (which releases the GIL too), so with the compiled path that work leaves the loader's thread:
gzip is off the critical path. At most :data:`DEPTH` chunks wait in the queue
(a few MiB), so memory does not grow with the file. Errors and cancellation (``LoadCancelled`` from a progress
callback) raised on the producer are raised again in the consumer, and a consumer that stops early stops the
producer. ``GPUTOP_READ_AHEAD=0`` reads on the loader's thread.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Generator
from typing import Any

from gputop_trace.parsers.chrome.stream import stream_events
from gputop_trace.parsers.chrome.structs import Chunk, DocumentInfo
from gputop_trace.parsers.source import ByteStream

#: chunks (of ~1 MiB of JSON each) that may wait between the producer and the loader
DEPTH = 4
READ_AHEAD_ENV = "GPUTOP_READ_AHEAD"


def enabled() -> bool:
    """Whether chunks are read ahead on a second thread (default: yes; ``GPUTOP_READ_AHEAD=0``: no)."""
    return os.environ.get(READ_AHEAD_ENV, "1") not in ("0", "false", "no")


def chunks(src: ByteStream, info: DocumentInfo) -> Generator[Chunk, None, None]:
    """:func:`~gputop_trace.parsers.chrome.stream.stream_events`, read ahead on a second thread when
    :func:`enabled` (``info`` is complete once the iterator is exhausted)."""
    if not enabled():
        yield from stream_events(src, info)
        return
    q: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=DEPTH)
    stop = threading.Event()

    def put(item: tuple[str, Any]) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for chunk in stream_events(src, info):
                if not put(("chunk", chunk)):
                    return
            put(("end", None))
        except BaseException as e:
            put(("error", e))

    thread = threading.Thread(target=produce, name="gputop-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            kind, item = q.get()
            if kind == "chunk":
                yield item
            elif kind == "end":
                return
            else:
                raise item
    finally:
        stop.set()
        thread.join()
