"""Reading a trace file as a stream of decompressed bytes, gzip sniffed by magic bytes.

Gzip is inflated incrementally (ISA-L when the optional ``isal`` package is installed, else zlib), so a
gigabyte trace never has to sit in memory twice. A file cut short, a bad checksum and concatenated gzip members
are handled here and reported through :class:`ByteStream`'s attributes, not exceptions, so the JSON layer can
still recover every complete event that was read.

With ISA-L, a gzip file is first read by ISA-L's own gzip reader (``isal_zlib._GzipReader``), which inflates
each piece straight into the bytes object it returns. The step-by-step inflater (``decompressobj``) hands out
each piece through a list of growing blocks joined at the end: twice the memory written per byte, and on a
virtual machine, where every first touch of a page is a slow fault, that cost as much as inflating (a 26 MB
trace: 2,300 page faults and 17 ms, against 500 and 8 ms). The reader stops with an exception at a cut or damage
and loses the piece it was inflating then, so at the first error the file is inflated again from its start by the
step-by-step inflater, which skips the bytes already handed out and goes on to tell what is wrong and recover what
can be: a damaged file reads exactly as before, a sound one never takes that path. ISA-L's reader is a private
name of the ``isal`` package; where it is missing, everything takes the step-by-step path.
"""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable
from io import BufferedReader
from types import ModuleType
from typing import Any

from gputop_trace.errors import TraceError

GZIP_MAGIC = b"\x1f\x8b"
SQLITE_MAGIC = b"SQLite format 3\x00"
READ_BLOCK = 256 << 10  # compressed bytes read per step
#: decompressed bytes one inflate step gives at most (the rest of its input waits for the next step): a bound on
#: memory whatever the compression ratio (64 KiB of zeros inflate to 64 MiB), and pieces of one size, whose
#: memory the C library reuses from one piece to the next instead of mapping fresh pages for each (a page fault
#: each: a third of inflating was faults on a virtual machine)
INFLATE_PIECE = 1 << 20

#: A parser's progress callback: ``(bytes read, total bytes, events so far)``.
Progress = Callable[[int, int, int], None]


def _inflater() -> ModuleType:
    try:
        import isal.isal_zlib as fast  # type: ignore[import-not-found,unused-ignore]

        return fast  # type: ignore[no-any-return]
    except ImportError:  # pragma: no cover - depends on the environment
        return zlib


def _gzip_reader() -> Callable[..., Any] | None:
    """ISA-L's gzip reader class (``_GzipReader(fp, buffersize)``: ``read(n)`` inflates up to ``n`` bytes into a
    new bytes object, reading ``fp`` through its ``readinto``), or None without it."""
    reader = getattr(_inflater(), "_GzipReader", None)
    return reader if callable(reader) else None


class _CountedFile:
    """The compressed file as ISA-L's reader reads it: the bytes counted for progress, and an error raised while
    reading (a progress callback's ``LoadCancelled``, an OS error) remembered, so that it is not taken for damage
    in the data."""

    def __init__(self, stream: ByteStream) -> None:
        self._stream = stream
        self.raised = False

    def readinto(self, view: memoryview) -> int:
        try:
            n: int = self._stream._f.readinto(view)
            self._stream._count_in(n)
            return n
        except BaseException:
            self.raised = True
            raise

    def read(self, n: int = -1) -> bytes:  # (the reader tells a file from a buffer by this method; reads readinto)
        try:
            data: bytes = self._stream._f.read(n)
            self._stream._count_in(len(data))
            return data
        except BaseException:
            self.raised = True
            raise


def open_checked(path: str) -> BufferedReader:
    """Open a file for reading, turning OS errors into a :class:`TraceError` that says what to do."""
    try:
        if os.path.isdir(path):
            raise TraceError(f"{path} is a directory, not a trace file.", path=path)
        mode = os.stat(path).st_mode  # never blocks, unlike opening a pipe that nobody writes to
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise TraceError(
                f"{path} is a pipe, not a file (for example <(...) or a named pipe). gputop-trace reads a trace "
                "more than once (to sniff its format, to recover a cut-off end, to reopen it from the cache): save "
                "it to a file first, e.g. ssh host cat trace.json.gz > trace.json.gz",
                path=path,
            )
        return open(path, "rb")
    except FileNotFoundError:
        if path == "-":
            raise TraceError(
                "Reading a trace from standard input is not supported: give the path of the trace file "
                "(save a streamed trace to a file first).",
                path=path,
            ) from None
        raise TraceError(
            f"No such file: {path}. Check the path (it is resolved from {os.getcwd()}).", path=path
        ) from None
    except PermissionError:
        raise TraceError(
            f"Permission denied reading {path}. Ask its owner to make it readable (chmod o+r) or copy it "
            "somewhere you can read.",
            path=path,
        ) from None
    except IsADirectoryError:
        raise TraceError(f"{path} is a directory, not a trace file.", path=path) from None
    except OSError as e:
        raise TraceError(f"Could not read {path}: {e.strerror or e}.", path=path) from None


def read_head(path: str, n: int = 64) -> bytes:
    """The first ``n`` bytes of a file (for sniffing)."""
    with open_checked(path) as f:
        return f.read(n)


class ByteStream:
    """Decompressed bytes of a file, read block by block.

    After the stream is exhausted: ``truncated`` is True when a gzip stream ended before its end marker;
    ``corrupt`` holds a description when inflating failed (bad checksum, bad data); ``bytes_out`` is the number
    of decompressed bytes handed out; ``bytes_in`` the number of bytes read from the file (it never goes back).
    """

    def __init__(self, path: str, *, on_read: Callable[[int], None] | None = None) -> None:
        self.path = path
        self.file_size = os.path.getsize(path)
        self._f = open_checked(path)
        head = self._f.read(2)
        self._f.seek(0)
        self.gzip = head == GZIP_MAGIC
        self._zlib = _inflater()
        self._dec = self._zlib.decompressobj(47) if self.gzip else None  # 47 = gzip or zlib header, auto
        self._pending = b""
        self._tail = b""  # compressed input not inflated yet (an inflate step gives at most INFLATE_PIECE bytes)
        self.truncated = False
        self.corrupt: str | None = None
        self.bytes_in = 0
        self.bytes_out = 0
        self._read_in = 0  # bytes of the file read (again from 0 when the step-by-step inflater takes over)
        self._inflated = 0  # bytes the inflate steps have given (handed out, or waiting in _left)
        self._skip = 0  # bytes the step-by-step inflater drops: ISA-L's reader handed them out already
        reader = _gzip_reader() if self.gzip else None
        self._counted = _CountedFile(self) if reader is not None else None
        self._direct: Any = reader(self._counted, READ_BLOCK) if reader is not None else None
        self.eof = False
        self._on_read = on_read
        self._left = b""  # inflated bytes not handed out yet (read, readinto)
        self._left_pos = 0

    def close(self) -> None:
        """Close the file."""
        self._f.close()

    def __enter__(self) -> ByteStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def read(self, want: int) -> bytes:
        """Up to ``want`` more decompressed bytes (fewer where fewer are at hand: the rest of an inflate step, the
        end of the file); ``b""`` once exhausted."""
        if self._left:
            data = self._left[self._left_pos : self._left_pos + want]
            self._left_pos += len(data)
            if self._left_pos >= len(self._left):
                self._left = b""
            self.bytes_out += len(data)
            return data
        if self.eof:
            return b""
        if not self.gzip:
            data = self._f.read(want)
            self.bytes_in += len(data)
            self.bytes_out += len(data)
            if self._on_read:
                self._on_read(self.bytes_in)
            if not data:
                self.eof = True
            return data
        parts: list[bytes] = []
        got = 0
        while got < want and not self.eof:
            out = self._inflate_step()
            if out:
                parts.append(out)
                got += len(out)
        data = b"".join(parts)
        if len(data) > want:  # an inflate step may give much more than asked: the rest waits in _left
            self._left, self._left_pos = data[want:], 0
            data = data[:want]
        self.bytes_out += len(data)
        return data

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` with decompressed bytes (fewer only at the end); returns how many; 0 once exhausted."""
        if not self.gzip:
            if self.eof:
                return 0
            got = 0
            while got < len(view):
                n = self._f.readinto(view[got:])
                if not n:
                    self.eof = True
                    break
                got += n
            self.bytes_in += got
            self.bytes_out += got
            if self._on_read:
                self._on_read(self.bytes_in)
            return got
        got = 0
        want = len(view)
        while got < want:
            if not self._left:
                if self.eof:
                    break
                if self._direct is not None:  # straight into the view
                    n = self._direct_into(view[got:])
                    got += n
                    continue
                self._left = self._inflate_step()
                self._left_pos = 0
                continue
            n = min(want - got, len(self._left) - self._left_pos)
            view[got : got + n] = self._left[self._left_pos : self._left_pos + n]
            got += n
            self._left_pos += n
            if self._left_pos == len(self._left):
                self._left = b""
        self.bytes_out += got
        return got

    def _salvage(self, piece: int = 1 << 14) -> bytes:
        """After an inflate error: inflate the file again with zlib in small pieces and return the good bytes
        that came after what the inflate steps already gave (the failing block's output is otherwise lost)."""
        skip = self._inflated
        self._skip = 0  # what this returns starts right after what was given, wherever the steps had got to
        parts: list[bytes] = []
        produced = 0
        dec = zlib.decompressobj(47)
        with open(self.path, "rb") as f:
            while True:
                block = f.read(piece)
                if not block:
                    break
                try:
                    out = dec.decompress(block)
                except zlib.error:
                    break
                while dec.eof and dec.unused_data[:2] == GZIP_MAGIC:
                    rest = dec.unused_data
                    dec = zlib.decompressobj(47)
                    try:
                        out += dec.decompress(rest)
                    except zlib.error:
                        break
                lo = max(0, skip - produced)
                if lo < len(out):
                    parts.append(out[lo:])
                produced += len(out)
        return b"".join(parts)

    def read_piece(self) -> bytes:
        """The next decompressed bytes as they come (one inflate step's output for gzip, at most
        :data:`INFLATE_PIECE`; a :data:`INFLATE_PIECE` read for a plain file); ``b""`` once exhausted."""
        if not self.gzip or self._left:
            return self.read(INFLATE_PIECE)
        data = b""
        while not data and not self.eof:
            data = self._inflate_step()
        self.bytes_out += len(data)
        return data

    def _count_in(self, n: int) -> None:
        """``n`` more bytes read from the file (progress is reported once the count passes what was read before
        the step-by-step inflater took over)."""
        self._read_in += n
        if self._read_in > self.bytes_in:
            self.bytes_in = self._read_in
            if self._on_read:
                self._on_read(self.bytes_in)

    def _inflate_step(self) -> bytes:
        """The next inflated piece (at most :data:`INFLATE_PIECE` bytes; empty at the end, or when one step gave
        nothing)."""
        out = self._direct_step() if self._direct is not None else self._stepwise()
        self._inflated += len(out)
        return out

    def _direct_step(self) -> bytes:
        """A piece from ISA-L's reader; at a cut or damage the step-by-step inflater takes over from the start."""
        try:
            out: bytes = self._direct.read(INFLATE_PIECE)
        except Exception as e:
            self._fall_back(e)
            return self._stepwise()
        if not out:
            self.eof = True
        return out

    def _direct_into(self, view: memoryview) -> int:
        """ISA-L's reader inflating into ``view``: how many bytes it wrote (0 at the end, or when the step-by-step
        inflater took over at a cut or damage: the caller goes on with it)."""
        try:
            n: int = self._direct.readinto(view)
        except Exception as e:
            self._fall_back(e)
            return 0
        if not n:
            self.eof = True
        self._inflated += n
        return n

    def _fall_back(self, error: Exception) -> None:
        """ISA-L's reader raised ``error``: unless the file or a progress callback raised it (it is raised again),
        the step-by-step inflater starts again from the start of the file, past what was handed out."""
        assert self._counted is not None
        if self._counted.raised:  # not the data: the file could not be read, or the load was cancelled
            raise error
        # EOFError (cut short, or bytes that are not gzip after a member), BadGzipFile (checksum), isal's error
        self._direct = None
        self._f.seek(0)
        self._read_in = 0
        self._skip = self._inflated

    def _stepwise(self) -> bytes:
        """A piece from the step-by-step inflater, less the bytes ISA-L's reader handed out before it failed."""
        while True:
            out = self._stepwise_piece()
            if not self._skip:
                return out
            drop = min(self._skip, len(out))
            self._skip -= drop
            if drop < len(out) or self.eof:
                return out[drop:]

    def _stepwise_piece(self) -> bytes:
        assert self._dec is not None
        tail = False
        if self._tail:  # input the previous step left unread (its output reached INFLATE_PIECE)
            block, self._tail, tail = self._tail, b"", True
        elif self._pending:
            block, self._pending = self._pending, b""
        else:
            block = self._f.read(READ_BLOCK)
            self._count_in(len(block))
        if not block:
            if not self._dec.eof:
                self.truncated = True
            self.eof = True
            return b""
        if not tail and self._f.tell() >= self.file_size and len(block) > 8 and not self._pending:
            # feed a member's 8-byte trailer (CRC, size) on its own, so that a bad checksum cannot take the
            # last block's data down with it
            block, self._pending = block[:-8], block[-8:]
        try:
            out: bytes = self._dec.decompress(block, INFLATE_PIECE)
            self._tail = self._dec.unconsumed_tail
        except (zlib.error, self._zlib.error, OSError) as e:  # isal raises its own error type
            self.corrupt = _describe_inflate_error(e)
            self.eof = True
            return self._salvage()
        if self._dec.eof:
            rest = self._dec.unused_data
            if rest.lstrip(b"\x00"):
                if rest[:2] == GZIP_MAGIC:
                    self._dec = self._zlib.decompressobj(47)
                    self._pending = rest + self._pending  # the held-back trailer belongs to the next member
                else:
                    self.corrupt = f"{len(rest)} bytes of data that is not gzip follow the compressed stream"
                    self.eof = True
            else:
                # the member ended; more members may follow in the bytes held back or in later blocks
                if self._pending:
                    nxt, after = self._pending[:2], self._pending
                else:
                    nxt = self._f.read(2)
                    after = nxt
                    if nxt:
                        self._f.seek(-len(nxt), os.SEEK_CUR)
                if nxt:
                    if nxt == GZIP_MAGIC:
                        self._dec = self._zlib.decompressobj(47)
                    elif after.strip(b"\x00"):
                        self.corrupt = "data that is not gzip follows the compressed stream"
                        self.eof = True
                    else:
                        self.eof = True
                else:
                    self.eof = True
        return out


def _describe_inflate_error(e: Exception) -> str:
    text = str(e)
    if "check" in text or "crc" in text.lower():
        return "the gzip checksum does not match the data (the file is damaged)"
    return f"the gzip data is damaged ({text})"
