"""Inflating ahead: a gzip :class:`~gputop_trace.parsers.source.ByteStream` inflated on a thread of its own, so
that inflating (zlib and ISA-L release the GIL) overlaps the scan of the previous bytes instead of adding to it.

:class:`InflateAhead` reads and reports like the stream it wraps (``read``, ``readinto``, ``eof``, ``truncated``,
``corrupt``, ``bytes_out``, ...). At most :data:`DEPTH` pieces of up to
:data:`~gputop_trace.parsers.source.INFLATE_PIECE` bytes wait between the inflater and the reader, so memory
does not grow with the file. An error raised on the inflater (``LoadCancelled`` from a progress callback, an OS
error) is raised again in the reader; closing stops the inflater. Sizes in bytes.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from gputop_trace.parsers.source import ByteStream

#: pieces (as the wrapped stream inflates them: at most source.INFLATE_PIECE bytes each) that may wait
DEPTH = 4


class InflateAhead:
    """``src`` (gzip) read by a thread that inflates ahead of the reader."""

    def __init__(self, src: ByteStream) -> None:
        self.src = src
        self.path = src.path
        self.gzip = src.gzip
        self.file_size = src.file_size
        self.bytes_out = 0  # bytes handed to the reader (the wrapped stream has inflated more)
        self.eof = False  # the reader has had every byte
        self._q: queue.Queue[bytes | BaseException | None] = queue.Queue(maxsize=DEPTH)
        self._stop = threading.Event()
        self._left = b""
        self._left_pos = 0
        self._thread = threading.Thread(target=self._inflate, name="gputop-inflate", daemon=True)
        self._thread.start()

    # -- the inflater thread --------------------------------------------------------------------------------
    def _put(self, item: bytes | BaseException | None) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def _inflate(self) -> None:
        try:
            while not self._stop.is_set():
                data = self.src.read_piece()  # as inflated (no joining into pieces of another size)
                if not data:
                    break
                if not self._put(data):
                    return
            self._put(None)
        except BaseException as e:  # handed to the reader, which raises it
            self._put(e)

    # -- the reader ---------------------------------------------------------------------------------------
    def _more(self) -> bool:
        """The next piece into ``_left``; False at the end."""
        if self.eof:
            return False
        item = self._q.get()
        if item is None:
            self.eof = True
            return False
        if isinstance(item, BaseException):
            self.eof = True
            raise item
        self._left, self._left_pos = item, 0
        return True

    def read(self, want: int) -> bytes:
        """About ``want`` more decompressed bytes (fewer only at the end); ``b""`` once exhausted."""
        parts: list[bytes] = []
        got = 0
        while got < want:
            if self._left_pos >= len(self._left) and not self._more():
                break
            take = self._left[self._left_pos : self._left_pos + want - got]
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
            with memoryview(self._left) as left:  # one copy, straight from the inflated piece (no bytes slice)
                view[got : got + n] = left[self._left_pos : self._left_pos + n]
            got += n
            self._left_pos += n
        self.bytes_out += got
        return got

    def close(self) -> None:
        """Stop the inflater (the wrapped stream is closed by its owner)."""
        self._stop.set()
        self._thread.join()

    def __getattr__(self, name: str) -> Any:  # truncated, corrupt, members, bytes_in: the wrapped stream's
        return getattr(self.src, name)
