"""The two runs of a comparison (``gputop-trace diff BASE TEST``): loading one side so that its errors name it, and
telling whether both sides are the same files."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Sequence

from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_paths
from gputop_trace.load.resources import check_paths, trace_files
from gputop_trace.model.trace import Trace

_CHUNK = 1 << 20


def load_run(
    side: str,
    paths: Sequence[str],
    *,
    max_memory: int | None = None,
    use_cache: bool = True,
    include_python: bool = True,
    progress: Callable[[int, int, int], None] | None = None,
) -> Trace:
    """Load one run (``side``: ``BASE`` or ``TEST``): files, or a folder of per-rank traces. A :class:`TraceError`
    says which side could not be read, then the loader's own paragraph."""
    try:
        check_paths(list(paths), max_memory)
        return load_paths(list(paths), progress=progress, use_cache=use_cache, include_python=include_python)
    except TraceError as e:
        raise TraceError(f"{side} ({', '.join(paths)}) could not be read: {e.message}", path=e.path) from None


def _digest(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def same_inputs(base: Sequence[str], test: Sequence[str]) -> bool:
    """Whether both sides are the same files (the same paths, or files of identical content, compared by size
    and then SHA-256). Unreadable or missing files are never the same (the loader explains them)."""
    try:
        a, b = trace_files(list(base)), trace_files(list(test))
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if os.path.realpath(x) == os.path.realpath(y):
                continue
            if os.path.getsize(x) != os.path.getsize(y) or _digest(x) != _digest(y):
                return False
        return True
    except (OSError, TraceError):
        return False
