"""Training/inference steps: the annotation ranges that mark one iteration (``ProfilerStep#7``, ``step_3``,
``train_step_2``, ``infer_4``, ``iteration 12``), per rank, with their durations in ns.

A step is measured only inside the recording, where the file says where its recording ran: the profiler's own
marks of it (Kineto's ``PyTorch Profiler (0)`` span and ``Record Window End`` mark, on lanes of no thread or
stream, and its ``Overhead`` events: :attr:`Recording.marked`). On such a rank:

- a step range that ends after the recording ended (the latest end of the rank's events other than annotation
  ranges, the profiler's marks included) has no recorded end: it is **cut** at the last activity recorded on its
  rank (annotation ranges and profiler bookkeeping left out), since after that the trace holds nothing of the step
  but the profiler stopping;
- a step range that starts before the recording started (the earliest start of those events: the start of the
  profiler's span) has no recorded start: it is **cut** there, the time before it is not in the trace;
- a step range in which nothing at all was recorded (it starts at or after that last activity, or ends at or
  before the recording's start) is left out.

Without the profiler's marks (an nsys export, whose NVTX ranges are recorded only while the capture runs; a
trace trimmed by hand) nothing says where the recording stopped, and the step range's own ends are as much a
recorded fact as any other event's: nothing is cut. Every consumer of steps reads the cut durations;
:attr:`Steps.range_dur_ns` and :attr:`Steps.range_start_ns` keep what the ranges themselves say, and
:func:`cut_reason` says in words why a step was cut."""

from __future__ import annotations

import re
import weakref
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64, distinct, isin
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
class Recording:
    """Where one rank's recording runs (ns, model time). ``first_ns`` / ``last_ns``: the first start and the last
    end of the program's activity (the rank's events other than annotation ranges and profiler bookkeeping; the
    bookkeeping's when there is nothing else). ``start_ns`` / ``end_ns``: where the profiler's own marks say the
    recording started and ended (the earliest start of its bookkeeping when that is at or before the first
    activity, the latest end of it when that is at or after the last activity); None where the file does not mark
    them (see the module)."""

    rank: int
    first_ns: int
    last_ns: int
    start_ns: int | None
    end_ns: int | None

    @property
    def marked(self) -> bool:
        """Whether the file marks the start or the end of this rank's recording."""
        return self.start_ns is not None or self.end_ns is not None


@dataclass(frozen=True)
class Steps:
    """Step ranges of one rank: event indices, starts and durations (ns), sorted by start. ``start_ns`` and
    ``dur_ns`` are measured (cut to the recording, see the module); ``range_start_ns`` and ``range_dur_ns`` the
    step range's own as the file records them; ``left_out`` the step ranges in which nothing was recorded;
    ``recording_start_ns`` / ``recording_end_ns`` where the rank's recording starts and ends (None: the file does
    not mark them, and nothing is cut)."""

    rank: int
    events: I64
    start_ns: I64
    dur_ns: I64
    range_dur_ns: I64
    left_out: I64
    recording_end_ns: int | None = None
    range_start_ns: I64 | None = None
    recording_start_ns: int | None = None

    def __len__(self) -> int:
        return int(self.events.shape[0])

    @property
    def cut(self) -> npt.NDArray[np.bool_]:
        """Which steps were cut to the recording (at its start, its end or both)."""
        return np.asarray(self.dur_ns < self.range_dur_ns)

    @property
    def cut_start(self) -> npt.NDArray[np.bool_]:
        """Which steps were cut at the recording's start (their range starts before it)."""
        if self.range_start_ns is None or self.range_start_ns.shape != self.start_ns.shape:
            return np.zeros(len(self), dtype=bool)
        return np.asarray(self.start_ns > self.range_start_ns)

    @property
    def cut_end(self) -> npt.NDArray[np.bool_]:
        """Which steps were cut at the recording's end (their range ends after it)."""
        if self.range_start_ns is None or self.range_start_ns.shape != self.start_ns.shape:
            return self.cut
        return np.asarray(self.start_ns + self.dur_ns < self.range_start_ns + self.range_dur_ns)


def is_step_name(name: str) -> bool:
    """Whether an annotation range name marks one step."""
    return STEP_NAME.match(name.strip()) is not None


def recordings(trace: Trace) -> dict[int, Recording]:
    """See :func:`_recordings`; computed once per trace (a summary asks five times)."""
    cached = _RECORDINGS.get(trace)
    if cached is None:
        cached = _RECORDINGS[trace] = _recordings(trace)
    return dict(cached)


#: recordings() per trace
_RECORDINGS: weakref.WeakKeyDictionary[Trace, dict[int, Recording]] = weakref.WeakKeyDictionary()


def _recordings(trace: Trace) -> dict[int, Recording]:
    """Per rank, where its recording runs (:class:`Recording`). A rank with nothing but annotation ranges is left
    out (nothing to measure them against). Profiler bookkeeping: ``Kind.OVERHEAD`` events and events on lanes of no
    thread or stream (Kineto's ``PyTorch Profiler (0)`` span, which starts with the recording, and its
    ``Record Window End`` mark); an nsys export has none that marks its capture (its ``PROFILER_OVERHEAD`` rows are
    not marks of the capture's bounds, and its NVTX ranges are recorded only while the capture runs)."""
    if not len(trace):
        return {}
    lo, hi = np.iinfo(np.int64).min, np.iinfo(np.int64).max
    annotation = np.logical_or.reduce([trace.kind == k for k in ANNOTATION_KINDS])  # one pass a kind, no np.isin
    book = (trace.kind == Kind.OVERHEAD) | (trace.lane_kind[trace.lane] == LaneKind.OTHER)
    work = ~annotation & ~book
    book &= ~annotation
    if trace.meta.format == "nsys":
        book[:] = False
    offsets = trace.lane_offsets
    full = np.flatnonzero(np.diff(offsets) > 0)  # events are sorted by lane: one reduction per non-empty lane
    n = len(trace.lanes)

    def per_lane(values: I64, use: npt.NDArray[np.bool_], fill: int, reduce: np.ufunc) -> I64:
        out = np.full(n, fill, dtype=np.int64)
        out[full] = reduce.reduceat(np.where(use, values, fill), offsets[full])
        return out

    w_first, w_last = per_lane(trace.start_ns, work, hi, np.minimum), per_lane(trace.end_ns, work, lo, np.maximum)
    b_first, b_last = per_lane(trace.start_ns, book, hi, np.minimum), per_lane(trace.end_ns, book, lo, np.maximum)
    out: dict[int, Recording] = {}
    for r in distinct(trace.lane_rank).tolist():
        mine = trace.lane_rank == r
        first, last = int(w_first[mine].min()), int(w_last[mine].max())
        bfirst, blast = int(b_first[mine].min()), int(b_last[mine].max())
        if last == lo:  # nothing but bookkeeping (or nothing but annotation ranges: left out)
            if blast == lo:
                continue
            first, last = bfirst, blast
        out[int(r)] = Recording(
            rank=int(r),
            first_ns=first,
            last_ns=last,
            start_ns=bfirst if bfirst != hi and bfirst <= first else None,
            end_ns=blast if blast != lo and blast >= last else None,
        )
    return out


def recording_window(rec: Recording | None) -> tuple[int, int] | None:
    """The recorded window of a rank (start, end ns): where the profiler marks it, else its activity; None for a
    rank without a recording."""
    if rec is None:
        return None
    return (
        rec.start_ns if rec.start_ns is not None else rec.first_ns,
        rec.end_ns if rec.end_ns is not None else rec.last_ns,
    )


def cut_to_recording(start: I64, end: I64, rec: Recording | None) -> tuple[I64, I64, npt.NDArray[np.bool_]]:
    """Ranges (start, end ns) of one rank cut to its recording as steps are (see the module): the cut starts and
    ends, and which ranges hold nothing recorded (left out). Unchanged where the file does not mark the recording."""
    empty = np.zeros(start.shape[0], dtype=bool)
    if rec is None:
        return start, end, empty
    if rec.end_ns is not None:
        past = end > rec.end_ns
        empty |= past & (rec.last_ns <= start)
        end = np.where(past, np.maximum(np.minimum(end, rec.last_ns), start), end)
    if rec.start_ns is not None:
        before = start < rec.start_ns
        empty |= before & (end <= rec.start_ns)
        start = np.where(before, np.minimum(rec.start_ns, end), start)
    return start, end, empty


def cut_ranges(trace: Trace, events: I64) -> tuple[I64, I64]:
    """Start and end (ns) of annotation range events cut to their rank's recording as steps are (a range with
    nothing recorded in it gets no length: its end at its cut start)."""
    recs = recordings(trace)
    start, end = trace.start_ns[events].copy(), trace.end_ns[events].copy()
    ranks = trace.event_rank[events]
    for r in distinct(ranks).tolist():
        at = np.flatnonzero(ranks == r)
        s, e, empty = cut_to_recording(start[at], end[at], recs.get(int(r)))
        start[at], end[at] = s, np.where(empty, s, e)
    return start, end


def measured_span(trace: Trace) -> int:
    """The trace's span (ns) with its annotation ranges cut to their rank's recording as steps are: from the first
    event's start to the last event's end. :attr:`Trace.span_ns` where no range runs outside the recording."""
    if not len(trace):
        return 0
    ann = isin(trace.kind, ANNOTATION_KINDS)
    if not ann.any():
        return trace.span_ns
    rest = np.flatnonzero(~ann)
    start, end = cut_ranges(trace, np.flatnonzero(ann))
    lo = min(int(start.min()), int(trace.start_ns[rest].min()) if len(rest) else int(start.min()))
    hi = max(int(end.max()), int(trace.end_ns[rest].max()) if len(rest) else int(end.max()))
    return hi - lo


def find_steps(trace: Trace) -> list[Steps]:
    """Step ranges per rank (ranks without any are left out), cut to the recording (see the module). When a rank
    has both ``ProfilerStep#N`` and its own step ranges, the profiler's are used (they tile the timeline
    exactly). Computed once per trace (a summary asks three times)."""
    cached = _STEPS.get(trace)
    if cached is None:
        cached = _STEPS[trace] = tuple(_find_steps(trace))
        for st in cached:  # shared by every caller: read-only
            for a in (st.events, st.start_ns, st.dur_ns, st.range_dur_ns, st.left_out, st.range_start_ns):
                if a is not None:
                    a.setflags(write=False)
    return list(cached)


#: find_steps() per trace
_STEPS: weakref.WeakKeyDictionary[Trace, tuple[Steps, ...]] = weakref.WeakKeyDictionary()


def _find_steps(trace: Trace) -> list[Steps]:
    rng = trace.of_kind(Kind.RANGE)
    if not len(rng):
        return []
    ids = distinct(trace.name[rng])
    step_ids = {int(i) for i in ids.tolist() if is_step_name(trace.names[int(i)])}
    prof_ids = {i for i in step_ids if trace.names[i].startswith("ProfilerStep#")}
    if not step_ids:
        return []
    recs = recordings(trace)
    out: list[Steps] = []
    for r in sorted({int(x) for x in trace.event_rank[rng].tolist()}):
        mine = rng[trace.event_rank[rng] == r]
        names = trace.name[mine]
        use = prof_ids if isin(names, list(prof_ids)).any() else step_ids
        sel = mine[isin(names, list(use))]
        if not len(sel):
            continue
        sel = sel[np.argsort(trace.start_ns[sel], kind="stable")]
        rec = recs.get(r)
        start, end, empty = cut_to_recording(trace.start_ns[sel], trace.end_ns[sel], rec)
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
                recording_end_ns=rec.end_ns if rec is not None else None,
                range_start_ns=trace.start_ns[sel][keep],
                recording_start_ns=rec.start_ns if rec is not None else None,
            )
        )
    return out


def cut_reason(trace: Trace, steps: Steps, i: int) -> str | None:
    """Why step ``i`` of ``steps`` is measured shorter than its range, in words (None: it is not cut)."""
    if not steps.cut[i]:
        return None
    name = trace.event_name(int(steps.events[i]))
    start, dur = int(steps.start_ns[i]), int(steps.dur_ns[i])
    rstart = int(steps.range_start_ns[i]) if steps.range_start_ns is not None else start
    rdur = int(steps.range_dur_ns[i])
    parts = []
    if steps.cut_start[i] and steps.recording_start_ns is not None:
        parts.append(
            f"{name} starts {format_ns(steps.recording_start_ns - rstart)} before the recording started, so it "
            "is measured from the start of the recording"
        )
    if steps.cut_end[i] and steps.recording_end_ns is not None:
        over = rstart + rdur - steps.recording_end_ns
        into = steps.recording_end_ns - rstart
        what = f"{name} runs" if not parts else "it runs"
        parts.append(
            f"{what} {format_ns(over)} past the end of the recording (which ends {format_ns(into)} into it), so it "
            "is measured to the last activity recorded in it"
        )
    if not parts:
        return None
    return " and ".join(parts) + f": {format_ns(dur)} of the {format_ns(rdur)} its range says"


def steps_note(trace: Trace, steps: Steps) -> str | None:
    """What the user must know about one rank's step times: the steps cut to the recording (the first in full,
    :func:`cut_reason`, and how many more) and the steps left out because nothing was recorded in them; None when
    there are none."""
    parts = []
    cut = np.flatnonzero(steps.cut)
    if len(cut):
        first = cut_reason(trace, steps, int(cut[0]))
        if first is not None:
            more = f" ({plural(len(cut) - 1, 'more step')} cut the same way)" if len(cut) > 1 else ""
            parts.append(first + more)
    if len(steps.left_out):
        names = ", ".join(trace.event_name(int(e)) for e in steps.left_out[:3].tolist())
        etc = ", …" if len(steps.left_out) > 3 else ""
        them = "it" if len(steps.left_out) == 1 else "them"
        early = steps.recording_start_ns is not None and bool(
            (trace.end_ns[steps.left_out] <= steps.recording_start_ns).any()
        )
        when = "while the recording ran" if early else "before the recording ended"
        parts.append(
            f"{plural(len(steps.left_out), 'step')} left out ({names}{etc}): nothing was recorded in {them} {when}"
        )
    return "; ".join(parts) if parts else None
