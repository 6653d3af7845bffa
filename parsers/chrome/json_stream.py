"""Streaming the ``traceEvents`` array of a Chrome trace out of a byte stream, chunk by chunk.

The document is never decoded whole: the array is cut at element boundaries into chunks of a few megabytes,
and each chunk is decoded with typed ``msgspec`` structs. A cut point is a ``}`` followed by ``,``; it is proven
to be an element boundary by the chunk decoding as a JSON array (a cut inside a string or an inner object can
never yield valid JSON). A file that ends early yields every complete element before the cut.

Chunks whose events do not fit the typed structs (``NaN``, strings where numbers belong, control characters,
invalid UTF-8) are decoded element by element with a lenient fallback, and what had to be skipped is counted.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from operator import attrgetter
from typing import Annotated, Any, Union

import msgspec
import numpy as np
import numpy.typing as npt

from gputop_trace.errors import TraceError
from gputop_trace.parsers.source import ByteStream

CHUNK = 1 << 20  # decompressed bytes per decoded chunk: small enough that its decoded events stay in cache
HEADER_LIMIT = 256 << 20  # how far into a file the "traceEvents" key may be
MAX_SPLIT_TRIES = 24
MAX_ELEMENT = 64 << 20  # a window that still holds no complete element is treated as damaged
RESYNC_PROBES = 256  # element boundaries tried after damage before giving up on a window


# --------------------------------------------------------------------------------------------------------
# typed structs: only the fields the loader reads are decoded; everything else is skipped by msgspec
# --------------------------------------------------------------------------------------------------------
#: an integer that fits int64 (a larger one in the file fails typed decoding and takes the lenient path)
Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class Args(msgspec.Struct, gc=False):
    """The ``args`` fields the loader reads (Kineto, JAX and metadata events)."""

    external_id: Int64 = msgspec.field(default=-1, name="External id")
    correlation: Int64 = -1
    device: Int64 = -1
    stream: Int64 = -1
    grid: tuple[Int64, Int64, Int64] | None = None
    block: tuple[Int64, Int64, Int64] | None = None
    registers: Int64 = msgspec.field(default=-1, name="registers per thread")
    shared_memory: Int64 = msgspec.field(default=-1, name="shared memory")
    blocks_per_sm: float = msgspec.field(default=-1.0, name="blocks per SM")
    warps_per_sm: float = msgspec.field(default=-1.0, name="warps per SM")
    occupancy: float = msgspec.field(default=-1.0, name="est. achieved occupancy %")
    bytes: Int64 = -1
    collective: str | None = msgspec.field(default=None, name="Collective name")
    in_nelems: Int64 = msgspec.field(default=-1, name="In msg nelems")
    out_nelems: Int64 = msgspec.field(default=-1, name="Out msg nelems")
    group_size: Int64 = msgspec.field(default=0, name="Group size")
    group: str | None = msgspec.field(default=None, name="Process Group Name")
    dtype: str | None = None
    name: str | None = None
    sort_index: Int64 | None = None
    labels: str | None = None
    correlation_id: str | None = None
    memcpy_details: str | None = None
    kernel_details: str | None = None


class Event(msgspec.Struct, gc=False):
    """One Chrome trace event. ``ts``/``dur`` are microseconds."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007 - msgspec needs typing.Union on 3.10
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: float = math.nan  # NaN = missing (metadata events need none; other events without one are skipped)
    dur: float = 0.0
    id: Union[Int64, str, None] = None  # noqa: UP007
    id2: Any = None
    s: str = ""
    bp: str = ""
    args: Args | None = None


class ExactEvent(msgspec.Struct, gc=False):
    """The same event with exact decimal timestamps, for files whose timestamps are too large for a float."""

    ph: str = ""
    name: str = ""
    cat: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: Decimal = Decimal("NaN")
    dur: Decimal = Decimal(0)
    id: Union[Int64, str, None] = None  # noqa: UP007
    id2: Any = None
    s: str = ""
    bp: str = ""
    args: Args | None = None


class CounterEvent(msgspec.Struct, gc=False):
    """A ``C`` event with its series values."""

    ph: str = ""
    name: str = ""
    pid: Union[Int64, str] = 0  # noqa: UP007
    tid: Union[Int64, str] = 0  # noqa: UP007
    ts: float = 0.0
    id: Union[Int64, str, None] = None  # noqa: UP007
    args: dict[str, Any] | None = None


_DEC_EVENTS = msgspec.json.Decoder(list[Event])
_DEC_EXACT = msgspec.json.Decoder(list[ExactEvent])
_DEC_COUNTER = msgspec.json.Decoder(CounterEvent)
_DEC_RAW_LIST = msgspec.json.Decoder(list[msgspec.Raw])
_DEC_ONE = msgspec.json.Decoder(Event)
_DEC_ANY = msgspec.json.Decoder()

#: |ts| below this many µs converts exactly to whole ns through a float64 (ulp/2 < 0.5 ns); above it the
#: chunk is decoded again with decimal timestamps.
EXACT_FLOAT_LIMIT_US = float(2**43)


@dataclass
class Chunk:
    """Decoded events of one chunk, and the counter events among them (when any)."""

    events: list[Any]
    counters: list[CounterEvent] = field(default_factory=list)
    exact: bool = False
    skipped: int = 0
    skipped_example: str = ""
    repaired: int = 0  # events kept after fields of the wrong type or range were dropped or converted
    repaired_example: str = ""
    notes: tuple[str, ...] = ()  # what a lenient read had to tolerate
    phs: list[str] | None = None  # every event's ``ph`` (when the typed decoder made the chunk)
    ts: npt.NDArray[np.float64] | None = None  # every event's ``ts`` in µs, NaN when missing (not ``exact``)


@dataclass
class DocumentInfo:
    """What the streamer learnt about the document besides the events."""

    form: str = ""  # "object" | "array"
    header: dict[str, Any] = field(default_factory=dict)
    consumed: int = 0  # decompressed bytes of complete events and structure
    total: int = 0  # decompressed bytes read
    truncated: bool = False
    chunks: int = 0
    damaged: list[tuple[int, int]] = field(default_factory=list)  # (decompressed offset, bytes skipped)
    too_deep: list[tuple[int, int]] = field(default_factory=list)  # (offset, bytes) of elements nested too deeply
    trailer_too_deep: bool = False  # the keys after the events array nest too deeply to read
    trailer_unreadable: int = 0  # bytes after the events array that are not the rest of the object (cut, damaged)


_TRACE_EVENTS_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_WS = b" \t\r\n"


def _strip_bom(b: bytes) -> bytes:
    return b[3:] if b.startswith(b"\xef\xbb\xbf") else b


class _Window:
    """A reusable buffer over the decompressed stream: the bytes ``buf[:end]`` start at stream offset ``base``.

    Chunks are decoded straight out of it (no copy): the byte before a chunk and the byte after it are
    overwritten with ``[`` and ``]`` for the time of the decoding, then restored. One byte of room is kept
    before the current position for that.
    """

    def __init__(self, src: ByteStream, head: bytes, pos: int, base: int) -> None:
        self.src = src
        keep = head[pos - 1 :]
        self.cap = max(2 * CHUNK + 64, 2 * len(keep))
        self.buf = bytearray(self.cap)
        self.view = memoryview(self.buf)
        self.buf[: len(keep)] = keep
        self.end = len(keep)
        self.base = base + pos - 1

    def data(self) -> bytes:
        """A copy of the bytes in the window (for the rare paths that work on plain bytes)."""
        return bytes(self.view[: self.end])

    def refill(self, pos: int, *, grow: bool = False) -> int:
        """Move ``buf[pos-1:end]`` to the front, read a chunk more (``grow``: as much again as the window
        holds, for an element larger than it); returns the new position of ``pos``."""
        keep = self.end - (pos - 1)
        want = max(CHUNK, keep) if grow else CHUNK
        if keep + want > self.cap:  # one element larger than the window: grow it
            self.cap = keep + 2 * want
            bigger = bytearray(self.cap)
            bigger[:keep] = self.view[pos - 1 : self.end]
            self.view.release()
            self.buf, self.view = bigger, memoryview(bigger)
        elif pos > 1:
            self.buf[:keep] = self.view[pos - 1 : self.end]
        self.base += pos - 1
        self.end = keep
        while self.end < keep + want and not self.src.eof:
            self.end += self.src.readinto(self.view[self.end : keep + want])
        return 1

    def close(self) -> None:
        self.view.release()


def stream_events(src: ByteStream, info: DocumentInfo) -> Iterator[Chunk]:
    """Yield decoded chunks of the ``traceEvents`` array; fill ``info`` with header, form and truncation.

    ``info.consumed`` ends as the decompressed offset just after the last complete element (or the array's
    closing bracket), so ``info.total - info.consumed`` is what a truncated file lost.
    """
    buf = src.read(CHUNK)
    while len(buf) < 64 and not src.eof:
        buf += src.read(CHUNK)
    start = 3 if buf.startswith(b"\xef\xbb\xbf") else 0
    while start < len(buf) and buf[start] in _WS:
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
    info.consumed = pos
    win = _Window(src, buf, pos, 0)
    del buf
    pos = 1
    try:
        while True:
            pos = _skip_ws_comma(win.buf, pos, win.end)
            # keep a chunk's worth of bytes after pos in the window
            if win.end - pos < CHUNK and not src.eof:
                pos = win.refill(pos)
                continue
            if pos >= win.end:  # the stream ended inside the array
                info.truncated = True
                break
            if win.buf[pos] == 0x5D:  # "]"
                info.consumed = win.base + pos + 1
                _read_trailer(src, bytes(win.view[pos + 1 : win.end]), info)
                break
            end, chunk = _decode_some(win, pos)
            if end < 0 and src.eof:
                end, chunk = _decode_last(win.data(), pos)
            if end < 0 and not src.eof and win.end - pos < MAX_ELEMENT:
                # an element larger than the window: read more (doubling) and try again
                pos = win.refill(pos, grow=True)
                continue
            if end < 0:
                # damaged bytes: keep what decodes before them, skip to where decoding works again
                good, chunk_or_none, resync = _recover_damage(win.data(), pos)
                if chunk_or_none is not None:
                    info.chunks += 1
                    info.consumed = win.base + good
                    yield chunk_or_none
                if resync < 0:
                    if src.eof:
                        rest = bytes(win.view[good : win.end])
                        if _nested_too_deeply(rest, closed=True):
                            info.too_deep.append((win.base + good, len(rest)))
                            info.consumed = win.base + win.end
                        else:
                            info.truncated = True
                            info.damaged.append((win.base + good, len(rest)))
                        break
                    resync = win.end  # nothing readable in this window: skip it
                skipped = (win.base + good, resync - good)
                deep = _nested_too_deeply(bytes(win.view[good:resync]))
                (info.too_deep if deep else info.damaged).append(skipped)
                pos = resync
                continue
            info.chunks += 1
            info.consumed = win.base + end
            yield chunk
            pos = end
    finally:
        win.close()
    info.total = src.bytes_out


def _skip_ws_comma(buf: bytes | bytearray, pos: int, n: int) -> int:
    while pos < n and buf[pos] in b" \t\r\n,":
        pos += 1
    return pos


def _find_events_key(src: ByteStream, buf: bytes, start: int, info: DocumentInfo) -> tuple[int, bytes]:
    """Locate ``"traceEvents": [`` at the top level of the object; decode the keys before it."""
    search_from = start
    while True:
        for m in _TRACE_EVENTS_RE.finditer(buf, search_from):
            head = buf[start : m.start()].rstrip(_WS)
            if head.endswith(b","):
                head = head[:-1]
            try:
                header = _decode_header(head + b"}") if head != b"{" else {}
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
    try:
        doc = _DEC_ANY.decode(buf[start:])
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
    tail = rest.strip(_WS)
    if tail.startswith(b","):
        try:
            try:
                extra = _decode_header(b"{" + tail[1:])
            except ValueError:
                if tail.endswith(b"}"):
                    raise
                extra = _decode_header(b"{" + tail[1:] + b"}")  # only the final brace is missing
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


def _split_candidates(buf: bytearray, pos: int, end: int) -> Iterator[int]:
    """Positions just after a ``}`` that is followed by ``,`` or ``]``, from ``end`` backwards."""
    n = end
    tries = 0
    while tries < MAX_SPLIT_TRIES:
        p = buf.rfind(b"}", pos, end)
        if p < 0:
            return
        q = p + 1
        while q < n and buf[q] in _WS:
            q += 1
        if q < n and buf[q] in b",]":
            tries += 1
            yield p + 1
        end = p


def _decode_some(win: _Window, pos: int) -> tuple[int, Chunk]:
    """Decode the longest run of complete elements starting at ``pos``; returns (end, chunk) or (-1, _)."""
    buf = win.buf
    before = buf[pos - 1]
    for cut in _split_candidates(buf, pos, win.end):
        after = buf[cut] if cut < win.end else None
        buf[pos - 1] = 0x5B  # "["
        if after is None:
            text: bytes | memoryview = bytes(win.view[pos - 1 : cut]) + b"]"
        else:
            buf[cut] = 0x5D  # "]"
            text = win.view[pos - 1 : cut + 1]
        try:
            chunk = _decode_chunk(text)
        except _NotAnArray:
            continue
        finally:
            buf[pos - 1] = before
            if after is not None:
                buf[cut] = after
            if isinstance(text, memoryview):
                text.release()
        return cut, chunk
    return -1, Chunk([])


_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,")


def _recover_damage(buf: bytes, pos: int) -> tuple[int, Chunk | None, int]:
    """Around damaged bytes: (end of the longest decodable run of elements from ``pos``, its chunk or None, the
    position where decoding works again or -1).

    Decodability of a prefix is monotone (every shorter run of whole elements decodes too), so the longest one
    is found by bisection over the element-boundary candidates.
    """
    cands = [m.start() + 1 for m in _BOUNDARY.finditer(buf, pos)]
    lo, hi = -1, len(cands) - 1
    best: Chunk | None = None
    while lo < hi:
        mid = (lo + hi + 1) // 2
        try:
            chunk = _decode_chunk(b"[" + buf[pos : cands[mid]] + b"]")
        except _NotAnArray:
            hi = mid - 1
        else:
            lo, best = mid, chunk
    good = cands[lo] if lo >= 0 else pos
    if lo >= 0 and best is None:  # pragma: no cover - lo only moves on success
        best = _decode_chunk(b"[" + buf[pos:good] + b"]")
    for j in range(lo + 1, min(len(cands), lo + 1 + RESYNC_PROBES)):
        start = _skip_ws_comma(buf, cands[j], len(buf))
        if buf[start : start + 1] != b"{":
            continue
        probe = cands[j + 1] if j + 1 < len(cands) else None
        if probe is None:
            if _decode_last(buf, start)[0] >= 0:
                return good, best, start
            continue
        try:
            _DEC_RAW_LIST.decode(b"[" + buf[start:probe] + b"]")
        except (msgspec.DecodeError, RecursionError):
            continue
        return good, best, start
    return good, best, -1


def _decode_last(buf: bytes, pos: int) -> tuple[int, Chunk]:
    """At the end of the file, the elements left may not be objects (``1, 2]``): decode up to the array's ``]``.
    A file cut just after an element's closing brace (before ``,`` or ``]``) keeps that element too."""
    close = buf.rfind(b"]", pos)
    tries = 0
    while close >= pos and tries < MAX_SPLIT_TRIES:
        try:
            return close, _decode_chunk(b"[" + buf[pos:close] + b"]")
        except _NotAnArray:
            close = buf.rfind(b"]", pos, close)
            tries += 1
    rest = buf[pos:].rstrip(_WS)
    if rest.endswith(b"}"):
        try:
            return pos + len(rest), _decode_chunk(b"[" + rest + b"]")
        except _NotAnArray:
            pass
    return -1, Chunk([])


class _NotAnArray(Exception):  # noqa: N818 - a control-flow signal
    """The cut was not at an element boundary."""


_ERR_POS = re.compile(r"byte (\d+)")


def _decode_chunk(text: bytes | memoryview) -> Chunk:
    """Decode ``[e, e, ...]``; typed and fast when it can be, element by element when it must be.

    ``text`` may be a view of a buffer that is reused after this returns: nothing decoded refers to it. An element
    nested deeper than the decoders' recursion limit makes the whole run fail like damage does, so the streamer
    keeps the elements before it and resumes after it.
    """
    try:
        return _decode_chunk_or_recurse(text)
    except RecursionError:
        raise _NotAnArray from None


def _decode_chunk_or_recurse(text: bytes | memoryview) -> Chunk:
    try:
        events = _DEC_EVENTS.decode(text)
    except msgspec.ValidationError:
        # valid types failed somewhere; the JSON itself may still be malformed further on
        text = bytes(text)
        try:
            return _lenient_chunk(text)
        except msgspec.DecodeError as e:
            return _malformed_chunk(text, e)
    except msgspec.DecodeError as e:
        return _malformed_chunk(bytes(text), e)
    chunk = Chunk(events)
    _finish_chunk(chunk, text)
    return chunk


def _malformed_chunk(text: bytes, e: msgspec.DecodeError) -> Chunk:
    """msgspec rejected the bytes: either a bad cut (not an array), or content only a lenient parser reads."""
    if "UTF-8" in str(e):
        return _python_chunk(text)
    # a bad cut fails at the very end (unbalanced, or inside a string); anything earlier is content that only a
    # lenient parser accepts (NaN, raw control characters) — or real damage, which the lenient parser rejects too
    m = _ERR_POS.search(str(e))
    if m is None or int(m.group(1)) >= len(text) - 2:
        raise _NotAnArray from None
    try:
        _DEC_RAW_LIST.decode(text)
    except msgspec.DecodeError:
        return _python_chunk(text)
    return _lenient_chunk(text)


_A_PH = attrgetter("ph")
_A_TS = attrgetter("ts")


def _finish_chunk(chunk: Chunk, text: bytes | memoryview) -> None:
    events = chunk.events
    chunk.phs = list(map(_A_PH, events))
    ts = np.fromiter(map(_A_TS, events), np.float64, len(events))
    if len(ts) and float(np.fmax.reduce(np.abs(ts))) > EXACT_FLOAT_LIMIT_US:  # fmax: NaN (no ts) ignored
        try:
            chunk.events = _DEC_EXACT.decode(text)
            chunk.exact = True
        except msgspec.MsgspecError:
            pass
    if not chunk.exact:
        chunk.ts = ts
    if "C" in chunk.phs:
        raws = _DEC_RAW_LIST.decode(bytes(text))
        for raw, ph in zip(raws, chunk.phs, strict=True):
            if ph == "C":
                try:
                    chunk.counters.append(_DEC_COUNTER.decode(raw))
                except msgspec.MsgspecError:
                    pass


def _lenient_chunk(text: bytes) -> Chunk:
    """Element-by-element decoding: events with unusable fields are repaired when possible, else skipped."""
    raws = _DEC_RAW_LIST.decode(text)
    events: list[Any] = []
    counters: list[CounterEvent] = []
    skipped = repaired = 0
    example = repaired_example = ""
    for raw in raws:
        ev: Event | None
        try:
            ev = _DEC_ONE.decode(raw)
        except msgspec.MsgspecError:
            try:
                obj = _DEC_ANY.decode(raw)
            except msgspec.MsgspecError:
                obj = None
            ev = _coerce(obj)
            if ev is None:
                skipped += 1
                example = example or bytes(raw)[:120].decode("utf-8", "replace")
                continue
            repaired += 1
            repaired_example = repaired_example or bytes(raw)[:120].decode("utf-8", "replace")
        events.append(ev)
        if ev.ph == "C":
            try:
                counters.append(_DEC_COUNTER.decode(raw))
            except msgspec.MsgspecError:
                pass
    return Chunk(
        events,
        counters,
        skipped=skipped,
        skipped_example=example,
        repaired=repaired,
        repaired_example=repaired_example,
    )


def _decode_header(text: bytes) -> Any:
    """The keys around the events array: msgspec, then (for lone surrogates, NaN, control characters or invalid
    UTF-8 that only a lenient parser reads) the standard library. Raises ValueError or RecursionError."""
    try:
        return _DEC_ANY.decode(text)
    except msgspec.DecodeError:
        return json.loads(text.decode("utf-8", "replace"), strict=False)


def _nested_too_deeply(region: bytes, *, closed: bool = False) -> bool:
    """Whether skipped bytes are whole elements that only failed because they nest deeper than the decoder's
    recursion limit (rather than damaged or missing bytes). ``closed``: the region runs to the end of the file,
    so it must also close the events array (brackets balance) — a file cut inside deep nesting is truncated."""
    body = region.strip(b" \t\r\n,")
    if closed:
        opened = body.count(b"[") + body.count(b"{")
        if not body.endswith(b"]") or opened != body.count(b"]") + body.count(b"}") - 1:
            return False
        body = body[:-1]
    try:
        _DEC_RAW_LIST.decode(b"[" + body + b"]")
    except RecursionError:
        return True
    except msgspec.DecodeError:
        return False
    return False


def _python_chunk(text: bytes) -> Chunk:
    """Last resort for bytes msgspec rejects (NaN, Infinity, raw control characters, invalid UTF-8)."""
    try:
        decoded = text.decode("utf-8")
        note = (
            "non-standard JSON (NaN, Infinity, raw control characters or unpaired \\uD800-style surrogates in "
            "strings) was read leniently"
        )
    except UnicodeDecodeError:
        decoded = text.decode("utf-8", "replace")
        note = "bytes that are not valid UTF-8 were replaced with U+FFFD in names"
    try:
        items = json.loads(decoded, strict=False)
    except (ValueError, RecursionError):
        raise _NotAnArray from None
    if not isinstance(items, list):
        raise _NotAnArray
    events: list[Any] = []
    counters: list[CounterEvent] = []
    skipped = 0
    example = ""
    for obj in items:
        ev = _coerce(obj)
        if ev is None:
            skipped += 1
            example = example or repr(obj)[:120]
            continue
        events.append(ev)
        if ev.ph == "C" and isinstance(obj, dict):
            args = obj.get("args")
            counters.append(
                CounterEvent(
                    ph="C",
                    name=ev.name,
                    pid=ev.pid,
                    tid=ev.tid,
                    ts=ev.ts,
                    args=args if isinstance(args, dict) else None,
                )
            )
    return Chunk(events, counters, skipped=skipped, skipped_example=example, notes=(note,))


def _num(v: Any) -> float | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        f = float(v)
    elif isinstance(v, str):
        try:
            f = float(v)
        except ValueError:
            return None
    else:
        return None
    if math.isnan(f) or math.isinf(f):
        return None
    return f


def _coerce(obj: Any) -> Event | None:
    """Make an :class:`Event` out of a decoded object with wrong or missing types, or give up (None)."""
    if not isinstance(obj, dict):
        return None
    ph = obj.get("ph")
    if not isinstance(ph, str):
        return None
    ts = _num(obj.get("ts"))
    if ts is None:
        if ph == "M":
            ts = 0.0
        else:
            return None
    dur = _num(obj.get("dur", 0))
    if dur is None:
        dur = 0.0
    pid = obj.get("pid", 0)
    tid = obj.get("tid", 0)
    pid = pid if isinstance(pid, (int, str)) and not isinstance(pid, bool) else str(pid)
    tid = tid if isinstance(tid, (int, str)) and not isinstance(tid, bool) else str(tid)
    if isinstance(pid, int) and not -(2**63) <= pid < 2**63:
        pid = str(pid)
    if isinstance(tid, int) and not -(2**63) <= tid < 2**63:
        tid = str(tid)
    name = obj.get("name", "")
    cat = obj.get("cat", "")
    ident = obj.get("id")
    args = _coerce_args(obj.get("args"))
    return Event(
        ph=ph,
        name=name if isinstance(name, str) else json.dumps(name),
        cat=cat if isinstance(cat, str) else str(cat),
        pid=pid,
        tid=tid,
        ts=ts,
        dur=dur,
        id=ident if isinstance(ident, (int, str)) and not isinstance(ident, bool) else None,
        s=obj.get("s", "") if isinstance(obj.get("s", ""), str) else "",
        bp=obj.get("bp", "") if isinstance(obj.get("bp", ""), str) else "",
        args=args,
    )


def _coerce_args(a: Any) -> Any:
    if not isinstance(a, dict):
        return None
    out: dict[str, Any] = {}
    for f in msgspec.structs.fields(Args):
        key = f.encode_name
        if key not in a:
            continue
        v = a[key]
        try:
            out[f.name] = msgspec.convert(v, f.type, strict=False)
        except (msgspec.ValidationError, TypeError, OverflowError):
            continue
    try:
        return Args(**out)
    except TypeError:
        return None


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
