"""Where the step-time difference comes from: one row per GPU busy / idle, kernel (normalised name), launching
operator or annotation range, annotation range, idle cause and copy kind, each with exact whole-run totals and its
own per-step change and noise.

Totals (``base_ns``, ``test_ns``; counts) cover the whole run, exactly as the single-run analyses compute them
(a kernel's delta is the exact difference of its totals). Per-step figures cover the matched steady steps: an
item's time in step ``k`` is the sum of its events attributed to that step (GPU work by its launch call's start,
falling back to its own start; ranges and gaps by their start), averaged over the ranks that recorded the step.
``step_delta_ns`` is the mean over the pairs of ``test_k − base_k``; ``noise_ns`` the 95 % half-width of that mean
(Student's t on the paired differences; NaN with fewer than 2 pairs); ``share_pct`` the row's part of the mean
per-step change of step time (so GPU busy and idle add up to 100 %). Times in ns.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.busy import device_busy, gpu_ops
from gputop_trace.analysis.diff.steps import RunSteps, StepPairs, step_key
from gputop_trace.analysis.gaps.causes import CAUSE_LABELS, CAUSES
from gputop_trace.analysis.gaps.detect import find_gaps
from gputop_trace.analysis.intervals import overlap_with_union, union
from gputop_trace.analysis.kernels import GroupBy, kernel_table
from gputop_trace.analysis.ranges import range_summary
from gputop_trace.analysis.steps import is_step_name
from gputop_trace.analysis.transfers import direction_label
from gputop_trace.model.arrays import distinct
from gputop_trace.model.kernel_names import normalized_kernel_name
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: The categories, in the order they are shown.
CATEGORIES: tuple[str, ...] = ("gpu", "kernel", "launcher", "range", "idle_cause", "copy")
CATEGORY_LABELS: dict[str, str] = {
    "gpu": "GPU busy vs idle",
    "kernel": "kernels",
    "launcher": "launching operator / range",
    "range": "annotation ranges",
    "idle_cause": "idle causes",
    "copy": "copies",
}
#: Student's t, two-sided 95 %, for 1..30 degrees of freedom (beyond: the normal 1.96).
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045,
        2.042)  # fmt: skip


@dataclass(frozen=True)
class DiffRow:
    """One item of one category (see the module docstring for each figure). Times in ns."""

    category: str
    name: str
    base_ns: int
    test_ns: int
    base_count: int
    test_count: int
    step_base_ns: float
    step_test_ns: float
    step_delta_ns: float
    noise_ns: float
    share_pct: float

    @property
    def delta_ns(self) -> int:
        """The exact difference of the totals."""
        return self.test_ns - self.base_ns

    @property
    def status(self) -> str:
        """``new`` (only in TEST), ``removed`` (only in BASE) or ``""``."""
        if self.category in ("gpu", "idle_cause"):
            return ""
        if self.base_count == 0 and self.test_count > 0:
            return "new"
        if self.test_count == 0 and self.base_count > 0:
            return "removed"
        return ""

    @property
    def beyond_noise(self) -> bool:
        """Whether the per-step change is larger than its noise."""
        return math.isfinite(self.noise_ns) and abs(self.step_delta_ns) > self.noise_ns


@dataclass(frozen=True)
class _Items:
    """One category of one run: item names, whole-run totals and counts, time per compared step (items × steps)."""

    names: list[str]
    totals: I64
    counts: I64
    per_step: F64


def t95(df: int) -> float:
    """Student's t critical value, two-sided 95 %, ``df`` degrees of freedom (≥ 1)."""
    return _T95[df - 1] if df <= len(_T95) else 1.96


def _step_cols(steps: RunSteps, chosen: I64) -> dict[int, tuple[I64, I64, I64]]:
    """Per rank: the chosen steps' starts, ends and column (position in ``chosen``), sorted by start."""
    out: dict[int, tuple[I64, I64, I64]] = {}
    for r in steps.ranks:
        rows = [(steps.spans[k][r][0], steps.spans[k][r][1], c) for c, k in enumerate(chosen.tolist())
                if r in steps.spans[k]]  # fmt: skip
        rows.sort()
        if rows:
            a = np.array(rows, dtype=np.int64)
            out[r] = (a[:, 0], a[:, 1], a[:, 2])
    return out


def _assign(steps: RunSteps, chosen: I64, rank: I64, t: I64) -> I64:
    """The column (position in ``chosen``) of the step holding time ``t`` on each event's rank, ``-1`` none."""
    col = np.full(len(t), -1, dtype=np.int64)
    for r, (s, e, c) in _step_cols(steps, chosen).items():
        sel = np.flatnonzero(rank == r)
        if not len(sel):
            continue
        pos = np.searchsorted(s, t[sel], side="right") - 1
        ok = (pos >= 0) & (t[sel] < e[np.maximum(pos, 0)])
        col[sel[ok]] = c[pos[ok]]
    return col


def _ranks_per_step(steps: RunSteps, chosen: I64) -> F64:
    return np.array([max(1, len(steps.spans[k])) for k in chosen.tolist()], dtype=np.float64)


def _items(steps: RunSteps, chosen: I64, names: list[str], key: I64, value: I64, rank: I64, t: I64) -> _Items:
    """Totals, counts and per-step sums of events (``key[i]`` the item of event ``i``)."""
    n = len(names)
    totals = np.zeros(n, dtype=np.int64)
    np.add.at(totals, key, value)
    counts = np.bincount(key, minlength=n).astype(np.int64)
    cols = len(chosen)
    col = _assign(steps, chosen, rank, t)
    ok = col >= 0
    flat = np.bincount(key[ok] * cols + col[ok], weights=value[ok], minlength=n * cols) if cols else np.zeros(0)
    per_step = flat.reshape(n, cols) / _ranks_per_step(steps, chosen) if cols else np.zeros((n, 0))
    return _Items(names, totals, counts, per_step)


def _launch_time(trace: Trace, ev: I64) -> I64:
    api = trace.launch_of[ev]
    out: I64 = np.where(api >= 0, trace.start_ns[np.maximum(api, 0)], trace.start_ns[ev])
    return out


def _grouped(trace: Trace, steps: RunSteps, chosen: I64, groups: dict[str, list[I64]], *, launch: bool) -> _Items:
    """Items made of event groups (name → event index arrays); value = the events' durations."""
    names = list(groups)
    parts = [np.concatenate(groups[n]) if groups[n] else np.zeros(0, np.int64) for n in names]
    ev = np.concatenate(parts) if parts else np.zeros(0, np.int64)
    key = np.repeat(np.arange(len(names), dtype=np.int64), [len(p) for p in parts])
    t = _launch_time(trace, ev) if launch else trace.start_ns[ev]
    return _items(steps, chosen, names, key, trace.dur_ns[ev], trace.event_rank[ev].astype(np.int64), t)


def _label(name: str) -> str:
    return step_key(name) if is_step_name(name) else name


def kernel_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """Kernels by normalised name (template arguments and Triton hash suffixes left out)."""
    groups: dict[str, list[I64]] = {}
    for row in kernel_table(trace, merge_devices=True):
        groups.setdefault(normalized_kernel_name(row.name), []).append(row.events)
    return _grouped(trace, steps, chosen, groups, launch=True)


def launcher_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """Kernel time by the operator or annotation range around its launch call (step numbers as ``<n>``)."""
    groups: dict[str, list[I64]] = {}
    for row in kernel_table(trace, group_by=GroupBy.LAUNCHER, merge_devices=True):
        groups.setdefault(_label(row.name), []).append(row.events)
    return _grouped(trace, steps, chosen, groups, launch=True)


def range_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """Annotation ranges (their own host time), the step ranges themselves left out."""
    groups: dict[str, list[I64]] = {}
    for row in range_summary(trace):
        if not is_step_name(row.name):
            groups.setdefault(row.name, []).append(row.events)
    return _grouped(trace, steps, chosen, groups, launch=False)


def copy_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """Copies and memsets by kind (``HtoD``, ``DtoH``, ``memset`` ...)."""
    ev = trace.copies.event
    code = trace.copies.direction.astype(np.int64) * 2 + (trace.kind[ev] == Kind.MEMSET)
    groups: dict[str, list[I64]] = {}
    for c in distinct(code).tolist():
        label = direction_label(c // 2, bool(c % 2))
        groups.setdefault(label, []).append(ev[code == c])
    return _grouped(trace, steps, chosen, dict(sorted(groups.items())), launch=True)


def idle_cause_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """Idle gaps by cause (the gap detector's, default threshold); per step, the part of each gap inside it."""
    devs = find_gaps(trace)
    cause = np.concatenate([d.columns.cause.astype(np.int64) for d in devs]) if devs else np.zeros(0, np.int64)
    dur = np.concatenate([d.columns.dur_ns for d in devs]) if devs else np.zeros(0, np.int64)
    start = np.concatenate([d.columns.start_ns for d in devs]) if devs else np.zeros(0, np.int64)
    rank = np.concatenate([np.full(len(d.columns), d.rank, np.int64) for d in devs]) if devs else cause
    names = [CAUSE_LABELS[c] for c in CAUSES]
    items = _items(steps, chosen, names, cause, dur, rank, start)
    # a gap counts in a step for the part of it inside that step (a gap across a step boundary is split), so a
    # step's idle causes never add up to more than its GPU idle time
    per_step = np.zeros((len(names), len(chosen)), dtype=np.float64)
    end = start + dur
    for r, (s, e, c) in _step_cols(steps, chosen).items():
        sel = rank == r
        for k in range(len(s)):
            part = np.clip(np.minimum(end[sel], e[k]) - np.maximum(start[sel], s[k]), 0, None)
            per_step[:, c[k]] += np.bincount(cause[sel], weights=part, minlength=len(names))
    per_step /= _ranks_per_step(steps, chosen)
    return _Items(names, items.totals, items.counts, per_step)


def gpu_items(trace: Trace, steps: RunSteps, chosen: I64) -> _Items:
    """GPU busy (union of GPU work over the rank's GPUs) and idle time per step; totals: every GPU's active span."""
    per_step = np.zeros((2, len(chosen)), dtype=np.float64)
    for r in steps.ranks:
        ops = gpu_ops(trace, rank=r)
        us, ue = union(trace.start_ns[ops], trace.end_ns[ops])
        for c, k in enumerate(chosen.tolist()):
            sp = steps.spans[k].get(r)
            if sp is None:
                continue
            busy = int(overlap_with_union(np.array([sp[0]]), np.array([sp[1]]), us, ue)[0])
            per_step[0, c] += busy
            per_step[1, c] += (sp[1] - sp[0]) - busy
    per_step /= _ranks_per_step(steps, chosen)
    devices = device_busy(trace)
    totals = np.array([sum(d.busy_ns for d in devices), sum(d.idle_ns for d in devices)], dtype=np.int64)
    counts = np.array([sum(d.ops for d in devices), 0], dtype=np.int64)
    return _Items(["GPU busy", "GPU idle"], totals, counts, per_step)


#: Category → the builder of its items for one run.
BUILDERS: dict[str, Callable[[Trace, RunSteps, I64], _Items]] = {
    "gpu": gpu_items,
    "kernel": kernel_items,
    "launcher": launcher_items,
    "range": range_items,
    "idle_cause": idle_cause_items,
    "copy": copy_items,
}


def _rows(category: str, base: _Items, test: _Items, step_change_ns: float) -> list[DiffRow]:
    names = list(dict.fromkeys([*base.names, *test.names]))
    b_at = {n: i for i, n in enumerate(base.names)}
    t_at = {n: i for i, n in enumerate(test.names)}
    n_pairs = base.per_step.shape[1]
    zero = np.zeros(n_pairs, dtype=np.float64)
    out: list[DiffRow] = []
    for name in names:
        i, j = b_at.get(name), t_at.get(name)
        xb = base.per_step[i] if i is not None else zero
        xt = test.per_step[j] if j is not None else zero
        d = xt - xb
        mean = float(d.mean()) if n_pairs else 0.0
        noise = t95(n_pairs - 1) * float(d.std(ddof=1)) / math.sqrt(n_pairs) if n_pairs >= 2 else float("nan")
        out.append(
            DiffRow(
                category=category,
                name=name,
                base_ns=int(base.totals[i]) if i is not None else 0,
                test_ns=int(test.totals[j]) if j is not None else 0,
                base_count=int(base.counts[i]) if i is not None else 0,
                test_count=int(test.counts[j]) if j is not None else 0,
                step_base_ns=float(xb.mean()) if n_pairs else 0.0,
                step_test_ns=float(xt.mean()) if n_pairs else 0.0,
                step_delta_ns=mean,
                noise_ns=noise,
                share_pct=100.0 * mean / step_change_ns if step_change_ns else float("nan"),
            )
        )
    out.sort(key=lambda r: (-abs(r.step_delta_ns), -abs(r.delta_ns), r.name))
    return out


def attribution(
    base: Trace, test: Trace, base_steps: RunSteps, test_steps: RunSteps, pairs: StepPairs,
    categories: Sequence[str] = CATEGORIES,
) -> dict[str, list[DiffRow]]:  # fmt: skip
    """The rows of every category, each ranked by the size of its per-step change (largest first)."""
    change = (
        float(np.mean(test_steps.rank_mean_ns[pairs.test] - base_steps.rank_mean_ns[pairs.base])) if len(pairs) else 0.0
    )
    out: dict[str, list[DiffRow]] = {}
    for cat in categories:
        build = BUILDERS[cat]
        out[cat] = _rows(cat, build(base, base_steps, pairs.base), build(test, test_steps, pairs.test), change)
    return out
