"""How far one Nsight Compute result can be trusted (the concept note's "counter multiplexing distorts the
roofline" and "Heisenberg effect on small kernels"). Pure functions of an
:class:`~gputop_trace.model.ncu.NcuKernel`'s metrics (ncu base units).

- **Replay passes.** A GPU cannot count every hardware counter at once, so ncu replays the kernel
  (``profiler__replayer_passes`` times; 38 for ``--set full`` on an H200) and combines counters from different
  runs. That is exact only when every replay does the same work.
- **Not reproducible.** A kernel with atomic or reduction instructions in its instruction mix
  (``smsp__inst_executed_op_*atom*`` / ``*_red``) may do different work in each replay (contention, order),
  so counters from different passes may not describe the same run.
- **Pass-dependent figures disagree.** ncu collects some metrics twice, in different passes (the
  ``TPC.TriageCompute.sm__cycles_active.avg`` instance next to ``sm__cycles_active.avg``); when the two differ by
  more than :data:`DISAGREE_REL` the replays did not behave alike.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass

from gputop_trace.model.ncu import NcuKernel

#: Relative difference (0.05 = 5 %) from which two instances of one metric, collected in different passes, disagree.
DISAGREE_REL = 0.05
#: Instruction-count metrics of atomic and reduction instructions (warp-level instructions).
_ATOMIC_INST = re.compile(r"^smsp__inst_executed_op_\w*(atom|_red)\w*\.sum$")
#: A metric instance collected by a section of its own: ``<unit>.<section>.<metric>``.
_SECTION_INSTANCE = re.compile(r"^\w+\.\w+\.(\w+__.+)$")


@dataclass(frozen=True)
class TrustNote:
    """One statement about how far the figures can be trusted. ``kind``: ``replay`` (several passes combined),
    ``atomics`` (not reproducible), ``disagree`` (pass-dependent figures differ), ``launch_spread`` (launches of
    one kernel differ); ``level``: ``info`` or ``warning``."""

    kind: str
    level: str
    text: str


def replay_passes(metrics: Mapping[str, float]) -> int | None:
    """How many times ncu replayed the kernel to collect every counter (None when the report does not say)."""
    v = metrics.get("profiler__replayer_passes")
    return None if v is None or math.isnan(v) else round(v)


def atomic_instructions(metrics: Mapping[str, float]) -> float:
    """Warp-level atomic and reduction instructions the kernel executed (global, shared, generic, surface)."""
    return sum(v for n, v in metrics.items() if _ATOMIC_INST.match(n) and not math.isnan(v))


def pass_disagreements(metrics: Mapping[str, float], rel: float = DISAGREE_REL) -> list[tuple[str, float, float]]:
    """``(metric, value in its own pass, value in the other pass)`` for every metric ncu collected twice whose two
    values differ by more than ``rel`` (relative to the larger)."""
    out = []
    for name, a in metrics.items():
        m = _SECTION_INSTANCE.match(name)
        if m is None:
            continue
        b = metrics.get(m.group(1))
        if b is None or math.isnan(a) or math.isnan(b):
            continue
        top = max(abs(a), abs(b))
        if top > 0 and abs(a - b) / top > rel:
            out.append((m.group(1), b, a))
    return out


def trust_notes(k: NcuKernel) -> list[TrustNote]:
    """What to keep in mind before believing this kernel's figures (empty when nothing needs saying)."""
    m = k.metrics
    out: list[TrustNote] = []
    passes = replay_passes(m)
    atomics = atomic_instructions(m)
    if passes is not None and passes > 1:
        out.append(
            TrustNote(
                "replay",
                "info",
                f"ncu replayed this kernel {passes} times and combined counters from different passes: the figures "
                "describe one run only if every replay did the same work.",
            )
        )
    if atomics > 0:
        out.append(
            TrustNote(
                "atomics",
                "warning",
                f"Not reproducible: the kernel executed {atomics:,.0f} atomic/reduction instructions, whose work and "
                "timing can change from one replay to the next, so counters from different passes may not match. "
                "Check the figures against a second profile, or profile with fewer metrics (--set basic: fewer "
                "passes).",
            )
        )
    for name, a, b in pass_disagreements(m):
        out.append(
            TrustNote(
                "disagree",
                "warning",
                f"Pass-dependent figures disagree: {name} measured {a:,.4g} in one pass and {b:,.4g} in another "
                f"({abs(a - b) / max(abs(a), abs(b)):.0%} apart): the replays did not behave alike (inputs that "
                "change between launches, data-dependent work, other work on the GPU).",
            )
        )
    return out
