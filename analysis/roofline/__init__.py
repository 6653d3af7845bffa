"""Why one kernel is slow, from its Nsight Compute metrics (detectors.md §6): :mod:`.verdict` (the roofline
verdict, :func:`analyze_kernel`), :mod:`.kernel_verdict` (what it holds, :class:`KernelVerdict`), :mod:`.limits`
(FLOP counts, the GPUs' peaks, the ridge point) and :mod:`.explain` (the verdict in plain words). Metrics in ncu
base units.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.roofline.explain import format_intensity
    from gputop_trace.analysis.roofline.kernel_verdict import KernelVerdict
    from gputop_trace.analysis.roofline.limits import GPU_PEAKS
    from gputop_trace.analysis.roofline.verdict import analyze_kernel, is_compiled_kernel

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "explain": ("format_intensity",),
    "kernel_verdict": ("KernelVerdict",),
    "limits": ("GPU_PEAKS",),
    "verdict": ("analyze_kernel", "is_compiled_kernel"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["GPU_PEAKS", "KernelVerdict", "analyze_kernel", "format_intensity", "is_compiled_kernel"]
