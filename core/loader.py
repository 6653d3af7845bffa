"""One entry point from a path (file, directory of per-rank traces, or several paths) to a :class:`Trace`."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from gputop_trace.errors import TraceError
from gputop_trace.model import Trace, merge_traces
from gputop_trace.parsers.sniff import TRACE_SUFFIXES, sniff

#: ``progress(bytes_done, bytes_total, events_so_far)``
Progress = Callable[[int, int, int], None]


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


def load_file(path: str, *, progress: Progress | None = None, default_rank: int = 0, use_cache: bool = True) -> Trace:
    """Load one file of any supported format, from the columnar cache when it was loaded before
    (:mod:`gputop_trace.cache`; ``use_cache=False`` or ``GPUTOP_TRACE_NO_CACHE=1`` bypasses it)."""
    kind = sniff(path)
    if kind == "directory":
        return load_paths([path], progress=progress, use_cache=use_cache)
    if kind in ("chrome", "nsys", "nsys-rep") and use_cache:
        from gputop_trace import cache

        if not cache.cache_disabled():
            trace = cache.load_cached(
                path,
                {"format": kind, "default_rank": default_rank},
                lambda: _parse_file(path, kind, progress, default_rank),
            )
            if progress is not None:
                size = os.path.getsize(path)
                progress(size, size, len(trace))
            return trace
    return _parse_file(path, kind, progress, default_rank)


def _parse_file(path: str, kind: str, progress: Progress | None, default_rank: int) -> Trace:
    if kind == "chrome":
        from gputop_trace.parsers import chrome

        return chrome.load(path, progress=progress, default_rank=default_rank)
    if kind in ("nsys", "nsys-rep"):
        from gputop_trace.parsers import nsys  # type: ignore[attr-defined,unused-ignore]

        if kind == "nsys-rep":
            rep: Trace = nsys.load_report(path, progress=progress, default_rank=default_rank)
            return rep
        sq: Trace = nsys.load(path, progress=progress, default_rank=default_rank)
        return sq
    if kind == "ncu-rep":
        raise TraceError(
            f"{path} is an Nsight Compute report, not a timeline. Open it with: gputop-trace ncu {path}",
            path=path,
        )
    raise TraceError(f"{path}: unsupported input.", path=path)


def load_paths(paths: Sequence[str], *, progress: Progress | None = None, use_cache: bool = True) -> Trace:
    """Load one or more paths (files or directories) as one trace; several files become ranks.

    A file's rank comes from the file itself (Kineto ``distributedInfo``), else from a number in its name
    (``rank3``), else from its position in the sorted list. Each file is cached on its own (``use_cache``).
    """
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            files.extend(list_trace_files(p))
        else:
            files.append(p)
    if len(files) == 1:
        return load_file(files[0], progress=progress, use_cache=use_cache)
    from gputop_trace.parsers.chrome import rank_from_filename

    traces: list[Trace] = []
    used: set[int] = set()
    for i, f in enumerate(files):
        guess = rank_from_filename(f)
        default = guess if guess is not None and guess not in used else i
        t = load_file(f, progress=progress, default_rank=default, use_cache=use_cache)
        traces.append(t)
        used.update(t.meta.ranks)
    ranks = [r for t in traces for r in t.meta.ranks]
    if len(set(ranks)) != len(ranks):
        raise TraceError(
            f"Two of the traces claim the same rank ({sorted(ranks)}); open them one at a time, or rename them "
            "rank0…, rank1… and remove distributedInfo clashes.",
        )
    return merge_traces(traces)
