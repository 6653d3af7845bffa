"""torch.compile and CUDA graphs in a trace (detectors.md §7): :mod:`.regions` (the compiled regions, compilations
and graph replays, each kernel's origin) and :mod:`.inductor` (what the trace knows about one Inductor kernel).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gputop_trace.lazy_exports import lazy_names

if TYPE_CHECKING:
    from gputop_trace.analysis.compiled.inductor import InductorInfo, InductorLookup
    from gputop_trace.analysis.compiled.regions import CompiledProgram, compiled_program, kernel_origins

#: where each public name lives (imported when first read: gputop_trace/lazy_exports.py)
_HOMES: dict[str, tuple[str, ...]] = {
    "inductor": ("InductorInfo", "InductorLookup"),
    "regions": ("CompiledProgram", "compiled_program", "kernel_origins"),
}
__getattr__ = lazy_names(__name__, _HOMES)

__all__ = ["CompiledProgram", "InductorInfo", "InductorLookup", "compiled_program", "kernel_origins"]
