"""Copies of a real Chrome/Kineto trace with one thing changed, written to a test's tmp_path (never committed), for
the run comparison: every time stretched (a uniformly slower run), one kernel longer, a kernel renamed, another
GPU model."""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _rewrite(src: Path, dst: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    with gzip.open(src, "rt", encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    change(doc)
    with gzip.open(dst, "wt", encoding="utf-8") as f:
        json.dump(doc, f)
    return dst


def _timed(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in doc["traceEvents"] if isinstance(e.get("ts"), (int, float))]


def slower_copy(src: Path, dst: Path, factor: float) -> Path:
    """Every event's time from the trace start and every duration multiplied by ``factor``."""

    def change(doc: dict[str, Any]) -> None:
        events = _timed(doc)
        t0 = min(float(e["ts"]) for e in events)
        for e in events:
            e["ts"] = t0 + (float(e["ts"]) - t0) * factor
            if isinstance(e.get("dur"), (int, float)):
                e["dur"] = float(e["dur"]) * factor

    return _rewrite(src, dst, change)


def kernel_longer_copy(src: Path, dst: Path, name: str, factor: float) -> Path:
    """Every launch of kernel ``name`` ``factor`` times as long (nothing else moves)."""

    def change(doc: dict[str, Any]) -> None:
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e.get("name") == name:
                e["dur"] = float(e["dur"]) * factor

    return _rewrite(src, dst, change)


def renamed_kernel_copy(src: Path, dst: Path, old: str, new: str) -> Path:
    """Kernel ``old`` called ``new``."""

    def change(doc: dict[str, Any]) -> None:
        for e in doc["traceEvents"]:
            if e.get("cat") == "kernel" and e.get("name") == old:
                e["name"] = new

    return _rewrite(src, dst, change)


def other_gpu_copy(src: Path, dst: Path, model: str) -> Path:
    """The same trace, said to be recorded on GPUs called ``model``."""

    def change(doc: dict[str, Any]) -> None:
        for props in doc.get("deviceProperties", []):
            props["name"] = model

    return _rewrite(src, dst, change)
