"""The document around a Chrome trace's events, as the streamer sees it: what it learns of the document
(:class:`DocumentInfo`), the decoded runs of elements it hands on (:class:`Chunk`), the bytes between elements,
and the keys before and after the events array (:func:`decode_header`).

Nothing here imports ``msgspec`` or the decoders at import time: the streamer starts reading a file while the
rest of the parser is still being imported (:mod:`~gputop_trace.parsers.chrome.opening`).
"""

from __future__ import annotations

import sys
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


class Chunk:
    """Decoded events of one chunk, and the counter events among them (when any).

    A plain class, not a dataclass: defining a dataclass runs generated code when its module is imported, and
    this module is imported before the first byte of a file is read (2 ms of the 5 the opening took)."""

    __slots__ = (
        "counters",
        "events",
        "exact",
        "fast",
        "notes",
        "phs",
        "profiler_ranges",
        "repaired",
        "repaired_example",
        "skipped",
        "skipped_example",
        "ts",
        "ts_ns",
        "ts_state",
    )

    def __init__(
        self,
        events: list[Any],
        counters: list[CounterEvent] | None = None,
        profiler_ranges: list[CounterEvent] | None = None,
        *,
        exact: bool = False,
        skipped: int = 0,
        skipped_example: str = "",
        repaired: int = 0,
        repaired_example: str = "",
        notes: tuple[str, ...] = (),
        phs: list[str] | None = None,
        ts: npt.NDArray[np.float64] | None = None,
        ts_ns: npt.NDArray[np.int64] | None = None,
        ts_state: npt.NDArray[np.uint8] | None = None,
        fast: Any = None,
    ) -> None:
        self.events = events
        self.counters: list[CounterEvent] = [] if counters is None else counters
        #: CUPTI range-profiler ranges (``cuda_profiler_range``), decoded again with every arg: their counters
        self.profiler_ranges: list[CounterEvent] = [] if profiler_ranges is None else profiler_ranges
        self.exact = exact
        self.skipped = skipped
        self.skipped_example = skipped_example
        self.repaired = repaired  # events kept after fields of the wrong type or range were dropped or converted
        self.repaired_example = repaired_example
        self.notes = notes  # what a lenient read had to tolerate
        self.phs = phs  # every event's ``ph`` (when the typed decoder made the chunk)
        self.ts = ts  # every event's ``ts`` in µs, NaN when missing (not ``exact``)
        self.ts_ns = ts_ns  # every event's ``ts`` in ns (``exact`` chunks)
        self.ts_state = ts_state  # values.T_OK / T_MISSING / T_FAR (``exact`` chunks)
        self.fast = fast  # the compiled scanner's columns (a fast.FastChunk; ``events`` is then empty)


class DocumentInfo:
    """What the streamer learnt about the document besides the events (a plain class, as :class:`Chunk`)."""

    __slots__ = (
        "chunks",
        "consumed",
        "damaged",
        "form",
        "header",
        "header_text",
        "too_deep",
        "total",
        "trailer_too_deep",
        "trailer_unreadable",
        "truncated",
    )

    def __init__(self, *, consumed: int = 0, total: int = 0, chunks: int = 0) -> None:
        self.form = ""  # "object" | "array"
        self.header: dict[str, Any] = {}
        #: the keys before the events array, as JSON text not decoded yet (the streamer decodes them at the end)
        self.header_text = b""
        self.consumed = consumed  # decompressed bytes of complete events and structure
        self.total = total  # decompressed bytes read
        self.truncated = False
        self.chunks = chunks
        self.damaged: list[tuple[int, int]] = []  # (decompressed offset, bytes skipped)
        self.too_deep: list[tuple[int, int]] = []  # (offset, bytes) of elements nested too deeply
        self.trailer_too_deep = False  # the keys after the events array nest too deeply to read
        self.trailer_unreadable = 0  # bytes after the events array that are not the rest of the object


class NotAnArray(Exception):  # noqa: N818 - a control-flow signal
    """The cut was not at an element boundary."""


def decode_header(text: bytes) -> Any:
    """The keys around the events array (lenient: lone surrogates, NaN, control characters; invalid UTF-8
    replaced). Raises ValueError or RecursionError.

    By msgspec where it is imported already (the keys after the events array, read once the parser is), else by
    the standard library's ``json``, which reads the lenient forms too. Both give the same values for strict JSON.
    Not an import of msgspec here: the keys before the events are read on the read-ahead thread while the loading
    thread imports the parser, msgspec among it, and waiting for that import would hold the first window back; a
    msgspec that is in ``sys.modules`` but still being imported there (half made, no ``json`` yet) is not used."""
    msgspec = sys.modules.get("msgspec")
    spec = getattr(msgspec, "__spec__", None)
    if msgspec is not None and not getattr(spec, "_initializing", False):  # not while another thread imports it
        try:
            return msgspec.json.decode(text)
        except (msgspec.DecodeError, RecursionError):
            pass  # a lenient form (NaN, a lone surrogate, ...), a number out of range, or not an object: json says
    import json  # (here: imported by most programs already; a few ms where it is not)

    return json.loads(text.decode("utf-8", "replace"), strict=False)


__all__ = ["MAX_SPLIT_TRIES", "WS", "Chunk", "DocumentInfo", "NotAnArray", "decode_header", "skip_ws_comma"]
