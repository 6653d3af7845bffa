"""The compiled scanner (``_fastscan.c``, optional) as the streamer calls it: whether it is installed and turned
on, and the raw scan of one text (GIL released), which :func:`gputop_trace.parsers.chrome.fast.from_raw` turns
into a :class:`~gputop_trace.parsers.chrome.fast.FastChunk`.

This module imports nothing heavy (no ``msgspec``, no decoders), so that a load can start scanning while the rest
of the parser is imported (:mod:`~gputop_trace.parsers.chrome.opening`). The scanner decodes an event's args
into ``Args`` where they hold one of the keys ``Args`` reads: :data:`ARGS_KEYS` is that list, written out here
(``tests/unit/test_scanner_keys.py`` checks it against the struct's fields).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gputop_trace.model.native import PURE_PYTHON_ENV, pure_python_forced

try:  # the compiled scanner is optional: built by `pip install .` where a C compiler is present
    from gputop_trace.parsers.chrome import _fastscan  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - depends on the install
    _fastscan = None


#: the JSON keys of ``structs.Args``' fields, in order: an args object holding one of them is decoded into Args
ARGS_KEYS = (
    "External id",
    "correlation",
    "device",
    "grid",
    "block",
    "registers per thread",
    "shared memory",
    "blocks per SM",
    "warps per SM",
    "est. achieved occupancy %",
    "bytes",
    "size",
    "direction",
    "Collective name",
    "In msg nelems",
    "Out msg nelems",
    "Group size",
    "Process Group Name",
    "dtype",
    "name",
    "sort_index",
    "labels",
    "correlation_id",
    "memcpy_details",
    "Memset_details",
    "kernel_details",
    "kernel_file",
    "kernel_hash",
    "kernel_backend",
    "Input Dims",
    "Input type",
    "Sequence number",
    "Fwd thread id",
    "Total Allocated",
    "Total Reserved",
    "Bytes",
    "Device Id",
    "Device Type",
)

if _fastscan is not None:
    _fastscan.configure([k.encode() for k in ARGS_KEYS])


def available() -> bool:
    """Whether the compiled scanner is installed."""
    return _fastscan is not None


def enabled() -> bool:
    """Whether chunks are scanned by compiled code (installed, and not turned off by :data:`PURE_PYTHON_ENV`)."""
    return _fastscan is not None and not pure_python_forced()


def raw_scan(text: bytes | memoryview, prefix: bool) -> dict[str, Any] | None:
    """The scanner's columns of ``text`` (``[e, e, ...]``; with ``prefix``, the complete elements of a window's
    first bytes), as buffers; None when the text is not one it reads exactly. Releases the GIL while it scans."""
    assert _fastscan is not None
    got: dict[str, Any] | None = _fastscan.scan(text, prefix)
    return got


def raw_scan_many(texts: list[memoryview], prefix: bool) -> list[dict[str, Any] | None]:
    """:func:`raw_scan` of each text, all at once: each after the first on a native thread of its own, the first on
    the caller's, without the GIL (one release of it for them all)."""
    assert _fastscan is not None
    got: list[dict[str, Any] | None] = _fastscan.scan_many(texts, prefix)
    return got


def is_json_object(text: bytes) -> bool:
    """Whether ``text`` is one JSON object that msgspec decodes (strict JSON: no NaN, no control characters or
    lone surrogates, valid UTF-8, not nested too deeply); False without the compiled scanner."""
    return _fastscan is not None and bool(_fastscan.is_object(text))


def map_ids(
    local: Any, keys: list[Any], table: dict[Any, int], new: Callable[[Any], int] | None = None
) -> bytes | None:
    """The trace's id of each of ``keys`` (int64 bytes, -1 for an id absent from ``local``), looked up in (and
    added to) ``table`` in one pass over ``local`` (a contiguous numpy array of int32 or int64 ids in
    ``[0, len(keys))``): a new key gets ``new(key)``, or ``len(table)`` when ``new`` is None, in the order the
    ids first appear. None where the compiled scanner is off (the caller maps them in Python)."""
    if not enabled() or local.dtype.itemsize not in (4, 8) or local.dtype.kind != "i":
        return None
    got: bytes = _fastscan.map_ids(local, local.dtype.itemsize, keys, table, new)
    return got


def classes(
    src: Any, cat: Any, phc: Any, device: Any, name: Any, mtia: int, table: dict[tuple[int, ...], int]
) -> bytes | None:
    """Each event's class (int32 bytes; see :func:`~gputop_trace.parsers.chrome.classify.event_classes`) in one
    pass in C: its row ``(src, cat, phc, device, name or -1)`` looked up in (and added to) ``table``, new rows in the
    order they first appear. The columns are contiguous int32 (``phc`` uint8). None where the compiled scanner is
    off (the caller finds them with numpy)."""
    if not enabled():
        return None
    got: bytes = _fastscan.classes(src, cat, phc, device, name, mtia, table)
    return got


def release_memory() -> None:
    """Free the column memory the scanner keeps for reuse from one chunk to the next (once a file is read)."""
    if _fastscan is not None:
        _fastscan.trim()


__all__ = [
    "ARGS_KEYS",
    "PURE_PYTHON_ENV",
    "available",
    "classes",
    "enabled",
    "is_json_object",
    "raw_scan",
    "raw_scan_many",
    "release_memory",
]
