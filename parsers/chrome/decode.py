"""Decoding one run of ``traceEvents`` elements (``[e, e, ...]``) into a :class:`Chunk`: typed and fast when it can
be, exact decimal timestamps when a float would lose nanoseconds, element by element
(:mod:`~gputop_trace.parsers.chrome.lenient`) when it must be; and the end-of-file and header variants."""

from __future__ import annotations

import re
from operator import attrgetter

import msgspec
import numpy as np

from gputop_trace.parsers.chrome import fast
from gputop_trace.parsers.chrome.conventions import PROFILER_RANGE_CAT
from gputop_trace.parsers.chrome.document import MAX_SPLIT_TRIES, WS, Chunk, NotAnArray
from gputop_trace.parsers.chrome.lenient import lenient_chunk, python_chunk
from gputop_trace.parsers.chrome.structs import DEC_COUNTER, DEC_EVENTS, DEC_EXACT, DEC_RAW_LIST
from gputop_trace.parsers.chrome.values import tokens_to_ns

#: |ts| below this many µs converts exactly to whole ns through a float64 (ulp/2 < 0.5 ns); above it the
#: chunk is decoded again with its ts/dur as text, converted exactly in bulk (``values.tokens_to_ns``).
EXACT_FLOAT_LIMIT_US = float(2**43)


def decode_last(buf: bytes, pos: int) -> tuple[int, Chunk]:
    """At the end of the file, the elements left may not be objects (``1, 2]``): decode up to the array's ``]``.
    A file cut just after an element's closing brace (before ``,`` or ``]``) keeps that element too."""
    close = buf.rfind(b"]", pos)
    tries = 0
    while close >= pos and tries < MAX_SPLIT_TRIES:
        try:
            return close, decode_chunk(b"[" + buf[pos:close] + b"]")
        except NotAnArray:
            close = buf.rfind(b"]", pos, close)
            tries += 1
    rest = buf[pos:].rstrip(WS)
    if rest.endswith(b"}"):
        try:
            return pos + len(rest), decode_chunk(b"[" + rest + b"]")
        except NotAnArray:
            pass
    return -1, Chunk([])


_ERR_POS = re.compile(r"byte (\d+)")
_PROFILED = re.compile(re.escape(PROFILER_RANGE_CAT.encode()))


def decode_chunk(text: bytes | memoryview) -> Chunk:
    """Decode ``[e, e, ...]``; typed and fast when it can be, element by element when it must be.

    ``text`` may be a view of a buffer that is reused after this returns: nothing decoded refers to it. An element
    nested deeper than the decoders' recursion limit makes the whole run fail like damage does, so the streamer
    keeps the elements before it and resumes after it.
    """
    try:
        return _decode_chunk_or_recurse(text)
    except RecursionError:
        raise NotAnArray from None


def _decode_chunk_or_recurse(text: bytes | memoryview) -> Chunk:
    # the scanner leaves chunks holding CUPTI range-profiler ranges (their counters are args it does not keep) to
    # the Python path, as it does everything it cannot read exactly
    if fast.enabled():
        fc = fast.scan(text)
        if fc is not None:
            return Chunk([], fast=fc)
    try:
        events = DEC_EVENTS.decode(text)
    except msgspec.ValidationError:
        # valid types failed somewhere; the JSON itself may still be malformed further on
        text = bytes(text)
        try:
            return lenient_chunk(text)
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
        return python_chunk(text)
    # a bad cut fails at the very end (unbalanced, or inside a string); anything earlier is content that only a
    # lenient parser accepts (NaN, raw control characters) — or real damage, which the lenient parser rejects too
    m = _ERR_POS.search(str(e))
    if m is None or int(m.group(1)) >= len(text) - 2:
        raise NotAnArray from None
    try:
        DEC_RAW_LIST.decode(text)
    except msgspec.DecodeError:
        return python_chunk(text)
    return lenient_chunk(text)


_A_PH = attrgetter("ph")
_A_TS = attrgetter("ts")


def _finish_chunk(chunk: Chunk, text: bytes | memoryview) -> None:
    events = chunk.events
    chunk.phs = list(map(_A_PH, events))
    ts = np.fromiter(map(_A_TS, events), np.float64, len(events))
    if len(ts) and float(np.fmax.reduce(np.abs(ts))) > EXACT_FLOAT_LIMIT_US:  # fmax: NaN (no ts) ignored
        # the same bytes again with ts/dur as text, converted in bulk (they decoded as numbers just above)
        exact = DEC_EXACT.decode(bytes(text))  # its Raw values refer to the bytes: not the reused window
        chunk.ts_ns, chunk.ts_state = tokens_to_ns(list(map(_A_TS, exact)))
        chunk.events = exact
        chunk.exact = True
    if not chunk.exact:
        chunk.ts = ts
    profiled = _PROFILED.search(text) is not None  # a regex reads a memoryview without copying it
    if "C" in chunk.phs or profiled:
        raws = DEC_RAW_LIST.decode(bytes(text))
        for raw, ph, ev in zip(raws, chunk.phs, events, strict=True):
            if ph == "C" or (profiled and ph == "X" and ev.cat == PROFILER_RANGE_CAT):
                try:
                    (chunk.counters if ph == "C" else chunk.profiler_ranges).append(DEC_COUNTER.decode(raw))
                except msgspec.MsgspecError:
                    pass
