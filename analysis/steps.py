"""Training/inference steps: the annotation ranges that mark one iteration (``ProfilerStep#7``, ``step_3``,
``train_step_2``, ``infer_4``, ``iteration 12``), per rank, with their durations in ns.

A step is measured only inside the recording. A step range that ends after the recording of its rank ended (the
latest end of the rank's events other than annotation ranges, the profiler's own spans and marks included) has no
recorded end: it is **cut** at the last activity recorded on its rank (annotation ranges and profiler bookkeeping
left out), since after that the trace holds nothing of the step but the profiler stopping. A step range in which
nothing at all was recorded (it starts at or after that last activity) is left out. Every consumer of steps reads
the cut durations; :attr:`Steps.range_dur_ns` keeps what the ranges themselves say."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns, plural

STEP_NAME = re.compile(
    r"^(?:ProfilerStep#\d+|(?:train_|training_|eval_|infer_|inference_)?step[ _#-]?\d+|"
    r"(?:train|training|eval|infer|inference)[ _#-]?\d+|iter(?:ation)?[ _#-]?\d+)$",
    re.IGNORECASE,
)
#: Annotation ranges: they say what the program meant to mark, not that the recording was running.
ANNOTATION_KINDS = (Kind.RANGE, Kind.GPU_RANGE)


@dataclass(frozen=True)
class Steps:
    """Step ranges of one rank: event indices, starts and durations (ns), sorted by start. ``dur_ns`` is the
    measured duration (cut at the recording's end, see the module); ``range_dur_ns`` the step range's own duration
    as the file records it; ``left_out`` the step ranges in which nothing was recorded; ``recording_end_ns`` where
    the rank's recording ends (None: the rank has nothing but annotation ranges, and nothing is cut)."""

    rank: int
    events: I64
    start_ns: I64
    dur_ns: I64
    range_dur_ns: I64
    left_out: I64
    recording_end_ns: int | None = None

    def __len__(self) -> int:
        return int(self.events.shape[0])

    @property
    def cut(self) -> npt.NDArray[np.bool_]:
        """Which steps were cut at the recording's end."""
        return np.asarray(self.dur_ns < self.range_dur_ns)


def is_step_name(name: str) -> bool:
    """Whether an annotation range name marks one step."""
    return STEP_NAME.match(name.strip()) is not None


def recording_ends(trace: Trace) -> dict[int, tuple[int, int]]:
    """Per rank, (end of the recording, end of the last activity), ns: the latest end of the rank's events other
    than annotation ranges, and of those that are not profiler bookkeeping either (``Kind.OVERHEAD``, and events on
    lanes of no thread or stream, such as Kineto's ``PyTorch Profiler (0)`` span and ``Record Window End`` mark).
    A rank with nothing but annotation ranges is left out (nothing to measure them against)."""
    if not len(trace):
        return {}
    lo = np.iinfo(np.int64).min
    annotation = np.logical_or.reduce([trace.kind == k for k in ANNOTATION_KINDS])  # one pass a kind, no np.isin
    end = np.where(annotation, lo, trace.end_ns)
    work = np.where(trace.kind == Kind.OVERHEAD, lo, end)
    offsets = trace.lane_offsets
    full = np.flatnonzero(np.diff(offsets) > 0)  # events are sorted by lane: one reduction per non-empty lane
    lane_end = np.full(len(trace.lanes), lo, dtype=np.int64)
    lane_work = lane_end.copy()
    lane_end[full] = np.maximum.reduceat(end, offsets[full])
    lane_work[full] = np.maximum.reduceat(work, offsets[full])
    lane_work[trace.lane_kind == LaneKind.OTHER] = lo
    out: dict[int, tuple[int, int]] = {}
    for r in np.unique(trace.lane_rank).tolist():
        mine = trace.lane_rank == r
        recorded = int(lane_end[mine].max())
        if recorded == lo:
            continue
        last = int(lane_work[mine].max())
        out[int(r)] = (recorded, last if last != lo else recorded)
    return out


def find_steps(trace: Trace) -> list[Steps]:
    """Step ranges per rank (ranks without any are left out), cut at the recording's end (see the module). When a
    rank has both ``ProfilerStep#N`` and its own step ranges, the profiler's are used (they tile the timeline
    exactly)."""
    rng = trace.of_kind(Kind.RANGE)
    if not len(rng):
        return []
    ids = np.unique(trace.name[rng])
    step_ids = {int(i) for i in ids.tolist() if is_step_name(trace.names[int(i)])}
    prof_ids = {i for i in step_ids if trace.names[i].startswith("ProfilerStep#")}
    if not step_ids:
        return []
    recorded_until = recording_ends(trace)
    out: list[Steps] = []
    for r in sorted({int(x) for x in trace.event_rank[rng].tolist()}):
        mine = rng[trace.event_rank[rng] == r]
        names = trace.name[mine]
        use = prof_ids if np.isin(names, list(prof_ids)).any() else step_ids
        sel = mine[np.isin(names, list(use))]
        if not len(sel):
            continue
        sel = sel[np.argsort(trace.start_ns[sel], kind="stable")]
        start, end = trace.start_ns[sel], trace.end_ns[sel]
        empty = np.zeros(len(sel), dtype=bool)
        ends = recorded_until.get(r)
        if ends is not None:
            recorded, last = ends
            past = end > recorded
            empty = past & (last <= start)  # nothing of the program was recorded in it
            end = np.where(past, np.maximum(np.minimum(end, last), start), end)
        # only the outermost step ranges (a step nested in another step is not a new step)
        reach = np.maximum.accumulate(end)
        outer = np.concatenate(([True], start[1:] >= reach[:-1]))
        empty &= outer
        keep = outer & ~empty
        out.append(
            Steps(
                rank=r,
                events=sel[keep],
                start_ns=start[keep],
                dur_ns=(end - start)[keep],
                range_dur_ns=trace.dur_ns[sel][keep],
                left_out=sel[empty],
                recording_end_ns=ends[0] if ends is not None else None,
            )
        )
    return out


def steps_note(trace: Trace, steps: Steps) -> str | None:
    """What the user must know about one rank's step times: the steps cut at the recording's end and the steps
    left out because nothing was recorded in them; None when there are none."""
    parts = []
    cut = np.flatnonzero(steps.cut)
    if len(cut) and steps.recording_end_ns is not None:
        i = int(cut[0])
        start, recorded = int(steps.start_ns[i]), steps.recording_end_ns
        over = start + int(steps.range_dur_ns[i]) - recorded
        first = (
            f"{trace.event_name(int(steps.events[i]))} runs {format_ns(over)} past the end of the recording (which "
            f"ends {format_ns(recorded - start)} into it), so it is measured to the last activity recorded in it: "
            f"{format_ns(int(steps.dur_ns[i]))} of the {format_ns(int(steps.range_dur_ns[i]))} its range says"
        )
        more = f" ({plural(len(cut) - 1, 'more step')} cut the same way)" if len(cut) > 1 else ""
        parts.append(first + more)
    if len(steps.left_out):
        names = ", ".join(trace.event_name(int(e)) for e in steps.left_out[:3].tolist())
        etc = ", …" if len(steps.left_out) > 3 else ""
        them = "it" if len(steps.left_out) == 1 else "them"
        parts.append(
            f"{plural(len(steps.left_out), 'step')} left out ({names}{etc}): "
            f"nothing was recorded in {them} before the recording ended"
        )
    return "; ".join(parts) if parts else None
