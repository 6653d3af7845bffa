"""Streaming the ``traceEvents`` array of a Chrome trace out of a byte stream, chunk by chunk.

The document is never decoded whole: the array is cut at element boundaries into chunks of a few megabytes,
and each chunk is decoded with typed ``msgspec`` structs. A cut point is a ``}`` followed by ``,``; it is proven
to be an element boundary by the chunk decoding as a JSON array (a cut inside a string or an inner object can
never yield valid JSON). A file that ends early yields every complete element before the cut.

Chunks whose events do not fit the typed structs (``NaN``, strings where numbers belong, control characters,
invalid UTF-8) are decoded element by element with a lenient fallback, and what had to be skipped is counted.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator

from gputop_trace.errors import TraceError
from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.document import (
    MAX_SPLIT_TRIES,
    WS,
    Chunk,
    DocumentInfo,
    NotAnArray,
    decode_header,
    skip_ws_comma,
)
from gputop_trace.parsers.chrome.parallel_scan import MIN_PART, scan_parts, scan_threads
from gputop_trace.parsers.source import ByteStream

# (the decoders, msgspec and the recovery of damaged bytes are imported where they are first needed: a load starts
# reading and scanning while they are imported, see parsers/chrome/opening.py)

#: decompressed bytes per decoded chunk. Each chunk costs a fixed amount of Python work and a hand-over of the GIL
#: between the read-ahead thread and the loader (up to a switch interval, 5 ms): 4 MiB loaded the benchmark inputs
#: fastest here (1 MiB: about 30 % slower on the shared epoch trace; 8 MiB and more leave too few chunks to
#: overlap on a trace of tens of MB), and keeps the window (two chunks) and the queued chunks to a few tens of MB.
CHUNK = 4 << 20
#: chunks per part where a window is scanned by :data:`BIG_PARTS_FROM` threads or more: each part costs the loading
#: thread a fixed ~0.45 ms (its calls, column arrays and id mappings), and with that many threads the loading thread
#: is what limits the load (a 1 GB trace: 121 parts of 8 MiB instead of 242 of 4 MiB)
BIG_PART_CHUNKS = 2
BIG_PARTS_FROM = 4
#: decompressed bytes read first, to find the events array (the header before it is read further when larger)
HEAD = 64 << 10
#: room in the window beyond its span, for the bytes of an element cut by the window's end (a window grows for an
#: element longer than that)
SLACK = 256 << 10
HEADER_LIMIT = 256 << 20  # how far into a file the "traceEvents" key may be
MAX_ELEMENT = 64 << 20  # a window that still holds no complete element is treated as damaged


_TRACE_EVENTS_RE = re.compile(rb'"traceEvents"\s*:\s*\[')


class _Window:
    """A reusable buffer over the decompressed stream: the bytes ``view[:end]`` start at stream offset ``base``.

    Chunks are decoded straight out of it (no copy): the byte before a chunk and the byte after it are
    overwritten with ``[`` and ``]`` for the time of the decoding, then restored. One byte of room is kept
    before the current position for that. ``view`` is a memoryview of memory from the C library's heap that is
    not written before it is used (numpy's ``empty``; a ``bytearray`` would zero all of it up front): a page costs
    memory, and a page fault, only once bytes are written there. The window is sized for its span and a little
    more, and given back to the heap when the stream ends, so that the memory its pages took (a window of 8 MiB
    on two cores) serves the arrays the loader builds next, instead of fresh pages faulted in again (an anonymous
    memory map, as before, was unmapped).
    """

    def __init__(self, src: ByteStream, head: bytes, pos: int, base: int, span: int = CHUNK) -> None:
        self.src = src
        # bytes kept ahead of the position: a chunk for each scanning thread, once the window has grown to
        # ``full``. It starts at one chunk and doubles with each refill, so that the first scan starts once one
        # chunk is read (with 8 threads the full span is 32 MiB: a file of that size would be read, and a gzip
        # inflated, whole before its first scan, and nothing would overlap)
        self.full = span
        self.span = min(span, CHUNK)
        self._refilled = False
        keep = memoryview(head)[pos - 1 :]
        self.cap = max(span + SLACK, 2 * len(keep))
        self.view = _memory(self.cap)
        self.view[: len(keep)] = keep
        self.end = len(keep)
        self.base = base + pos - 1

    def data(self) -> bytes:
        """A copy of the bytes in the window (for the rare paths that work on plain bytes)."""
        return bytes(self.view[: self.end])

    def refill(self, pos: int, *, grow: bool = False) -> int:
        """Move ``view[pos-1:end]`` to the front, read a chunk more (``grow``: as much again as the window
        holds, for an element larger than it); returns the new position of ``pos``."""
        if self._refilled:  # the span doubles from one refill to the next (the first reads one chunk)
            self.span = min(self.full, 2 * self.span)
        self._refilled = True
        keep = self.end - (pos - 1)
        want = max(self.span, keep) if grow else self.span
        if keep + want > self.cap:  # one element larger than the window: grow it
            self.cap = keep + 2 * want
            bigger = _memory(self.cap)
            bigger[:keep] = self.view[pos - 1 : self.end]
            self.close()
            self.view = bigger
        elif pos > 1:
            self.view[:keep] = self.view[pos - 1 : self.end]  # (the ranges may overlap: memoryview copies as memmove)
        self.base += pos - 1
        self.end = keep
        while self.end < keep + want and not self.src.eof:
            self.end += self.src.readinto(self.view[self.end : keep + want])
        return 1

    def close(self) -> None:
        """Give the memory back (once the last view of it is dropped, if an error left one held)."""
        self.view.release()


def _memory(n: int) -> memoryview:
    """``n`` bytes of the heap's memory, not written (their content is undefined until written)."""
    import numpy as np  # (imported by then, with the model; not at the top: the opening imports nothing heavy)

    return np.empty(n, dtype=np.uint8).data


def stream_events(src: ByteStream, info: DocumentInfo) -> Iterator[Chunk]:
    """Yield decoded chunks of the ``traceEvents`` array; fill ``info`` with header, form and truncation.

    ``info.consumed`` ends as the decompressed offset just after the last complete element (or the array's
    closing bracket), so ``info.total - info.consumed`` is what a truncated file lost.
    """
    buf, pos = _open_array(src, info)
    info.consumed = pos
    threads = scan_threads() if scanner.enabled() else 1
    part = CHUNK * (BIG_PART_CHUNKS if threads >= BIG_PARTS_FROM else 1)
    win = _Window(src, buf, pos, 0, part * threads)
    del buf
    try:
        yield from _stream_window(win, src, info, threads)
    finally:
        win.close()
    _decode_header_text(info)
    info.total = src.bytes_out


def _open_array(src: ByteStream, info: DocumentInfo) -> tuple[bytes, int]:
    """The first bytes of the stream and the offset just after the events array's ``[`` in them (the header before
    it read as far as needed); sets ``info.form``. Raises :class:`TraceError` where the stream holds no trace."""
    head = min(HEAD, CHUNK)
    buf = src.read(head)
    while len(buf) < 64 and not src.eof:
        buf += src.read(head)
    start = 3 if buf.startswith(b"\xef\xbb\xbf") else 0
    while start < len(buf) and buf[start] in WS:
        start += 1
    if start >= len(buf):
        if src.truncated:
            raise TraceError(
                f"{src.path} is a gzip file cut short before any trace data ({src.bytes_out:,} bytes could be "
                "decompressed): the copy was interrupted or the profiler crashed while writing it. Re-copy the file "
                "or re-record the profile.",
                path=src.path,
            )
        raise _not_trace(src.path, "it is empty" if src.bytes_out == 0 else "it holds only white space")
    first = buf[start : start + 1]
    if first == b"[":
        info.form = "array"
        pos = start + 1
    elif first == b"{":
        info.form = "object"
        pos, buf = _find_events_key(src, buf, start, info)
    else:
        raise _not_trace(src.path, _describe_non_json(buf[start : start + 16]))
    return buf, pos


def _stream_window(win: _Window, src: ByteStream, info: DocumentInfo, threads: int) -> Iterator[Chunk]:
    """Yield the chunks of the array from the window's start to the array's end (or the stream's), scanned in
    parts by ``threads`` threads where the compiled scanner is on, decoded a chunk at a time otherwise."""
    pos = 1
    while True:
        pos = skip_ws_comma(win.view, pos, win.end)
        # keep a chunk's worth of bytes after pos in the window (one for each scanning thread)
        if win.end - pos < win.span and not src.eof:
            pos = win.refill(pos)
            continue
        if pos >= win.end:  # the stream ended inside the array
            info.truncated = True
            return
        if win.view[pos] == 0x5D:  # "]"
            info.consumed = win.base + pos + 1
            _decode_header_text(info)
            _read_trailer(src, bytes(win.view[pos + 1 : win.end]), info)
            return
        parts = (
            scan_parts(win.view, pos, win.end, threads, min_part=min(MIN_PART, CHUNK // 4)) if scanner.enabled() else []
        )
        if parts:
            for end, chunk in parts:
                info.chunks += 1
                info.consumed = win.base + end
                yield chunk
            pos = end
            continue
        end, chunk = _decode_some(win, pos)
        if end < 0 and src.eof:
            from gputop_trace.parsers.chrome.decode import decode_last

            end, chunk = decode_last(win.data(), pos)
        if end < 0 and not src.eof and win.end - pos < MAX_ELEMENT:
            # an element larger than the window: read more (doubling) and try again
            pos = win.refill(pos, grow=True)
            continue
        if end < 0:
            pos = yield from _skip_damage(win, pos, src, info)
            if pos < 0:
                return
            continue
        info.chunks += 1
        info.consumed = win.base + end
        yield chunk
        pos = end


def _skip_damage(win: _Window, pos: int, src: ByteStream, info: DocumentInfo) -> Generator[Chunk, None, int]:
    """Damaged bytes at ``pos``: yield what decodes before them, record what is skipped (too deeply nested or
    damaged, in ``info``) and return where decoding works again, or -1 where the stream ends without it."""
    from gputop_trace.parsers.chrome.recovery import nested_too_deeply, recover_damage

    good, chunk_or_none, resync = recover_damage(win.data(), pos)
    if chunk_or_none is not None:
        info.chunks += 1
        info.consumed = win.base + good
        yield chunk_or_none
    if resync < 0:
        if src.eof:
            rest = bytes(win.view[good : win.end])
            if nested_too_deeply(rest, closed=True):
                info.too_deep.append((win.base + good, len(rest)))
                info.consumed = win.base + win.end
            else:
                info.truncated = True
                info.damaged.append((win.base + good, len(rest)))
            return -1
        resync = win.end  # nothing readable in this window: skip it
    skipped = (win.base + good, resync - good)
    deep = nested_too_deeply(bytes(win.view[good:resync]))
    (info.too_deep if deep else info.damaged).append(skipped)
    return resync


def _decode_header_text(info: DocumentInfo) -> None:
    """The keys before the events array into ``info.header``, where the streamer left them as text: not decoded
    when they were found, on the read-ahead thread, as the loading thread imported the parser (the standard
    library's json took 2 ms to import then, and held the GIL that import needs); decoded here by msgspec,
    imported by now in all but the smallest files. They are strict JSON (the scanner checked), so msgspec and json
    read them alike."""
    if info.header_text:
        header = decode_header(info.header_text)
        info.header_text = b""
        info.header = {**header, **info.header}


def _find_events_key(src: ByteStream, buf: bytes, start: int, info: DocumentInfo) -> tuple[int, bytes]:
    """Locate ``"traceEvents": [`` at the top level of the object; decode the keys before it."""
    search_from = start
    while True:
        for m in _TRACE_EVENTS_RE.finditer(buf, search_from):
            head = buf[start : m.start()].rstrip(WS)
            if head.endswith(b","):
                head = head[:-1]
            text = head + b"}"
            if head == b"{":
                return m.end(), buf
            if scanner.is_json_object(text):  # the keys before the events: decoded once the events are read
                info.header_text = text
                return m.end(), buf
            try:
                header = decode_header(text)
            except (ValueError, RecursionError):
                continue  # the key text was inside a nested object (or the keys before it nest too deeply)
            if isinstance(header, dict):
                info.header.update(header)
                return m.end(), buf
        if src.eof or len(buf) > HEADER_LIMIT:
            break
        search_from = max(start, len(buf) - 64)
        buf += src.read(CHUNK)
    # no traceEvents key: decide between "not a trace" and "truncated before the events"
    import msgspec

    try:
        doc = msgspec.json.decode(buf[start:])
    except msgspec.DecodeError:
        doc = None
    if isinstance(doc, dict):
        keys = ", ".join(list(doc)[:8]) or "none"
        raise TraceError(
            f'{src.path} is JSON but not a Chrome trace: it has no "traceEvents" array (its top-level keys are: '
            f"{keys}). Open a trace written by torch.profiler, jax.profiler or another Chrome-trace exporter.",
            path=src.path,
        )
    if src.truncated or src.eof:
        raise TraceError(
            f"{src.path} ends after {src.bytes_out} bytes, before any trace event: it was cut short or it is not "
            "a Chrome trace. Re-copy the file or re-record the profile.",
            path=src.path,
        )
    raise _not_trace(src.path, 'no "traceEvents" array was found')


def _read_trailer(src: ByteStream, rest: bytes, info: DocumentInfo) -> None:
    """Decode the keys after the events array (object form); tolerate anything after an array form."""
    while not src.eof:
        more = src.read(CHUNK)
        if not more:
            break
        rest += more
        if len(rest) > HEADER_LIMIT:
            return
    if info.form != "object":
        return
    tail = rest.strip(WS)
    if tail.startswith(b","):
        try:
            try:
                extra = decode_header(b"{" + tail[1:])
            except ValueError:
                if tail.endswith(b"}"):
                    raise
                extra = decode_header(b"{" + tail[1:] + b"}")  # only the final brace is missing
        except RecursionError:
            info.trailer_too_deep = True
            return
        except ValueError:
            info.trailer_unreadable = len(tail)
            return
        if isinstance(extra, dict):
            for k, v in extra.items():
                info.header.setdefault(k, v)
    elif tail not in (b"", b"}"):
        info.trailer_unreadable = len(tail)


def _rfind_brace(buf: memoryview, pos: int, end: int) -> int:
    """The position of the last ``}`` in ``buf[pos:end]``, or -1 (searched back in blocks of 64 KiB)."""
    while end > pos:
        lo = max(pos, end - (64 << 10))
        at = bytes(buf[lo:end]).rfind(b"}")
        if at >= 0:
            return lo + at
        end = lo
    return -1


def _split_candidates(buf: memoryview, pos: int, end: int) -> Iterator[int]:
    """Positions just after a ``}`` that is followed by ``,`` or ``]``, from ``end`` backwards."""
    n = end
    tries = 0
    while tries < MAX_SPLIT_TRIES:
        p = _rfind_brace(buf, pos, end)
        if p < 0:
            return
        q = p + 1
        while q < n and buf[q] in WS:
            q += 1
        if q < n and buf[q] in b",]":
            tries += 1
            yield p + 1
        end = p


def _decode_some(win: _Window, pos: int) -> tuple[int, Chunk]:
    """Decode the longest run of complete elements starting at ``pos``; returns (end, chunk) or (-1, _)."""
    from gputop_trace.parsers.chrome.decode import decode_chunk

    buf = win.view
    before = buf[pos - 1]
    # (the compiled scanner, which finds the end of the last complete element itself, had the window first:
    # parallel_scan.scan_parts; what it cannot read is cut here from the end of the window)
    for cut in _split_candidates(buf, pos, win.end):
        after = buf[cut] if cut < win.end else None
        buf[pos - 1] = 0x5B  # "["
        if after is None:
            text: bytes | memoryview = bytes(win.view[pos - 1 : cut]) + b"]"
        else:
            buf[cut] = 0x5D  # "]"
            text = win.view[pos - 1 : cut + 1]
        try:
            chunk = decode_chunk(text)
        except NotAnArray:
            continue
        finally:
            buf[pos - 1] = before
            if after is not None:
                buf[cut] = after
            if isinstance(text, memoryview):
                text.release()
        return cut, chunk
    return -1, Chunk([])


def _describe_non_json(b: bytes) -> str:
    if b.startswith(b"SQLite format 3"):
        return "it is a SQLite database (open it as an Nsight Systems export: name it .sqlite)"
    if any(c < 9 or 13 < c < 32 for c in b[:16]):
        return "it is a binary file, not JSON"
    snippet = b[:16].decode("utf-8", "replace")
    return f"it does not start with JSON (it starts with {snippet!r})"


def _not_trace(path: str, why: str) -> TraceError:
    return TraceError(
        f"{path} is not a Chrome trace: {why}. gputop-trace opens Chrome/Kineto/JAX traces (.json, .json.gz), "
        "Nsight Systems exports (.sqlite) and directories of per-rank traces.",
        path=path,
    )
