"""torch.compile and CUDA graphs in a trace (detectors.md §7): :mod:`.regions` (the compiled regions, compilations
and graph replays, each kernel's origin) and :mod:`.inductor` (what the trace knows about one Inductor kernel).
"""

from __future__ import annotations

from gputop_trace.analysis.compiled.inductor import InductorInfo, InductorLookup
from gputop_trace.analysis.compiled.regions import CompiledProgram, compiled_program, kernel_origins

__all__ = ["CompiledProgram", "InductorInfo", "InductorLookup", "compiled_program", "kernel_origins"]
