"""The steps of one run, and the steps of two runs lined up.

A run's step is one step range (:func:`gputop_trace.analysis.steps.find_steps`) on every rank that recorded it,
matched across ranks by name when every rank names its steps uniquely and the ranks share names, else by
position. Its duration is the slowest rank's (the step is over when every rank is done). A run without step
ranges has one "step": its whole span. Warm-up steps are the leading steps longer than
:data:`WARMUP_FACTOR` × the run's median step; they are shown apart and left out of the comparison.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.steps import find_steps, steps_note
from gputop_trace.model.trace import Trace

I64 = npt.NDArray[np.int64]
F64 = npt.NDArray[np.float64]

#: A leading step this many times longer than the run's median step is a warm-up step.
WARMUP_FACTOR = 1.5
_TRAILING_NUMBER = re.compile(r"\d+$")


@dataclass(frozen=True)
class RunSteps:
    """The steps of one run, in start order. ``spans[k][rank] = (start_ns, end_ns)`` (ns from the trace start);
    ``dur_ns[k]`` the slowest rank's duration; ``rank_mean_ns[k]`` the mean over the ranks that recorded it;
    ``warmup[k]`` whether step ``k`` is a warm-up step; ``whole_span``: no step ranges, one step = the span;
    ``cut[k]`` whether a rank's range of step ``k`` runs past the end of the recording and was cut there (its
    length is what was recorded of it); ``notes`` says so in words, one per rank with such steps."""

    labels: tuple[str, ...]
    spans: tuple[dict[int, tuple[int, int]], ...]
    dur_ns: I64
    rank_mean_ns: F64
    warmup: npt.NDArray[np.bool_]
    whole_span: bool
    ranks: tuple[int, ...]
    cut: npt.NDArray[np.bool_]
    notes: tuple[str, ...] = ()

    def __len__(self) -> int:
        return len(self.labels)

    @property
    def steady(self) -> int:
        """How many steps can be compared: neither warm-up steps nor cut at the end of the recording."""
        return int((~(self.warmup | self.cut)).sum())


def run_steps(trace: Trace) -> RunSteps:
    """The steps of ``trace`` (its whole span when it has no step ranges)."""
    per_rank = [s for s in find_steps(trace) if len(s)]
    ranks = tuple(sorted({ln.rank for ln in trace.lanes} | set(trace.meta.ranks)))
    if not per_rank:
        lo = int(trace.start_ns.min()) if len(trace) else 0
        spans: list[dict[int, tuple[int, int]]] = [dict.fromkeys(ranks, (lo, max(int(trace.span_ns), lo)))]
        labels = ["whole span"]
        cut = np.zeros(1, dtype=bool)
    else:
        names = {s.rank: [trace.event_name(int(e)) for e in s.events.tolist()] for s in per_rank}
        unique = all(len(set(v)) == len(v) for v in names.values())
        shared = set.intersection(*(set(v) for v in names.values()))
        by_key: dict[object, dict[int, tuple[int, int]]] = {}
        cut_keys: set[object] = set()
        label_of: dict[object, str] = {}
        for s in per_rank:
            for k, (st, d) in enumerate(zip(s.start_ns.tolist(), s.dur_ns.tolist(), strict=True)):
                key: object = names[s.rank][k] if unique and shared else k
                by_key.setdefault(key, {})[s.rank] = (int(st), int(st) + int(d))
                label_of.setdefault(key, names[s.rank][k])
                if s.cut[k]:
                    cut_keys.add(key)
        keys = sorted(by_key, key=lambda k: (min(v[0] for v in by_key[k].values()), label_of[k]))
        spans = [by_key[k] for k in keys]
        labels = [label_of[k] for k in keys]
        cut = np.array([k in cut_keys for k in keys], dtype=bool)
    multi = len(per_rank) > 1
    notes = tuple(f"rank {s.rank}: {n}" if multi else n for s in per_rank if (n := steps_note(trace, s)) is not None)
    dur = np.array([max(e - s for s, e in sp.values()) for sp in spans], dtype=np.int64)
    mean = np.array([float(np.mean([e - s for s, e in sp.values()])) for sp in spans], dtype=np.float64)
    return RunSteps(
        labels=tuple(labels),
        spans=tuple(spans),
        dur_ns=dur,
        rank_mean_ns=mean,
        warmup=warmup_steps(dur) if per_rank else np.zeros(1, dtype=bool),
        whole_span=not per_rank,
        ranks=ranks,
        cut=cut,
        notes=notes,
    )


def warmup_steps(dur_ns: I64) -> npt.NDArray[np.bool_]:
    """Leading steps longer than :data:`WARMUP_FACTOR` × the median step (at most half of the steps)."""
    out = np.zeros(len(dur_ns), dtype=bool)
    if len(dur_ns) < 3:
        return out
    limit = WARMUP_FACTOR * float(np.median(dur_ns))
    for k in range(len(dur_ns) // 2):
        if float(dur_ns[k]) <= limit:
            break
        out[k] = True
    return out


@dataclass(frozen=True)
class StepPairs:
    """The steps of BASE and TEST lined up: ``base[i]`` and ``test[i]`` are the same step of both runs, warm-up
    steps left out; ``matched_by`` is ``name``, ``index`` or ``span`` (a run without steps: the whole spans);
    ``unmatched_base`` / ``unmatched_test``: steady steps of one run the other lacks."""

    base: I64
    test: I64
    matched_by: str
    unmatched_base: int
    unmatched_test: int

    def __len__(self) -> int:
        return int(self.base.shape[0])


def step_key(label: str) -> str:
    """A step name with its number as ``<n>`` (``ProfilerStep#7`` → ``ProfilerStep#<n>``), to compare naming."""
    return _TRAILING_NUMBER.sub("<n>", label)


def pair_steps(base: RunSteps, test: RunSteps) -> StepPairs:
    """Line up the steps of two runs: by name when both name their steps uniquely and at least half of the
    shorter run's names are in the other, else by position. Pairs where either step is a warm-up, or was cut at
    the end of its recording (its length is only what was recorded of it), are left out."""
    if base.whole_span or test.whole_span:
        return StepPairs(np.zeros(1, np.int64), np.zeros(1, np.int64), "span", 0, 0)
    b_names, t_names = list(base.labels), list(test.labels)
    shared = set(b_names) & set(t_names)
    unique = len(set(b_names)) == len(b_names) and len(set(t_names)) == len(t_names)
    if unique and 2 * len(shared) >= min(len(b_names), len(t_names)):
        where = {n: i for i, n in enumerate(t_names)}
        pairs = [(i, where[n]) for i, n in enumerate(b_names) if n in where]
        how = "name"
    else:
        pairs = [(k, k) for k in range(min(len(b_names), len(t_names)))]
        how = "index"
    steady = [(i, j) for i, j in pairs if not (base.warmup[i] or test.warmup[j] or base.cut[i] or test.cut[j])]
    b = np.array([i for i, _ in steady], dtype=np.int64)
    t = np.array([j for _, j in steady], dtype=np.int64)
    return StepPairs(b, t, how, base.steady - len(steady), test.steady - len(steady))
