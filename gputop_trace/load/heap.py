"""How the C library's allocator keeps memory while a trace loads (glibc only; elsewhere these do nothing).

A load allocates and frees pieces of a few hundred KB to a few MB over and over: inflated gzip pieces, numpy
columns of each chunk. glibc maps allocations above a threshold (128 KiB at first, raised as it sees them freed)
on their own and unmaps them when they are freed, and gives the free top of its heaps back to the system once it
passes another threshold. Either way the next piece lands on fresh pages, and the first touch of a page is a page
fault: on the virtual machines this runs on (CI, cloud GPU boxes) faults are slow, and they were a quarter of the
load of a gzip trace. :func:`keep_freed_memory` raises both thresholds (to the 32 MiB glibc's own scheme raises
the first one to at most, and 128 MiB for the second), so freed pieces are reused; :func:`give_back_free_memory`
returns what is free to the system once a file is read (``malloc_trim``), so the process does not stay larger
than the trace it holds.

A load's threads (the gzip inflater, the read-ahead, the scanning threads) are new for each file, and glibc gives
a new thread an arena of its own: memory one thread frees is reused by that thread only, and a new thread starts
on fresh pages (about 3,000 more page faults in a load of the shared 26 MB epoch trace). The tuning also limits
the process to one arena, which the threads share: its lock is taken per ``malloc`` of a large piece (the
Python objects of each thread come from Python's own allocator), not per event. The limit holds for the rest of
the process (glibc fixes it once it has made its first arenas); a program that loads traces from many
allocation-heavy threads of its own can set ``GPUTOP_KEEP_HEAP=0``, which leaves the allocator alone. Sizes in
bytes.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import os
import sys
import threading
from collections.abc import Iterator
from typing import Any

#: mallopt parameters (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
#: arenas the process may have: the threads of a load share the main one
ARENA_MAX = 1
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 128 << 20
ENV = "GPUTOP_KEEP_HEAP"

#: whether keep_freed_memory tuned the allocator (once per process)
_state = {"tuned": False}


@functools.cache
def _glibc() -> Any:
    """The C library when it is glibc (its mallopt and malloc_trim) and tuning is not turned off; else None."""
    if not sys.platform.startswith("linux") or os.environ.get(ENV, "1") in ("0", "false", "no"):
        return None
    try:
        lib = ctypes.CDLL(None)  # the process's own symbols: its C library's among them
    except OSError:  # pragma: no cover - a process without a dynamic loader
        return None
    if all(hasattr(lib, f) for f in ("mallopt", "malloc_trim", "gnu_get_libc_version")):
        return lib
    return None  # pragma: no cover - musl and other C libraries


def keep_freed_memory() -> bool:
    """Let freed memory be reused instead of unmapped (once per process); whether the allocator is tuned."""
    lib = _glibc()
    if lib is None:
        return False
    if not _state["tuned"]:
        _state["tuned"] = all(
            bool(lib.mallopt(param, value))
            for param, value in (
                (_M_MMAP_THRESHOLD, MMAP_THRESHOLD),
                (_M_TRIM_THRESHOLD, TRIM_THRESHOLD),
                (_M_ARENA_MAX, ARENA_MAX),
            )
        )
    return _state["tuned"]


def pause_gc() -> bool:
    """Turn Python's cyclic garbage collector off for a load; whether it was on (the caller turns it on again).

    A load makes few objects that could form cycles, but importing the parser and decoding the rare events make
    enough objects of any kind to set off several collections, each of which walks every object of the process.
    The objects a load makes are freed by reference counting as before; what little cyclic garbage it leaves is
    collected once the collector is on again. ``GPUTOP_KEEP_HEAP=0`` leaves the collector alone too."""
    if os.environ.get(ENV, "1") in ("0", "false", "no") or not gc.isenabled():
        return False
    gc.disable()
    return True


def give_back_free_memory(*, wait: bool = True) -> None:
    """Return the allocator's free memory to the system (after a load: what it kept for reuse). ``wait=False``
    does it on a thread of its own (it walks the whole heap: 2 ms after a load of 26 MB, on the load's critical
    path otherwise; ctypes lets go of the GIL for the call, and the C library's own lock keeps the heap whole)."""
    lib = _glibc()
    if lib is None:
        return
    if wait:
        lib.malloc_trim(0)
    else:
        threading.Thread(target=lib.malloc_trim, args=(0,), name="gputop-trim", daemon=True).start()


@contextlib.contextmanager
def while_loading() -> Iterator[None]:
    """The allocator tuned and the collector paused for the time of one load; afterwards the collector is on
    again (where it was) and the free memory given back."""
    keep_freed_memory()
    paused = pause_gc()
    try:
        yield
    finally:
        if paused:
            gc.enable()
        give_back_free_memory(wait=False)


__all__ = ["give_back_free_memory", "keep_freed_memory", "pause_gc", "while_loading"]
