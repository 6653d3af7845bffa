"""``assert_traces_equal(a, b)``: two :class:`~gputop_trace.model.trace.Trace` objects hold exactly the same model.

Every field of the dataclass is compared, found by introspection so that a field added to the model later is
compared too: numpy columns by dtype, shape and value (NaN equal to NaN), lanes, names, side tables, flows,
counters and every metadata field (exact types: ``1`` is not ``1.0``). The first difference is reported with
its path (``kernels.grid[12]``, ``meta.properties['file_size']``).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from gputop_trace.model.trace import Trace


def trace_differences(a: Trace, b: Trace, *, ignore: tuple[str, ...] = ()) -> list[str]:
    """Every difference between two traces, as ``path: what`` lines (empty when they are equal)."""
    out: list[str] = []
    _compare(a, b, "trace", out, ignore)
    return out


def assert_traces_equal(a: Trace, b: Trace, *, ignore: tuple[str, ...] = ()) -> None:
    """Fail with the first differences when two traces do not hold the same model.

    ``ignore`` names paths to skip (``"meta.source"``).
    """
    diffs = trace_differences(a, b, ignore=ignore)
    if diffs:
        shown = "\n  ".join(diffs[:12])
        more = f"\n  ... and {len(diffs) - 12} more" if len(diffs) > 12 else ""
        raise AssertionError(f"traces differ:\n  {shown}{more}")


def _compare(a: Any, b: Any, path: str, out: list[str], ignore: tuple[str, ...]) -> None:
    if path.removeprefix("trace.") in ignore:
        return
    if type(a) is not type(b):
        out.append(f"{path}: type {type(a).__name__} != {type(b).__name__}")
        return
    if isinstance(a, np.ndarray):
        _compare_arrays(a, b, path, out)
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        for f in dataclasses.fields(a):
            _compare(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}", out, ignore)
    elif isinstance(a, (tuple, list)):
        if len(a) != len(b):
            out.append(f"{path}: length {len(a)} != {len(b)}")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            _compare(x, y, f"{path}[{i}]", out, ignore)
            if len(out) > 50:
                return
    elif isinstance(a, dict):
        if list(a) != list(b):
            out.append(f"{path}: keys {list(a)[:8]} != {list(b)[:8]}")
            return
        for k in a:
            _compare(a[k], b[k], f"{path}[{k!r}]", out, ignore)
    elif isinstance(a, float):
        if not (a == b or (math.isnan(a) and math.isnan(b))):
            out.append(f"{path}: {a!r} != {b!r}")
    elif a != b:
        out.append(f"{path}: {_short(a)} != {_short(b)}")


def _compare_arrays(a: np.ndarray[Any, Any], b: np.ndarray[Any, Any], path: str, out: list[str]) -> None:
    if a.dtype != b.dtype or a.shape != b.shape:
        out.append(f"{path}: {a.dtype}{list(a.shape)} != {b.dtype}{list(b.shape)}")
        return
    same = ((a == b) | (np.isnan(a) & np.isnan(b))) if a.dtype.kind == "f" else (a == b)
    if not bool(np.all(same)):
        bad = np.argwhere(~same)
        first = tuple(int(i) for i in bad[0])
        where = first[0] if len(first) == 1 else first
        out.append(f"{path}[{where}]: {a[first]!r} != {b[first]!r} ({len(bad)} elements differ)")


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 120 else text[:117] + "..."
