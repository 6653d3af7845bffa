"""The ``diff`` JSON document (the shared envelope, with one ``source`` block per run) and its CSV rows.

Figures follow the JSON contract: durations and times are integer ns (per-step means rounded to the nearest ns;
step starts in each file's own time base), percentages 0–100 floats, ``null`` where a figure does not exist (no
noise with fewer than two steps, no share when step time did not change)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from gputop_trace.analysis.diff.attribution import CATEGORIES, DiffRow
from gputop_trace.analysis.diff.compare import RunDiff
from gputop_trace.analysis.diff.steps import RunSteps
from gputop_trace.analysis.diff.verdict import CONFIDENCE, RESAMPLES, SEED
from gputop_trace.model.trace import Trace
from gputop_trace.report.envelope import envelope, source_block

CSV_COLUMNS = (
    "category",
    "name",
    "status",
    "base_ns",
    "test_ns",
    "delta_ns",
    "base_count",
    "test_count",
    "step_base_ns",
    "step_test_ns",
    "step_delta_ns",
    "noise_ns",
    "share_pct",
    "beyond_noise",
)


def _ns(x: float) -> int | None:
    return round(x) if math.isfinite(x) else None


def _pct(x: float) -> float | None:
    return round(x, 3) if math.isfinite(x) else None


def row_json(r: DiffRow) -> dict[str, Any]:
    """One attribution row."""
    return {
        "category": r.category,
        "name": r.name,
        "status": r.status or None,
        "base_ns": r.base_ns,
        "test_ns": r.test_ns,
        "delta_ns": r.delta_ns,
        "base_count": r.base_count,
        "test_count": r.test_count,
        "step_base_ns": _ns(r.step_base_ns),
        "step_test_ns": _ns(r.step_test_ns),
        "step_delta_ns": _ns(r.step_delta_ns),
        "noise_ns": _ns(r.noise_ns),
        "share_pct": _pct(r.share_pct),
        "beyond_noise": r.beyond_noise,
    }


def _steps_json(trace: Trace, steps: RunSteps) -> list[dict[str, Any]]:
    out = []
    for k, label in enumerate(steps.labels):
        rank = min(steps.spans[k])
        start = steps.spans[k][rank][0]
        out.append(
            {
                "name": label,
                "rank": rank,
                "start_ns": trace.file_time_ns(start, rank),
                "dur_ns": int(steps.dur_ns[k]),
                "warmup": bool(steps.warmup[k]),
                "cut": bool(steps.cut[k]),
            }
        )
    return out


def diff_document(d: RunDiff, base_paths: Sequence[str], test_paths: Sequence[str]) -> dict[str, Any]:
    """The whole ``diff`` document."""
    bp = base_paths[0] if len(base_paths) == 1 else list(base_paths)
    tp = test_paths[0] if len(test_paths) == 1 else list(test_paths)
    v = d.verdict
    pairs = []
    for i, j in zip(d.pairs.base.tolist(), d.pairs.test.tolist(), strict=True):
        b, t = int(d.base_steps.dur_ns[i]), int(d.test_steps.dur_ns[j])
        pairs.append(
            {
                "base": d.base_steps.labels[i],
                "test": d.test_steps.labels[j],
                "base_ns": b,
                "test_ns": t,
                "change_pct": _pct(100.0 * (t - b) / b) if b else None,
            }
        )
    c = d.comparability
    doc = envelope(
        "diff",
        None,
        [],  # replaced below: one source block per run
        identical=d.identical,
        comparability={
            "base": asdict(c.base),
            "test": asdict(c.test),
            "kernel_overlap_pct": _pct(c.kernel_overlap_pct),
            "shared_kernels": c.shared_kernels,
            "base_only_kernels": c.base_only_kernels,
            "test_only_kernels": c.test_only_kernels,
            "differences": [asdict(x) for x in c.differences],
        },
        steps={
            "matched_by": d.pairs.matched_by,
            "whole_span": d.pairs.matched_by == "span",
            "compared": len(d.pairs),
            "base": _steps_json(d.base, d.base_steps),
            "test": _steps_json(d.test, d.test_steps),
            "pairs": pairs,
        },
        verdict={
            "kind": v.kind,
            "beyond_noise": v.beyond_noise,
            "change_pct": _pct(v.change_pct),
            "ci_low_pct": _pct(v.ci_low_pct),
            "ci_high_pct": _pct(v.ci_high_pct),
            "noise_pct": _pct(v.noise_pct),
            "confidence_pct": 100 * CONFIDENCE,
            "steps": v.steps,
            "method": f"percentile bootstrap of the median step-time ratio, {RESAMPLES} resamples, seed {SEED}",
            "sentence": v.sentence,
        },
        attribution={cat: [row_json(r) for r in d.rows.get(cat, [])] for cat in CATEGORIES},
        new_kernels=[r.name for r in d.new_kernels],
        removed_kernels=[r.name for r in d.removed_kernels],
        count_changes=[
            {"name": r.name, "base_count": r.base_count, "test_count": r.test_count} for r in d.count_changes
        ],
    )
    doc["source"] = {
        "path": [bp, tp],
        "base": source_block(d.base, base_paths),
        "test": source_block(d.test, test_paths),
    }
    doc["warnings"] = [
        *(f"BASE: {w}" for w in (*d.base.meta.warnings, *d.base_steps.notes)),
        *(f"TEST: {w}" for w in (*d.test.meta.warnings, *d.test_steps.notes)),
    ]
    return doc


def csv_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every attribution row of a ``diff`` document, category by category (the CSV output)."""
    return [r for cat in CATEGORIES for r in doc["attribution"][cat]]
