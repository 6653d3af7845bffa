"""The ``critical-path --json`` document: every step's critical path, breakdown, items and what-ifs.

Times (``start_ns``) are integer ns in the file's own time base (as every command's); durations ``*_ns``;
shares ``*_pct`` 0–100 of the path length."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gputop_trace.analysis.critical_path.path import StepPath
    from gputop_trace.model.trace import Trace


#: How each path category reads in a table, the same in the app and on the command line.
CATEGORY_TITLES: dict[str, str] = {
    "cpu_op": "CPU op",
    "launch": "launch",
    "kernel": "kernel",
    "copy": "copy",
    "sync_wait": "sync wait",
    "collective": "collective",
    "idle": "idle",
}


def _pct(part: int, whole: int) -> float:
    return round(100.0 * part / whole, 2) if whole > 0 else 0.0


def step_path_json(trace: Trace, p: StepPath, *, segments: bool = True) -> dict[str, Any]:
    """One step's path as JSON (see the README's JSON section)."""
    doc: dict[str, Any] = {
        "rank": p.rank,
        "step": p.step,
        "step_name": p.step_name,
        "start_ns": trace.file_time_ns(p.start_ns, p.rank),
        "dur_ns": p.dur_ns,
        "length_ns": p.length_ns,
        "length_pct": _pct(p.length_ns, p.dur_ns),
        "breakdown": [
            {"category": c, "total_ns": ns, "pct": _pct(ns, p.length_ns)} for c, ns in p.breakdown.items() if ns
        ],
        "items": [
            {"category": c, "name": name, "total_ns": ns, "pct": _pct(ns, p.length_ns)} for c, name, ns in p.by_item
        ],
        "what_if": [
            {
                "category": w.category,
                "name": w.item,
                "on_path_ns": w.on_path_ns,
                "step_ns": w.step_ns,
                "if_2x_ns": w.if_2x_ns,
                "if_gone_ns": w.if_gone_ns,
                "saves_if_2x_ns": w.step_ns - w.if_2x_ns,
                "saves_if_gone_ns": w.step_ns - w.if_gone_ns,
            }
            for w in p.what_if
        ],
        "edges": dict(p.edges),
        "notes": list(p.notes),
    }
    if segments:
        doc["segments"] = [
            {
                "start_ns": trace.file_time_ns(s.start_ns, s.rank),
                "dur_ns": s.dur_ns,
                "category": s.category,
                "name": s.label,
                "event": s.event,
                "lane": trace.lanes[s.lane].name if s.lane >= 0 else None,
                "rank": s.rank,
            }
            for s in p.segments
        ]
    return doc


def critical_path_json(trace: Trace, paths: list[StepPath]) -> list[dict[str, Any]]:
    """Every step's path as JSON."""
    return [step_path_json(trace, p) for p in paths]
