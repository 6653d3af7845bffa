"""Deciding what a path holds from its first bytes (never from its name alone), and which files of a directory of
per-rank traces are traces (by their endings: :func:`list_trace_files`, what the loader and the memory estimate
both read)."""

from __future__ import annotations

import os

from gputop_trace.errors import TraceError
from gputop_trace.parsers.source import GZIP_MAGIC, SQLITE_MAGIC, open_checked

#: File name endings of traces inside a directory of per-rank traces.
TRACE_SUFFIXES = (".json", ".json.gz", ".sqlite", ".nsys-rep", ".qdrep")


def sniff(path: str) -> str:
    """``"chrome"`` (JSON, plain or gzip), ``"nsys"`` (SQLite), ``"nsys-rep"``, ``"ncu-rep"`` or ``"directory"``.

    Raises :class:`TraceError` for a missing, unreadable, empty or unrecognised file.
    """
    if os.path.isdir(path):
        return "directory"
    with open_checked(path) as f:
        head = f.read(64)
    if not head:
        raise TraceError(
            f"{path} is empty (0 bytes). The profiler probably crashed before writing it; record the profile again.",
            path=path,
        )
    if head.startswith(GZIP_MAGIC):
        return "chrome"
    if head.startswith(SQLITE_MAGIC):
        return "nsys"
    lower = path.lower()
    if lower.endswith((".nsys-rep", ".qdrep")):
        return "nsys-rep"
    if lower.endswith(".ncu-rep"):
        return "ncu-rep"
    stripped = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if stripped[:1] in (b"{", b"["):
        return "chrome"
    if lower.endswith(".sqlite"):
        raise TraceError(
            f"{path} is named .sqlite but is not a SQLite database (it starts with {head[:16]!r}). "
            "Export the profile again with: nsys export --type sqlite --output report.sqlite report.nsys-rep",
            path=path,
        )
    if any(b < 9 or 13 < b < 32 for b in head[:32]):
        what = "a binary file"
    else:
        what = f"a text file that starts with {head[:24].decode('utf-8', 'replace')!r}"
    raise TraceError(
        f"{path} is {what}, not a profile gputop-trace can read. It opens Chrome/Kineto/JAX traces (.json, "
        ".json.gz), Nsight Systems SQLite exports (.sqlite, or .nsys-rep with nsys installed) and directories "
        "of per-rank traces.",
        path=path,
    )


def list_trace_files(directory: str) -> list[str]:
    """Trace files directly inside ``directory`` (sorted by name), by their endings."""
    try:
        entries = sorted(os.listdir(directory))
    except PermissionError:
        raise TraceError(f"Permission denied listing {directory}.", path=directory) from None
    files = [
        os.path.join(directory, e)
        for e in entries
        if e.lower().endswith(TRACE_SUFFIXES) and os.path.isfile(os.path.join(directory, e))
    ]
    if not files:
        raise TraceError(
            f"{directory} holds no traces: no file in it ends with {', '.join(TRACE_SUFFIXES)}. "
            "Point gputop-trace at a trace file, or at the folder torch.profiler's tensorboard_trace_handler "
            "wrote (one file per rank).",
            path=directory,
        )
    return files
