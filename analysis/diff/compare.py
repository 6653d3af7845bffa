"""Two runs compared (``gputop-trace diff``): comparability, the verdict on step time, and where the difference
comes from. A pure function of two loaded traces."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.diff.attribution import CATEGORIES, DiffRow, attribution
from gputop_trace.analysis.diff.comparability import Comparability, comparability, run_facts
from gputop_trace.analysis.diff.steps import RunSteps, StepPairs, pair_steps, run_steps
from gputop_trace.analysis.diff.verdict import Verdict, step_verdict
from gputop_trace.model.trace import Trace


@dataclass(frozen=True, eq=False)
class RunDiff:
    """BASE against TEST: both runs' steps, the pairs of matched steady steps, the verdict, the comparability and
    the attribution rows (category → rows, ranked)."""

    base: Trace
    test: Trace
    base_steps: RunSteps
    test_steps: RunSteps
    pairs: StepPairs
    verdict: Verdict
    comparability: Comparability
    rows: dict[str, list[DiffRow]]
    identical: bool

    @property
    def new_kernels(self) -> list[DiffRow]:
        """Kernels only in TEST, largest first."""
        return [r for r in self.rows.get("kernel", []) if r.status == "new"]

    @property
    def removed_kernels(self) -> list[DiffRow]:
        """Kernels only in BASE, largest first."""
        return [r for r in self.rows.get("kernel", []) if r.status == "removed"]

    @property
    def count_changes(self) -> list[DiffRow]:
        """Kernels in both runs launched a different number of times."""
        return [r for r in self.rows.get("kernel", []) if not r.status and r.base_count != r.test_count]


def _without_steps(base: RunSteps, test: RunSteps) -> str:
    """Which run has no step ranges, in words (``""``: both have)."""
    if base.whole_span and test.whole_span:
        return "either run"
    return "BASE" if base.whole_span else ("TEST" if test.whole_span else "")


def diff_runs(base: Trace, test: Trace, *, identical: bool = False) -> RunDiff:
    """Compare two runs. ``identical``: the caller found that both sides are the same files (the verdict then says
    so; the figures are computed all the same and are all zero)."""
    b_steps, t_steps = run_steps(base), run_steps(test)
    pairs = pair_steps(b_steps, t_steps)
    verdict = step_verdict(
        b_steps.dur_ns[pairs.base].astype(np.float64),
        t_steps.dur_ns[pairs.test].astype(np.float64),
        whole_span=_without_steps(b_steps, t_steps),
        identical=identical,
    )
    rows = attribution(base, test, b_steps, t_steps, pairs, CATEGORIES)
    kernels = rows["kernel"]
    comp = comparability(
        run_facts(base, b_steps),
        run_facts(test, t_steps),
        pairs,
        {r.name for r in kernels if r.base_count},
        {r.name for r in kernels if r.test_count},
    )
    return RunDiff(base, test, b_steps, t_steps, pairs, verdict, comp, rows, identical)
