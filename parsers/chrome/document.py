"""The document around a Chrome trace's events, as the streamer sees it: what it learns of the document
(:class:`DocumentInfo`), the decoded runs of elements it hands on (:class:`Chunk`), the bytes between elements,
and the keys before and after the events array (:func:`decode_header`).

Nothing here imports ``msgspec`` or the decoders at import time: the streamer starts reading a file while the
rest of the parser is still being imported (:mod:`~gputop_trace.parsers.chrome.opening`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - annotations only
    import numpy as np
    import numpy.typing as npt

    from gputop_trace.parsers.chrome.structs import CounterEvent

WS = b" \t\r\n"
MAX_SPLIT_TRIES = 24  # cut points tried before a run of elements counts as undecodable


def skip_ws_comma(buf: bytes | bytearray | memoryview, pos: int, n: int) -> int:
    """The first position at or after ``pos`` (below ``n``) that is neither white space nor a comma."""
    while pos < n and buf[pos] in b" \t\r\n,":
        pos += 1
    return pos


@dataclass
class Chunk:
    """Decoded events of one chunk, and the counter events among them (when any)."""

    events: list[Any]
    counters: list[CounterEvent] = field(default_factory=list)
    #: CUPTI range-profiler ranges (``cuda_profiler_range``), decoded again with every arg: their counters
    profiler_ranges: list[CounterEvent] = field(default_factory=list)
    exact: bool = False
    skipped: int = 0
    skipped_example: str = ""
    repaired: int = 0  # events kept after fields of the wrong type or range were dropped or converted
    repaired_example: str = ""
    notes: tuple[str, ...] = ()  # what a lenient read had to tolerate
    phs: list[str] | None = None  # every event's ``ph`` (when the typed decoder made the chunk)
    ts: npt.NDArray[np.float64] | None = None  # every event's ``ts`` in µs, NaN when missing (not ``exact``)
    ts_ns: npt.NDArray[np.int64] | None = None  # every event's ``ts`` in ns (``exact`` chunks)
    ts_state: npt.NDArray[np.uint8] | None = None  # values.T_OK / T_MISSING / T_FAR (``exact`` chunks)
    fast: Any = None  # the compiled scanner's columns (a fast.FastChunk; ``events`` is then empty)


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


class NotAnArray(Exception):  # noqa: N818 - a control-flow signal
    """The cut was not at an element boundary."""


def decode_header(text: bytes) -> Any:
    """The keys around the events array, by the standard library's ``json`` (lenient: lone surrogates, NaN,
    control characters; invalid UTF-8 replaced). Raises ValueError or RecursionError.

    Not msgspec: the header is read on the read-ahead thread while the loading thread imports the parser, msgspec
    among it, and waiting for that import would hold the first window back. A header is a few keys."""
    import json  # (here: imported by most programs already; a few ms where it is not)

    return json.loads(text.decode("utf-8", "replace"), strict=False)


__all__ = ["MAX_SPLIT_TRIES", "WS", "Chunk", "DocumentInfo", "NotAnArray", "decode_header", "skip_ws_comma"]
