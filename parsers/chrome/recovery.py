"""Damaged bytes in the ``traceEvents`` array: keep the longest decodable run of elements before them, find where
decoding works again, and tell elements that only nest too deeply from real damage."""

from __future__ import annotations

import re

import msgspec

from gputop_trace.parsers.chrome.decode import decode_chunk, decode_last
from gputop_trace.parsers.chrome.document import Chunk, NotAnArray, skip_ws_comma
from gputop_trace.parsers.chrome.structs import DEC_RAW_LIST

RESYNC_PROBES = 256  # element boundaries tried after damage before giving up on a window
_BOUNDARY = re.compile(rb"\}[ \t\r\n]*,")


def recover_damage(buf: bytes, pos: int) -> tuple[int, Chunk | None, int]:
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
            chunk = decode_chunk(b"[" + buf[pos : cands[mid]] + b"]")
        except NotAnArray:
            hi = mid - 1
        else:
            lo, best = mid, chunk
    good = cands[lo] if lo >= 0 else pos
    if lo >= 0 and best is None:  # pragma: no cover - lo only moves on success
        best = decode_chunk(b"[" + buf[pos:good] + b"]")
    for j in range(lo + 1, min(len(cands), lo + 1 + RESYNC_PROBES)):
        start = skip_ws_comma(buf, cands[j], len(buf))
        if buf[start : start + 1] != b"{":
            continue
        probe = cands[j + 1] if j + 1 < len(cands) else None
        if probe is None:
            if decode_last(buf, start)[0] >= 0:
                return good, best, start
            continue
        try:
            DEC_RAW_LIST.decode(b"[" + buf[start:probe] + b"]")
        except (msgspec.DecodeError, RecursionError):
            continue
        return good, best, start
    return good, best, -1


def nested_too_deeply(region: bytes, *, closed: bool = False) -> bool:
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
        DEC_RAW_LIST.decode(b"[" + body + b"]")
    except RecursionError:
        return True
    except msgspec.DecodeError:
        return False
    return False
