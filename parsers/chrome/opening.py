"""Opening a Chrome trace: the file, its gzip inflater, and the read-ahead thread that streams its events, started
before the rest of the parser is imported.

Importing the parser (msgspec, the typed structs and decoders, the column builders) takes about 25 ms of a load
of a few tens of MB, and the first window of the file (inflated and scanned) about as long. :func:`open_trace`
imports only what the first window needs (the file reader, the inflater, the streamer and the compiled scanner's
raw scan, which release the GIL while they work), starts reading, and returns; the caller then imports
:mod:`~gputop_trace.parsers.chrome.loader` and hands the :class:`Opened` trace to its ``load``, so the two
overlap. Without the compiled scanner (or with ``GPUTOP_PURE_PYTHON=1``) the streamer imports the decoders itself
as it starts; the model is the same either way.
"""

from __future__ import annotations

from collections.abc import Callable

from gputop_trace.parsers import inflate_ahead
from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.ahead import ReadAhead
from gputop_trace.parsers.chrome.ahead import enabled as ahead_enabled
from gputop_trace.parsers.chrome.document import DocumentInfo
from gputop_trace.parsers.inflate_ahead import InflateAhead
from gputop_trace.parsers.source import ByteStream


class Opened:
    """A Chrome trace being read: ``raw`` (the file), ``src`` (what the streamer reads: ``raw``, or its gzip
    inflated ahead), ``info`` (filled as the events stream) and ``chunks`` (the decoded chunks, read ahead).
    ``on_read`` (bytes read from disk so far), once set, is called as the file is read."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.on_read: Callable[[int], None] | None = None
        self.raw = ByteStream(path, on_read=self._read)
        self.ahead: InflateAhead | None = None
        try:
            # gzip inflated on a thread of its own, off the scanner's, where there are cores for it (InflateAhead
            # reads like the stream it wraps); else the streamer inflates straight into its window
            self.ahead = (
                InflateAhead(self.raw) if self.raw.gzip and ahead_enabled() and inflate_ahead.worthwhile() else None
            )
            self.src: ByteStream = self.ahead if self.ahead is not None else self.raw  # type: ignore[assignment]
            self.info = DocumentInfo()
            self.chunks = ReadAhead(self.src, self.info)
        except BaseException:
            self.close()
            raise

    def _read(self, nbytes: int) -> None:
        if self.on_read is not None:
            self.on_read(nbytes)

    def close(self) -> None:
        """Stop the threads, close the file and free the scanner's pooled memory (safe to call twice)."""
        chunks = getattr(self, "chunks", None)
        if chunks is not None:
            chunks.close()
        if self.ahead is not None:
            self.ahead.close()
        self.raw.close()
        scanner.release_memory()


def open_trace(path: str) -> Opened:
    """Open ``path`` and start reading its events (raises what :class:`~gputop_trace.parsers.source.ByteStream`
    raises for a file that cannot be opened)."""
    return Opened(path)


__all__ = ["Opened", "open_trace"]
