"""Inflating ahead: a gzip :class:`~gputop_trace.parsers.source.ByteStream` inflated on a thread of its own, so
that inflating (zlib and ISA-L release the GIL) overlaps the scan of the previous bytes instead of adding to it.

:class:`InflateAhead` reads and reports like the stream it wraps (``read``, ``readinto``, ``eof``, ``truncated``,
``corrupt``, ``bytes_out``, ...). At most :data:`DEPTH` pieces of :data:`PIECE` bytes wait between the inflater
and the reader, so memory does not grow with the file. An error raised on the inflater (``LoadCancelled`` from a
progress callback, an OS error) is raised again in the reader; closing stops the inflater. Sizes in bytes.
"""

from __future__ import annotations

import os
import queue
import threading
from typing import Any

from gputop_trace.parsers.cores import usable_cores
from gputop_trace.parsers.handoff import get_unless_stopped, put_unless_stopped
from gputop_trace.parsers.source import ByteStream

#: the inflater gets a thread of its own only where the process may use at least this many cores (the loading
#: thread, the scanning threads and the inflater would share fewer): on 2 cores the thread bought no overlap, as
#: every core was busy anyway, and cost a copy of every inflated byte and the faults of its buffers, so the shared
#: 26 MB epoch trace loaded 8-9 % faster inflated on the reading thread (straight into its window); on 4 cores the
#: two ways were even, and on 16 the thread gained 3 %
MIN_CORES = 4
#: ``1`` inflates ahead whatever the cores, ``0`` never (tests, benchmarks); unset: by :data:`MIN_CORES`
ENV = "GPUTOP_INFLATE_AHEAD"
#: pieces that may wait between the inflater and the reader
DEPTH = 4
#: bytes of one piece: the inflater fills a buffer of this size (the last piece of a file may be shorter)
PIECE = 512 << 10


def worthwhile() -> bool:
    """Whether a gzip file is inflated on a thread of its own (:data:`ENV`, else at least :data:`MIN_CORES`)."""
    forced = os.environ.get(ENV, "")
    if forced in ("0", "1"):
        return forced == "1"
    return usable_cores() >= MIN_CORES


def copy_bytes(dst: memoryview, at: int, src: memoryview, src_at: int, n: int) -> None:
    """``dst[at:at + n] = src[src_at:src_at + n]``, with the GIL released while the bytes move.

    numpy's copy releases it; a memoryview assignment holds it for the whole copy. The reader copies every
    inflated byte once (a window of the stream takes several MiB at a time), and while it held the GIL the
    loading thread, turning the chunks scanned before into columns, stood still."""
    import numpy as np  # (imported by the model before any file is read)

    np.copyto(np.frombuffer(dst, np.uint8, n, at), np.frombuffer(src, np.uint8, n, src_at))


class InflateAhead:
    """``src`` (gzip) read by a thread that inflates ahead of the reader.

    The inflater fills buffers of :data:`PIECE` bytes with ``src.readinto`` and hands them over; the reader gives
    each one back once it has copied it out. The same :data:`DEPTH` + 2 buffers go round for the whole file: memory
    written once, not a fresh piece per step (on a virtual machine the first touch of every page is a slow fault,
    and pieces freed by the reader's thread were not reused by the inflater's: a 26 MB trace took 3,500 faults to
    inflate, against 900 with its pieces on one thread)."""

    def __init__(self, src: ByteStream) -> None:
        self.src = src
        self.path = src.path
        self.gzip = src.gzip
        self.file_size = src.file_size
        self.bytes_out = 0  # bytes handed to the reader (the wrapped stream has inflated more)
        self.eof = False  # the reader has had every byte
        self._q: queue.Queue[tuple[bytearray, int] | BaseException | None] = queue.Queue(maxsize=DEPTH)
        self._free: queue.Queue[bytearray] = queue.Queue()
        self._made = 0  # buffers made so far (by the inflater, as it first needs them: off the opening thread)
        self._stop = threading.Event()
        self._held: bytearray | None = None  # the buffer the reader is copying out of
        self._left = memoryview(b"")
        self._left_pos = 0
        self._thread = threading.Thread(target=self._inflate, name="gputop-inflate", daemon=True)
        self._thread.start()

    # -- the inflater thread --------------------------------------------------------------------------------
    def _put(self, item: tuple[bytearray, int] | BaseException | None) -> bool:
        return put_unless_stopped(self._q, item, self._stop)

    def _take_free(self) -> bytearray | None:
        if self._made < DEPTH + 2:  # DEPTH waiting, one being filled, one being read
            self._made += 1
            return bytearray(PIECE)
        return get_unless_stopped(self._free, self._stop)

    def _inflate(self) -> None:
        try:
            while not self._stop.is_set():
                buf = self._take_free()
                if buf is None:
                    return
                with memoryview(buf) as view:
                    n = self.src.readinto(view)
                if not n:
                    break
                if not self._put((buf, n)):
                    return
            self._put(None)
        except BaseException as e:  # handed to the reader, which raises it
            self._put(e)

    # -- the reader ---------------------------------------------------------------------------------------
    def _more(self) -> bool:
        """The next piece into ``_left`` (the one read before goes back to the inflater); False at the end."""
        self._left.release()
        self._left, self._left_pos = memoryview(b""), 0
        if self._held is not None:
            self._free.put(self._held)
            self._held = None
        if self.eof:
            return False
        item = self._q.get()
        if item is None:
            self.eof = True
            return False
        if isinstance(item, BaseException):
            self.eof = True
            raise item
        self._held, n = item
        self._left = memoryview(self._held)[:n]
        return True

    def read(self, want: int) -> bytes:
        """About ``want`` more decompressed bytes (fewer only at the end); ``b""`` once exhausted."""
        parts: list[bytes] = []
        got = 0
        while got < want:
            if self._left_pos >= len(self._left) and not self._more():
                break
            take = bytes(self._left[self._left_pos : self._left_pos + want - got])
            self._left_pos += len(take)
            parts.append(take)
            got += len(take)
        self.bytes_out += got
        return b"".join(parts)

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` with decompressed bytes (fewer only at the end); returns how many; 0 once exhausted."""
        got = 0
        want = len(view)
        while got < want:
            if self._left_pos >= len(self._left) and not self._more():
                break
            n = min(want - got, len(self._left) - self._left_pos)
            copy_bytes(view, got, self._left, self._left_pos, n)
            got += n
            self._left_pos += n
        self.bytes_out += got
        return got

    def close(self) -> None:
        """Stop the inflater and give its buffers back to the heap (the wrapped stream is closed by its owner)."""
        self._stop.set()
        self._thread.join()
        self._left.release()
        self._held = None
        self._free = queue.Queue()
        self._q = queue.Queue()

    def __getattr__(self, name: str) -> Any:  # truncated, corrupt, bytes_in: the wrapped stream's
        return getattr(self.src, name)
