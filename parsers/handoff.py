"""Handing items from a producer thread to a consumer through a queue that a stop event can interrupt: a put or a
get that has to wait gives up once the event is set (looked at every :data:`POLL_S` seconds), so that closing a
reader never hangs on a full or an empty queue. Imports nothing heavy (the opening of a trace uses it)."""

from __future__ import annotations

import queue
import threading
from typing import TypeVar

T = TypeVar("T")

#: seconds between looks at the stop event while a put or a get waits
POLL_S = 0.05


def put_unless_stopped(q: queue.Queue[T], item: T, stop: threading.Event) -> bool:
    """Put ``item`` into ``q``, waiting for room; False (not put) once ``stop`` is set."""
    while not stop.is_set():
        try:
            q.put(item, timeout=POLL_S)
            return True
        except queue.Full:
            continue
    return False


def get_unless_stopped(q: queue.Queue[T], stop: threading.Event) -> T | None:
    """The next item of ``q``, waiting for one; None once ``stop`` is set."""
    while not stop.is_set():
        try:
            return q.get(timeout=POLL_S)
        except queue.Empty:
            continue
    return None


__all__ = ["POLL_S", "get_unless_stopped", "put_unless_stopped"]
