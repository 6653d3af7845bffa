"""The ``ncu`` command's JSON document (the contract under 'JSON output' in the README): each kernel's verdict, the
spread of several launches of one kernel, a run's failure guidance, in the ``--json`` envelope of
:mod:`gputop_trace.report.envelope`. Times are integer ns, rates per second, shares 0–100; a figure that is missing
(NaN) or infinite is ``null``."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from gputop_trace.report.envelope import envelope

if TYPE_CHECKING:
    from gputop_trace.analysis.ncu_diagnosis.launches import LaunchSpread
    from gputop_trace.analysis.roofline.verdict import KernelVerdict
    from gputop_trace.model.ncu import NcuReport


class RunGuidance(Protocol):
    """What :func:`guidance_json` reads of why a profiling run gave no result: ``gputop_trace.ncu.runner.Guidance``,
    which lives in a layer above this one, so its fields are named here instead of imported."""

    @property
    def kind(self) -> str: ...
    @property
    def title(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def details(self) -> Sequence[str]: ...
    @property
    def available_kernels(self) -> Sequence[str]: ...
    @property
    def exit_code(self) -> int | None: ...


def _num(x: float) -> float | None:
    return None if x is None or math.isnan(x) or math.isinf(x) else round(float(x), 4)


def _int(x: float) -> int | None:
    return None if x is None or math.isnan(x) or math.isinf(x) else round(x)


def verdict_json(v: KernelVerdict) -> dict[str, Any]:
    """One kernel of the ``ncu`` JSON contract (the README's 'JSON output'), plus extra fields."""
    k = v.kernel
    return {
        "name": k.name,
        "demangled": k.demangled,
        "mangled": k.mangled,
        "launch": v.launch,
        "report_index": k.index,
        "device": k.device_name or None,
        "grid": list(k.grid) if k.grid else None,
        "block": list(k.block) if k.block else None,
        "duration_ns": _int(v.duration_ns),
        "sm_pct": _num(v.sm_pct),
        "memory_pct": _num(v.memory_pct),
        "dram_pct": _num(v.dram_pct),
        "achieved_occupancy_pct": _num(v.occupancy.achieved_pct),
        "theoretical_occupancy_pct": _num(v.occupancy.theoretical_pct),
        "occupancy_limiter": v.occupancy.limiter,
        "registers": v.registers,
        "flops": _int(v.flops),
        "dram_bytes": _int(v.dram_bytes),
        "intensity_flop_per_byte": _num(v.intensity),
        "ridge_flop_per_byte": _num(v.ridge),
        "precision": v.precision or None,
        "peak_flop_per_s": _num(v.peak_flop_per_s),
        "peak_dram_bytes_per_s": _num(v.peak_dram_bytes_per_s),
        "achieved_flop_per_s": _num(v.achieved_flop_per_s),
        "peaks_from": v.peaks_from or None,
        "verdict": v.verdict,
        "verdict_basis": v.verdict_basis or None,
        "explanation": "\n".join(v.explanation),
        "stalls": [
            {"reason": s.reason, "label": s.label, "value": _num(s.cycles), "share_pct": _num(s.share_pct)}
            for s in v.stalls
        ],
        "no_eligible_pct": _num(v.no_eligible_pct),
        "tensor_pipe_pct": _num(v.tensor_pipe_pct),
        "tensor_use": v.tensor_use,
        "l1_hit_pct": _num(v.l1_hit_pct),
        "l2_hit_pct": _num(v.l2_hit_pct),
        "sectors_per_request": _num(v.sectors_per_request),
        "rules": [
            {
                "name": r.identifier,
                "type": r.type,
                "text": r.text,
                "title": r.title,
                "section": r.section,
                "speedup_pct": _num(r.speedup_pct) if r.speedup_pct is not None else None,
            }
            for r in v.rules
        ],
        "nvtx": list(k.nvtx),
        "warnings": list(v.warnings),
        "trust": [{"kind": t.kind, "level": t.level, "text": t.text} for t in v.trust],
        "diagnosis": [{"kind": f.kind, "problem": f.problem, "text": f.text} for f in v.diagnosis],
        "hot_lines": [
            {
                "address": h.line.address,
                "source": h.line.source,
                "samples": _num(h.line.samples),
                "share_pct": _num(h.share_pct),
                "instructions": _num(h.line.instructions),
            }
            for h in v.hot_lines
        ],
    }


def spread_json(s: LaunchSpread) -> dict[str, Any]:
    """Several launches of one kernel: their report indices and each figure's min / median / max."""
    return {
        "name": s.name,
        "report_indices": list(s.indices),
        "figures": [
            {
                "label": f.label,
                "metric": f.metric,
                "unit": f.unit,
                "n": f.n,
                "min": _num(f.min),
                "median": _num(f.median),
                "max": _num(f.max),
                "rel_spread": _num(f.rel_spread),
            }
            for f in s.figures
        ],
        "warning": s.note.text if s.note else None,
    }


def report_json(
    report: NcuReport, verdicts: list[KernelVerdict], *, run: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The whole ``ncu`` JSON document."""
    from gputop_trace.analysis.ncu_diagnosis.launches import launch_spreads

    doc = envelope("ncu", None, report.path, kernels=[verdict_json(v) for v in verdicts])
    doc["source"].update(
        {
            "format": "ncu",
            "producer": f"Nsight Compute report (read with {report.reader})",
            "ranks": [0],
            "truncated_bytes": 0,
        }
    )
    doc["warnings"] = list(report.warnings) + ([w for w in run.get("warnings", [])] if run else [])
    doc["launch_spread"] = [spread_json(s) for s in launch_spreads(report.kernels)]
    if run is not None:
        doc["run"] = run
    return doc


def guidance_json(g: RunGuidance) -> dict[str, Any]:
    """A failed run's guidance as JSON."""
    return {
        "kind": g.kind,
        "title": g.title,
        "text": g.text,
        "details": list(g.details),
        "available_kernels": list(g.available_kernels),
        "exit_code": g.exit_code,
    }


def empty_document(path: str = "") -> dict[str, Any]:
    """The ``ncu`` document with no kernels, for a run that gave no report (``path``: the report it was to write)."""
    doc = envelope("ncu", None, path, kernels=[])
    doc["source"].update({"format": "ncu", "producer": "Nsight Compute", "ranks": [0], "truncated_bytes": 0})
    return doc
