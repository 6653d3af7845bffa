"""Why one kernel is slow, from its Nsight Compute metrics (detectors.md §6): :mod:`.verdict` (the roofline
verdict, :func:`analyze_kernel`), :mod:`.limits` (FLOP counts, the GPUs' peaks, the ridge point) and
:mod:`.explain` (the verdict in plain words). Metrics in ncu base units.
"""

from __future__ import annotations

from gputop_trace.analysis.roofline.explain import format_intensity
from gputop_trace.analysis.roofline.limits import GPU_PEAKS
from gputop_trace.analysis.roofline.verdict import KernelVerdict, analyze_kernel, is_compiled_kernel

__all__ = ["GPU_PEAKS", "KernelVerdict", "analyze_kernel", "format_intensity", "is_compiled_kernel"]
