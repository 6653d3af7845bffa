"""Refusing, with a clear message, to load a trace that would not fit in memory (instead of being killed).

The estimate is made from file sizes before anything is parsed: the decompressed JSON size (read from the gzip
trailer when it can be trusted) times the loader's measured memory per JSON byte, plus a fixed overhead. What is
available comes from the kernel (``MemAvailable``) and the cgroup limit of a container, whichever is smaller;
``--max-memory`` (or ``GPUTOP_MAX_MEMORY``) replaces it.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from gputop_trace.errors import TraceError
from gputop_trace.parsers.sniff import list_trace_files
from gputop_trace.parsers.source import GZIP_MAGIC, SQLITE_MAGIC
from gputop_trace.units import parse_size_bytes

#: model + streaming buffers per byte of decompressed JSON, and the fixed part (benchmarks/RESULTS.md). Peak RSS
#: of whole processes measured on GPT-like Kineto JSON: ``summary`` 103 MB on 100 MB, 647 MB on 1 GB; ``view``
#: (loaded and analysed) 136 MB and 669 MB (tests/test_resource_limits.py checks a fresh one)
JSON_BYTES_FACTOR = 1.0  # measured peaks: 0.62 × JSON (GPT-like events), 1.3 × (small DDP events); RESULTS.md
SQLITE_BYTES_FACTOR = 4.0  # measured peak RSS ≈ 4 × the export size (benchmarks/RESULTS.md)
#: Python, numpy and the streaming buffers: the window (two chunks of 4 MiB per scanning thread, at most 8
#: threads: 64 MiB), the chunks waiting between threads and the scanner's pooled columns
FIXED_OVERHEAD = 300 << 20
#: gzip ratio assumed when the trailer cannot be trusted (several members, or more than 4 GiB)
ASSUMED_GZIP_RATIO = 12


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a load is expected to need, and what the inputs are believed to hold once decompressed."""

    needed: int
    decompressed: int
    files: int


def decompressed_size(path: str) -> int:
    """Bytes the file holds once decompressed (a gzip's own size record where it can be trusted, else an
    assumed ratio; the file's size for plain JSON and SQLite)."""
    return _decompressed_size(path)[0]


def _decompressed_size(path: str) -> tuple[int, str]:
    size = os.path.getsize(path)
    with open(path, "rb") as f:
        head = f.read(16)
        if head.startswith(SQLITE_MAGIC):
            return size, "sqlite"
        if not head.startswith(GZIP_MAGIC):
            return size, "json"
        if size < 18:
            return size, "json"
        f.seek(-4, os.SEEK_END)
        isize = int.from_bytes(f.read(4), "little")
    # ISIZE is the size modulo 2**32 of the last member only: trust it when it is plausible
    if size <= 1 << 32 and size <= isize <= size * 1032:  # deflate cannot do better than ~1032:1
        return isize, "json"
    return size * ASSUMED_GZIP_RATIO, "json"


def estimate(paths: Sequence[str]) -> MemoryEstimate:
    """Memory needed to load these files (directories expanded by the caller)."""
    needed = FIXED_OVERHEAD
    total = 0
    n = 0
    for p in paths:
        if not os.path.isfile(p):
            continue
        try:
            size, kind = _decompressed_size(p)
        except OSError:  # unreadable: the loader says why, in its own words
            continue
        total += size
        n += 1
        needed += int(size * (SQLITE_BYTES_FACTOR if kind == "sqlite" else JSON_BYTES_FACTOR))
    return MemoryEstimate(needed=needed, decompressed=total, files=n)


def available_memory() -> int | None:
    """Bytes this process can still allocate (MemAvailable, capped by a cgroup limit), or None if unknown."""
    avail: int | None = None
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        avail = None
    for limit_file, usage_file in (
        ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
        ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
    ):
        try:
            with open(limit_file) as f:
                raw = f.read().strip()
            if raw == "max" or int(raw) > 1 << 60:
                continue
            with open(usage_file) as f:
                usage = int(f.read().strip())
            room = int(raw) - usage
            avail = room if avail is None else min(avail, room)
            break
        except (OSError, ValueError):
            continue
    return avail


def trace_files(paths: Sequence[str]) -> list[str]:
    """The files ``paths`` will load: directories expanded to their trace files the way the loader does."""
    files: list[str] = []
    for p in paths:
        files.extend(list_trace_files(p) if os.path.isdir(p) else [p])
    return files


def check_paths(paths: Sequence[str], max_memory: str | int | None = None) -> MemoryEstimate:
    """:func:`check_memory` for what the command line or the app was given (files or directories)."""
    files = trace_files(paths)
    what = paths[0] if len(paths) == 1 else None
    return check_memory(files, max_memory, what=what)


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{max(1, round(n / 1e6))} MB"


def check_memory(
    paths: Sequence[str], max_memory: str | int | None = None, *, what: str | None = None
) -> MemoryEstimate:
    """Raise :class:`TraceError` when loading ``paths`` would need more memory than is available.

    ``max_memory`` (bytes, or a size like ``"12GB"``; default ``$GPUTOP_MAX_MEMORY``) replaces the measured
    available memory. ``what`` names the input in the message (default: the file, or "these N traces").
    """
    est = estimate(paths)
    env = os.environ.get("GPUTOP_MAX_MEMORY")
    limit_text = max_memory if max_memory is not None else env
    if limit_text is not None:
        try:
            limit: int | None = limit_text if isinstance(limit_text, int) else parse_size_bytes(str(limit_text))
        except ValueError as e:
            raise TraceError(f"--max-memory (or GPUTOP_MAX_MEMORY): {e}.") from None
        source = "the --max-memory limit" if max_memory is not None else "the GPUTOP_MAX_MEMORY limit"
    else:
        limit = available_memory()
        source = "available"
    if limit is not None and est.needed > limit:
        what = what or (paths[0] if len(paths) == 1 else f"these {est.files} traces")
        suggest = _size(int(est.needed * 1.2)).replace(" ", "")
        raise TraceError(
            f"Opening {what} would need about {_size(est.needed)} of memory (estimated from "
            f"{_size(est.decompressed)} of trace data once decompressed), but only {_size(limit)} is {source}. "
            "Close other programs or use a machine with more memory; record fewer steps or without with_stack to "
            f"make the trace smaller; or pass --max-memory {suggest} to try anyway.",
        )
    return est
