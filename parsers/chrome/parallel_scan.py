"""One window of the stream scanned by the compiled scanner, by several threads at once where there are cores
for them (the scanner runs without the GIL, so each thread has a core of its own while it scans).

The window is cut into parts at guessed element boundaries: the first ``}`` ``,`` ``{`` (white space allowed)
after each even share of the window. A guess may fall inside a string (a kernel name holding ``}, {``), so it is
proven afterwards: part ``i`` starts at a true boundary (part 0 at the streamer's position), the scanner reads
its elements one after another, and when the last of them ends where part ``i + 1`` was cut (white space
between), that cut is a true boundary too. The parts after a cut that is not are dropped, and the streamer goes
on from where the last kept part ends, so a wrong guess costs a scan, never a wrong event.

Each part is scanned in the scanner's prefix mode, with the byte before it (the separating comma, or the byte
before the window's first element) replaced by ``[`` for the time of the scan; the parts never read each other's
replaced byte. The parts are scanned in one call
(:func:`~gputop_trace.parsers.chrome.scanner.raw_scan_many`: the first on the streamer's thread, each other one
on a native thread the scanner starts, all without the GIL, which is taken again once they are all done; Python
threads took it to start, to scan and to be joined, and each time waited for the loading thread to let it go).
The raw scan needs neither msgspec nor the decoders: the first window of a load is scanned while they are
imported; the scanner's columns become chunks on the streamer's thread once every part is scanned.
``GPUTOP_SCAN_THREADS`` sets the number of threads (default: the cores this process may use, at most
:data:`MAX_THREADS`; 1 scans on the read-ahead thread alone).
"""

from __future__ import annotations

import os
import re
from typing import Any

from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.document import Chunk
from gputop_trace.parsers.cores import usable_cores

SCAN_THREADS_ENV = "GPUTOP_SCAN_THREADS"
#: more threads than this gain little: the loader's own thread turns the parts into columns one at a time
MAX_THREADS = 8
#: a part smaller than this is not worth a thread of its own (bytes)
MIN_PART = 256 << 10

#: windows scanned in parts, parts kept, and parts dropped after a cut found inside an element (tests, benchmarks)
stats = {"windows": 0, "parts": 0, "dropped": 0}

_CUT = re.compile(rb"\}[ \t\r\n]*(,)[ \t\r\n]*\{")
_WS = frozenset(b" \t\r\n")


def scan_threads() -> int:
    """How many threads scan one window (:data:`SCAN_THREADS_ENV`, else the usable cores, at most 8)."""
    text = os.environ.get(SCAN_THREADS_ENV, "")
    if text.strip().isdigit():
        return max(1, min(int(text), 64))
    return max(1, min(usable_cores(), MAX_THREADS))


def _cuts(buf: memoryview, pos: int, end: int, parts: int) -> list[int]:
    """``pos`` and then, for each further part, the place of a comma that may separate two elements."""
    cuts = [pos]
    share = (end - pos) // parts
    for i in range(1, parts):
        m = _CUT.search(buf, max(pos + i * share, cuts[-1] + 1), end)
        if m is None:
            break
        cuts.append(m.start(1))
    return cuts


def scan_parts(buf: memoryview, pos: int, end: int, parts: int, *, min_part: int = MIN_PART) -> list[tuple[int, Chunk]]:
    """The elements of ``buf[pos:end]`` (``pos`` at an element; ``buf[pos - 1]`` is free to overwrite), scanned
    in up to ``parts`` pieces at once (one piece when ``parts`` is 1 or the window is short): ``(end of the
    piece's last element, chunk)`` per kept piece, in order. Empty when the first piece is not one the scanner
    reads (the streamer's Python path takes over)."""
    cuts = (
        _cuts(buf, pos, end, min(parts, (end - pos) // min_part)) if parts > 1 and end - pos >= 2 * min_part else [pos]
    )
    starts = [pos - 1, *cuts[1:]]  # where each part's "[" goes
    stops = [*cuts[1:], end]
    saved = [buf[s] for s in starts]
    for s in starts:
        buf[s] = 0x5B  # "["
    texts = [buf[a:b] for a, b in zip(starts, stops, strict=True)]
    try:  # (the first part on this thread, each other one on a native thread of its own)
        got: list[dict[str, Any] | None] = scanner.raw_scan_many(texts, prefix=True)
    finally:
        for t in texts:
            t.release()
        for s, b in zip(starts, saved, strict=True):
            buf[s] = b
    from gputop_trace.parsers.chrome import fast  # (imported by now, or being imported by the loader's thread)

    out: list[tuple[int, Chunk]] = []
    for i, raw in enumerate(got):
        fc = fast.from_raw(raw, prefix=True)
        got[i] = None  # (the columns of a part not kept go back to the scanner's pool)
        if fc is None:
            break
        stop = starts[i] + fc.end
        out.append((stop, Chunk([], fast=fc)))
        if i + 1 < len(starts) and not _only_ws(buf, stop, cuts[i + 1]):
            break  # the next cut was inside an element: what follows is read again from ``stop``
    if len(starts) > 1:
        stats["windows"] += 1
        stats["parts"] += len(out)
        stats["dropped"] += len(starts) - len(out)
    return out


def _only_ws(buf: memoryview, a: int, b: int) -> bool:
    return all(c in _WS for c in buf[a:b])


__all__ = ["scan_parts", "scan_threads"]
