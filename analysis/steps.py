"""Training/inference steps: the annotation ranges that mark one iteration (``ProfilerStep#7``, ``step_3``,
``train_step_2``, ``infer_4``, ``iteration 12``), per rank, with their durations in ns."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

STEP_NAME = re.compile(
    r"^(?:ProfilerStep#\d+|(?:train_|training_|eval_|infer_|inference_)?step[ _#-]?\d+|"
    r"(?:train|training|eval|infer|inference)[ _#-]?\d+|iter(?:ation)?[ _#-]?\d+)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Steps:
    """Step ranges of one rank: event indices, starts and durations (ns), sorted by start."""

    rank: int
    events: I64
    start_ns: I64
    dur_ns: I64

    def __len__(self) -> int:
        return int(self.events.shape[0])


def is_step_name(name: str) -> bool:
    """Whether an annotation range name marks one step."""
    return STEP_NAME.match(name.strip()) is not None


def find_steps(trace: Trace) -> list[Steps]:
    """Step ranges per rank (ranks without any are left out). When a rank has both ``ProfilerStep#N`` and its
    own step ranges, the profiler's are used (they tile the timeline exactly)."""
    rng = trace.of_kind(Kind.RANGE)
    if not len(rng):
        return []
    ids = np.unique(trace.name[rng])
    step_ids = {int(i) for i in ids.tolist() if is_step_name(trace.names[int(i)])}
    prof_ids = {i for i in step_ids if trace.names[i].startswith("ProfilerStep#")}
    out: list[Steps] = []
    for r in sorted({int(x) for x in trace.event_rank[rng].tolist()}):
        mine = rng[trace.event_rank[rng] == r]
        names = trace.name[mine]
        use = prof_ids if np.isin(names, list(prof_ids)).any() else step_ids
        sel = mine[np.isin(names, list(use))] if use else mine[:0]
        if not len(sel):
            continue
        # only the outermost step ranges (a step nested in another step is not a new step)
        sel = sel[np.argsort(trace.start_ns[sel], kind="stable")]
        ends = np.maximum.accumulate(trace.end_ns[sel])
        outer = np.concatenate(([True], trace.start_ns[sel][1:] >= ends[:-1]))
        sel = sel[outer]
        out.append(Steps(rank=r, events=sel, start_ns=trace.start_ns[sel], dur_ns=trace.dur_ns[sel]))
    return out
