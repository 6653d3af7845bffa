"""The arithmetic of "compare ranks": one step as every rank ran it, stacked and aligned, free of Textual.

A *slot* is one step on every rank that recorded it (matched by the step's name, ``ProfilerStep#7`` on each rank,
else by position), or a plain time window when the trace has no step ranges. Each rank's lines (GPU busy strip,
the stream carrying its collectives, the rows of its main CPU thread) are drawn on the same columns with that
rank's own *offset* subtracted: its step start (so a rank whose collective comes later in its step shows it
further right) or one common time for all (the trace's clock, so collectives that end together line up).

The step's collectives come from the straggler analysis: instances matched across ranks, arrival = kernel start.
For each rank: how far behind the first arrival it came (lateness), how long it waited inside the step's
collectives for later ranks, and, for the latest rank at the most uneven collective, what its host was doing
while the first rank waited for it (:mod:`gputop_trace.analysis.host.activity`, the straggler verdict's words).
Times are int64 ns from the trace start unless a name says otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum, IntEnum

import numpy as np

from gputop_trace.analysis.host.activity import host_activity
from gputop_trace.analysis.ranks.collectives import OP_LABEL, Collectives
from gputop_trace.analysis.ranks.stragglers import STRAGGLER_MIN_LATE_NS, MatchedGroup, StragglerReport
from gputop_trace.analysis.steps import Steps, is_step_name
from gputop_trace.model.arrays import I64
from gputop_trace.model.kinds import FlowKind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.tui.view.timeline_math import Window, column_bounds, fit_label
from gputop_trace.units import format_ns, plural

#: Rows of the main CPU thread shown per rank (from the step range down) when there is room, and at least.
MAX_THREAD_ROWS = 5
MIN_THREAD_ROWS = 2
#: Streams carrying collectives shown per rank.
COMM_LANES = 2
#: Margin around a step (fraction of its length) when the view fits it.
FIT_MARGIN = 0.02


class Align(Enum):
    """Where each rank's time 0 is."""

    STEP = "each rank's step start"
    CLOCK = "the common clock"


# ---------------------------------------------------------------------------------------------------------
# steps across ranks
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class StepSlot:
    """One step on every rank that recorded it: ``spans[rank] = (start_ns, end_ns, event)`` (``event`` is the step
    range, ``-1`` for a time window). ``window`` is True when the trace has no step ranges and the slot is a plain
    time window, the same on every rank."""

    label: str
    spans: dict[int, tuple[int, int, int]]
    window: bool = False


def step_slots(trace: Trace, steps: Sequence[Steps]) -> list[StepSlot]:
    """The steps of every rank lined up: by name when every rank names its steps uniquely and the ranks share
    names (``ProfilerStep#12`` on each), else by position (the k-th step of each rank). Ordered by start."""
    steps = [s for s in steps if len(s)]
    if not steps:
        return []
    names = {s.rank: [trace.event_name(int(e)) for e in s.events.tolist()] for s in steps}
    unique = all(len(set(v)) == len(v) for v in names.values())
    shared = set.intersection(*(set(v) for v in names.values()))
    slots: list[StepSlot] = []
    if unique and shared:
        spans_by_name: dict[str, dict[int, tuple[int, int, int]]] = {}
        for s in steps:
            for name, e, st, d in zip(names[s.rank], s.events.tolist(), s.start_ns.tolist(), s.dur_ns.tolist(),
                                      strict=True):  # fmt: skip
                spans_by_name.setdefault(name, {})[s.rank] = (int(st), int(st) + int(d), int(e))
        for name, spans in spans_by_name.items():
            slots.append(StepSlot(name, spans))
        slots.sort(key=lambda sl: (min(v[0] for v in sl.spans.values()), sl.label))
        return slots
    for k in range(max(len(s) for s in steps)):
        spans = {
            s.rank: (int(s.start_ns[k]), int(s.start_ns[k] + s.dur_ns[k]), int(s.events[k]))
            for s in steps
            if k < len(s)
        }
        first = min(spans)
        slots.append(StepSlot(names[first][k], spans))
    return slots


def slot_at(slots: Sequence[StepSlot], rank: int, t: int) -> int:
    """The slot whose step on ``rank`` holds time ``t`` (else the last one started before ``t``, else the first);
    ranks without a step there are looked up on the lowest rank. ``-1`` when there are no slots."""
    if not slots:
        return -1
    if not any(rank in s.spans for s in slots):
        rank = min(r for s in slots for r in s.spans)
    before = -1
    for i, s in enumerate(slots):
        sp = s.spans.get(rank)
        if sp is None:
            continue
        if sp[0] <= t < sp[1]:
            return i
        if sp[0] <= t:
            before = i
    if before >= 0:
        return before
    return next(i for i, s in enumerate(slots) if rank in s.spans)


def window_slot(ranks: Sequence[int], t0: int, t1: int) -> StepSlot:
    """A time window ``[t0, t1)`` shown on every rank (for traces without step ranges)."""
    label = f"{format_ns(t0, precision=4)} – {format_ns(t1, precision=4)}"
    return StepSlot(label, {r: (t0, t1, -1) for r in ranks}, window=True)


def rank_offsets(slot: StepSlot, align: Align) -> dict[int, int]:
    """Each rank's time 0 (ns from the trace start): its step start, or the earliest step start of all."""
    if align == Align.STEP:
        return {r: sp[0] for r, sp in slot.spans.items()}
    base = min(sp[0] for sp in slot.spans.values())
    return dict.fromkeys(slot.spans, base)


def slot_window(slot: StepSlot, offsets: dict[int, int], margin: float = FIT_MARGIN) -> tuple[int, int]:
    """The relative window that shows the step on every rank, with ``margin`` of its length on each side."""
    lo = min(sp[0] - offsets[r] for r, sp in slot.spans.items())
    hi = max(sp[1] - offsets[r] for r, sp in slot.spans.items())
    pad = round((hi - lo) * margin)
    return lo - pad, max(hi, lo + 1) + pad


def view_extent(span_ns: int, offsets: dict[int, int]) -> tuple[int, int]:
    """The relative times the view may show: the whole trace on every rank."""
    lo = min(-off for off in offsets.values())
    hi = max(span_ns - off for off in offsets.values())
    return lo, max(hi, lo + 1)


def line_bounds(w: Window, offset: int) -> I64:
    """Column boundaries, in trace time, of a rank whose time 0 is ``offset`` (see ``column_bounds``)."""
    out: I64 = column_bounds(w) + np.int64(offset)
    return out


# ---------------------------------------------------------------------------------------------------------
# which lanes stand for a rank
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankLanes:
    """What is drawn for one rank: GPUs (busy strips), the streams carrying its collectives (``has_collectives``
    False: its busiest stream instead), the main CPU thread with the rows that may be shown (``thread`` ``-1``:
    none), and the thread that launched most of its collectives when that is another one (``launcher``, DDP's
    autograd thread; ``-1``: none)."""

    rank: int
    devices: tuple[int, ...]
    comm: tuple[int, ...]
    has_collectives: bool
    thread: int
    depths: tuple[int, ...]
    launcher: int = -1

    @property
    def fixed_lines(self) -> int:
        """Lines drawn whatever the room: header, busy strips, streams, launching thread."""
        return 1 + len(self.devices) + len(self.comm) + (1 if self.launcher >= 0 else 0)


def rank_lanes(
    trace: Trace, steps: Sequence[Steps], coll: Collectives, util_keys: set[tuple[int, int]]
) -> dict[int, RankLanes]:
    """The lanes that stand for each rank. The main thread is the one holding the rank's step ranges (its rows
    from the step range down), else the thread that launched most GPU work, else the busiest thread."""
    n_lanes = len(trace.lanes)
    per_lane = np.diff(trace.lane_offsets)
    coll_count = np.bincount(trace.lane[coll.event], minlength=n_lanes) if len(coll) else np.zeros(n_lanes, np.int64)
    launch = trace.flows.kind == int(FlowKind.LAUNCH)
    launches = (
        np.bincount(trace.lane[trace.flows.src[launch]], minlength=n_lanes) if launch.any() else np.zeros(n_lanes)
    )
    coll_api = trace.launch_of[coll.event] if len(coll) else np.zeros(0, dtype=np.int64)
    coll_api = coll_api[coll_api >= 0]
    coll_launches = np.bincount(trace.lane[coll_api], minlength=n_lanes) if len(coll_api) else np.zeros(n_lanes)
    step_at = {s.rank: (int(trace.lane[s.events[0]]), int(trace.depth[s.events[0]])) for s in steps if len(s)}
    ranks = sorted({ln.rank for i, ln in enumerate(trace.lanes) if per_lane[i]} | set(trace.meta.ranks))
    out: dict[int, RankLanes] = {}
    for r in ranks:
        mine = [i for i, ln in enumerate(trace.lanes) if ln.rank == r and per_lane[i]]
        devices = tuple(sorted(d for rr, d in util_keys if rr == r))
        streams = [i for i in mine if trace.lanes[i].kind == LaneKind.GPU_STREAM]
        comm = sorted((i for i in streams if coll_count[i]), key=lambda i: (-int(coll_count[i]), i))[:COMM_LANES]
        has_coll = bool(comm)
        if not comm and streams:
            comm = [max(streams, key=lambda i: (int(per_lane[i]), -i))]
        threads = [i for i in mine if trace.lanes[i].kind == LaneKind.CPU_THREAD]
        thread, top = -1, 0
        if r in step_at:
            thread, top = step_at[r]
        elif threads:
            thread = max(threads, key=lambda i: (int(launches[i]), int(per_lane[i]), -i))
        rows = int(trace.lane_rows[thread]) if thread >= 0 else 0
        depths = tuple(range(top, min(rows, top + MAX_THREAD_ROWS)))
        launcher = max(threads, key=lambda i: (int(coll_launches[i]), -i)) if threads else -1
        if launcher == thread or (launcher >= 0 and not coll_launches[launcher]):
            launcher = -1
        out[r] = RankLanes(r, devices, tuple(comm), has_coll, thread, depths, launcher)
    return out


class LineKind(IntEnum):
    """What a line of the comparison shows."""

    HEADER = 0  # a rank's name and its figures for the step
    UTIL = 1  # a GPU's busy strip
    EVENTS = 2  # one row of a lane
    NOTE = 3  # a sentence (the rank did not record this step)


@dataclass(frozen=True)
class CompareLine:
    """One line of the comparison below the ruler."""

    kind: LineKind
    rank: int
    label: str = ""
    lane: int = -1
    depth: int = 0
    device: int = -1


def _stream_label(trace: Trace, lane: int, nccl: bool) -> str:
    ln = trace.lanes[lane]
    return ("NCCL " if nccl else "") + clean(ln.name)


def _thread_label(trace: Trace, lane: int) -> str:
    ln = trace.lanes[lane]
    label = clean(ln.name)
    pname = clean(ln.process_name).replace(" (CPU)", "").strip()
    if pname and label.endswith(f" ({pname})"):
        label = label[: -len(pname) - 3]
    return label


def thread_rows_for(lanes: dict[int, RankLanes], visible: int) -> int:
    """How many rows of each main thread fit when ``visible`` lines are shown (between the bounds above)."""
    if not lanes:
        return MIN_THREAD_ROWS
    fixed = max(rl.fixed_lines for rl in lanes.values())
    return max(MIN_THREAD_ROWS, min(MAX_THREAD_ROWS, visible // len(lanes) - fixed))


def compare_lines(
    trace: Trace, lanes: dict[int, RankLanes], slot: StepSlot, thread_rows: int = MIN_THREAD_ROWS
) -> list[CompareLine]:
    """The lines of the comparison, rank by rank: a header, then the busy strips, the collective streams, the
    main thread's top ``thread_rows`` rows and the thread launching the collectives (a note instead when the rank
    did not record this step)."""
    out: list[CompareLine] = []
    for r in sorted(lanes):
        rl = lanes[r]
        out.append(CompareLine(LineKind.HEADER, r, f"rank {r}"))
        if r not in slot.spans:
            out.append(CompareLine(LineKind.NOTE, r, f"rank {r} did not record {slot.label}"))
            continue
        for d in rl.devices:
            out.append(CompareLine(LineKind.UTIL, r, f"GPU {d} busy", device=d))
        for lane in rl.comm:
            out.append(CompareLine(LineKind.EVENTS, r, _stream_label(trace, lane, rl.has_collectives), lane=lane))
        for k, d in enumerate(rl.depths[:thread_rows]):
            label = _thread_label(trace, rl.thread) if k == 0 else "┊"
            out.append(CompareLine(LineKind.EVENTS, r, label, lane=rl.thread, depth=d))
        if rl.launcher >= 0:
            label = f"{_thread_label(trace, rl.launcher)} (NCCL)"
            out.append(CompareLine(LineKind.EVENTS, r, label, lane=rl.launcher))
    return out


# ---------------------------------------------------------------------------------------------------------
# the step's collectives
# ---------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RankStepFigures:
    """One rank in one step (ns). ``late_ns``: how long after the first rank it arrived, at its latest collective
    of the step (``late_at`` its 1-based position among the step's collectives of that group, ``late_op`` its
    op); ``wait_ns``: time spent inside the step's collectives waiting for later ranks; ``marker_ns``: the
    moment (trace time, on this rank's lanes) the first rank arrived at the step's most uneven collective
    (``-1`` none)."""

    rank: int
    collectives: int = 0
    ops: tuple[str, ...] = ()
    times_last: int = 0
    late_ns: int = 0
    late_at: int = 0
    late_op: str = ""
    wait_ns: int = 0
    marker_ns: int = -1


@dataclass(frozen=True)
class StepComparison:
    """The step's collectives across ranks: per-rank figures, and the most uneven collective (``worst_op`` at
    position ``worst_at`` of ``worst_of``): its latest rank, how late (``spread_ns``, after the first rank), and
    what that rank's host was doing from the first rank's arrival to its own (``activity``, the words of
    :func:`~gputop_trace.analysis.host.activity.host_activity`)."""

    slot: StepSlot
    figures: dict[int, RankStepFigures]
    instances: int = 0
    late_rank: int | None = None
    first_rank: int | None = None
    spread_ns: int = 0
    worst_op: str = ""
    worst_at: int = 0
    worst_of: int = 0
    activity: str = ""

    @property
    def has_late_rank(self) -> bool:
        """Whether one rank came late enough to matter (the straggler threshold)."""
        return self.late_rank is not None and self.spread_ns >= STRAGGLER_MIN_LATE_NS


@dataclass
class _Acc:
    collectives: int = 0
    ops: set[str] = field(default_factory=set)
    times_last: int = 0
    late_ns: int = 0
    late_at: int = 0
    late_op: str = ""
    wait_ns: int = 0


def _issue_lookup(coll: Collectives) -> tuple[I64, I64]:
    order = np.argsort(coll.event, kind="stable")
    return coll.event[order], coll.issue_ns[order]


def _in_step(g: MatchedGroup, slot: StepSlot, ev_sorted: I64, issue_sorted: I64) -> I64:
    """Instances of group ``g`` that any rank issued (its launch call) inside its span of the step."""
    issue = issue_sorted[np.clip(np.searchsorted(ev_sorted, g.event), 0, len(ev_sorted) - 1)]
    inside = np.zeros(g.event.shape, dtype=bool)
    for c, r in enumerate(g.ranks):
        sp = slot.spans.get(r)
        if sp is not None:
            inside[:, c] = (issue[:, c] >= sp[0]) & (issue[:, c] < sp[1])
    out: I64 = np.flatnonzero(inside.any(axis=1))
    return out


def _add_group(acc: dict[int, _Acc], g: MatchedGroup, sel: I64, late: I64, spread: I64) -> None:
    """Add the selected instances of group ``g`` to each rank's figures (``late``: ns each rank arrived after the
    first, per instance and rank; ``spread``: the last arrival's lateness per instance)."""
    ops = {g.op[i] for i in sel.tolist()}
    for c, r in enumerate(g.ranks):
        a = acc.get(r)
        if a is None:
            continue
        a.collectives += len(sel)
        a.ops |= ops
        a.times_last += int(np.sum((g.last[sel] == c) & (spread > 0)))
        a.wait_ns += int(g.wait_ns[sel, c].sum())
        k = int(np.argmax(late[:, c]))
        if int(late[k, c]) > a.late_ns:
            a.late_ns, a.late_at, a.late_op = int(late[k, c]), k + 1, g.op[int(sel[k])]


def _late_activity(trace: Trace, report: StragglerReport, g: MatchedGroup, i: int, late_rank: int) -> str:
    """What the late rank's host was doing while the first rank waited for it at instance ``i`` of ``g``."""
    first_col, last_col = int(np.argmin(g.arrival_ns[i])), int(np.argmax(g.arrival_ns[i]))
    api = int(trace.launch_of[int(g.event[i, last_col])])
    shift = report.clock_offset_ns.get(late_rank, 0)
    (activity,) = host_activity(
        trace,
        late_rank,
        [int(trace.lane[api]) if api >= 0 else -1],
        [int(g.arrival_ns[i, first_col]) + shift],
        [int(g.arrival_ns[i, last_col]) + shift],
    )
    return activity


def compare_step(data: TimelineData, report: StragglerReport, coll: Collectives, slot: StepSlot) -> StepComparison:
    """The step's collectives: the matched instances any rank issued inside its step (its launch call, not the
    kernel, is in the step: a waiting kernel may run on into the next one), with each rank's lateness and wait.
    Cost: O(collectives) numpy plus a few row lookups, cheap enough for a keypress."""
    ev_sorted, issue_sorted = _issue_lookup(coll)
    acc = {r: _Acc() for r in slot.spans}
    instances = 0
    best: tuple[int, int, int] | None = None  # (spread, group index, instance)
    best_pos = (0, 0)
    for gi, g in enumerate(report.groups):
        if not len(g) or not len(ev_sorted):
            continue
        sel = _in_step(g, slot, ev_sorted, issue_sorted)
        if not len(sel):
            continue
        instances += len(sel)
        arr = g.arrival_ns[sel]
        late = arr - arr.min(axis=1)[:, None]
        spread = late.max(axis=1)
        _add_group(acc, g, sel, late, spread)
        k = int(np.argmax(spread))
        if best is None or int(spread[k]) > best[0]:
            best = (int(spread[k]), gi, int(sel[k]))
            best_pos = (k + 1, len(sel))
    if best is None:
        return StepComparison(slot, {r: RankStepFigures(r) for r in slot.spans})
    spread_ns, gi, i = best
    g = report.groups[gi]
    first_col, last_col = int(np.argmin(g.arrival_ns[i])), int(np.argmax(g.arrival_ns[i]))
    first_t = int(g.arrival_ns[i, first_col])
    figures = {
        r: RankStepFigures(
            r,
            collectives=a.collectives,
            ops=tuple(sorted(a.ops)),
            times_last=a.times_last,
            late_ns=a.late_ns,
            late_at=a.late_at,
            late_op=a.late_op,
            wait_ns=a.wait_ns,
            marker_ns=first_t + g.offset_ns.get(r, 0) if r in g.ranks else -1,
        )
        for r, a in acc.items()
    }
    late_rank = g.ranks[last_col] if spread_ns > 0 else None
    activity = ""
    if late_rank is not None and spread_ns >= STRAGGLER_MIN_LATE_NS:
        activity = _late_activity(data.trace, report, g, i, late_rank)
    return StepComparison(
        slot,
        figures,
        instances=instances,
        late_rank=late_rank,
        first_rank=g.ranks[first_col],
        spread_ns=spread_ns,
        worst_op=g.op[i],
        worst_at=best_pos[0],
        worst_of=best_pos[1],
        activity=activity,
    )


def op_label(op: str) -> str:
    """A collective op as words (``all-reduce``)."""
    return OP_LABEL.get(op, op)


def _plural(ops: Sequence[str], n: int) -> str:
    what = op_label(ops[0]) if len(ops) == 1 else "collective"
    return f"{n} {what}{'s' if n != 1 else ''}"


def activity_text(activity: str) -> str:
    """What a host was in, in words: a bare step range means no operator was running (untraced host work)."""
    if not activity:
        return ""
    text = clean(activity)
    if "›" not in activity and is_step_name(activity.replace("<n>", "0")):
        return f"{text} with no operator running (untraced host work: Python, a sleep, data loading)"
    return text


def start_lag(slot: StepSlot, rank: int) -> tuple[int, int]:
    """The rank that started the step first, and how much later ``rank`` started it (ns, 0 for the first)."""
    first = min(slot.spans, key=lambda r: (slot.spans[r][0], r))
    sp = slot.spans.get(rank)
    return first, (sp[0] - slot.spans[first][0]) if sp is not None else 0


def header_text(cmp: StepComparison, rank: int, step_ns: int | None) -> str:
    """The header line of a rank: its step's length and its place at the step's collectives."""
    parts = [f"rank {rank}"]
    lag_text = ""
    if step_ns is not None and not cmp.slot.window:
        parts.append(f"{clean(cmp.slot.label)} {format_ns(step_ns)}")
        first, lag = start_lag(cmp.slot, rank)
        if lag >= STRAGGLER_MIN_LATE_NS:
            lag_text = f"starts {format_ns(lag)} after rank {first}"
    f = cmp.figures.get(rank)
    if f is None or not f.collectives:
        parts += [lag_text, "no collectives here" if cmp.slot.spans.get(rank) else ""]
    elif cmp.has_late_rank and rank == cmp.late_rank:
        parts.append(
            f"LATE {format_ns(f.late_ns)} at {op_label(f.late_op)} {f.late_at}, last at {f.times_last} of "
            f"{f.collectives}"
        )
        parts.append(lag_text)
        if cmp.activity:
            parts.append(f"host in {clean(cmp.activity)}")
    else:
        parts.append(f"waited {format_ns(f.wait_ns)} in {_plural(f.ops, f.collectives)}")
        if f.late_ns >= STRAGGLER_MIN_LATE_NS:
            parts.append(f"late {format_ns(f.late_ns)} at {op_label(f.late_op)} {f.late_at}")
        parts.append(lag_text)
    return " · ".join(p for p in parts if p)


def step_sentence(cmp: StepComparison) -> str:
    """The step in one sentence: who is late at its collectives, by how much, what it was doing, who waits."""
    what = "In this window" if cmp.slot.window else f"In {clean(cmp.slot.label)}"
    if not cmp.instances:
        return (
            f"{what}, no collective kernels were matched across ranks: compare the GPU busy strips and the main "
            "threads."
        )
    op = op_label(cmp.worst_op)
    if not cmp.has_late_rank or cmp.late_rank is None:
        return (
            f"{what}, every rank reaches the {plural(cmp.instances, 'matched collective')} within "
            f"{format_ns(cmp.spread_ns)} of the first: no rank is late here."
        )
    waiting = sorted(
        (f for r, f in cmp.figures.items() if r != cmp.late_rank and f.wait_ns), key=lambda f: (-f.wait_ns, f.rank)
    )
    who = ", ".join(f"rank {f.rank} waits {format_ns(f.wait_ns)}" for f in waiting[:3])
    text = (
        f"{what}, rank {cmp.late_rank} arrives {format_ns(cmp.spread_ns)} after rank {cmp.first_rank} at {op} "
        f"{cmp.worst_at} of {cmp.worst_of}"
    )
    if cmp.activity:
        doing = activity_text(cmp.activity)
        text += f"; while rank {cmp.first_rank} waited for it, rank {cmp.late_rank}'s host was in {doing}"
    text += "."
    first, lag = start_lag(cmp.slot, cmp.late_rank)
    if lag >= STRAGGLER_MIN_LATE_NS and not cmp.slot.window:
        text += f" Rank {cmp.late_rank} began this step {format_ns(lag)} after rank {first}."
    if who:
        text += f" Inside this step's collectives {who}."
    return text


def marker_col(w: Window, marker_ns: int, offset: int) -> int:
    """The column of a marker time on a rank whose time 0 is ``offset`` (``-1`` when off screen or unset)."""
    if marker_ns < 0:
        return -1
    col = w.col_of(marker_ns - offset)
    return col if 0 <= col < w.width else -1


def busy_pct(busy_ns: int, w: Window) -> str:
    """A busy time as a share of the window, for a gutter label."""
    return f"{100.0 * busy_ns / max(w.span, 1):.0f}%"


def title_text(slot: StepSlot, index: int, count: int, align: Align, width: int) -> str:
    """The title line: which step, how it is aligned, the keys to move on (a time window has no alignment: it
    is the same on every rank)."""
    if slot.window:
        where = f"window {slot.label} (no step ranges in this trace)"
        long = f" Ranks side by side · {where}"
        keys = " · [ ] move the window · Esc back"
        short = f" Ranks · {where}"
    else:
        where = f"{clean(slot.label)} ({index + 1} of {count})"
        long = f" Ranks side by side · {where} · time 0 = {align.value}"
        keys = " · [ ] step · t align · Esc back"
        short = f" Ranks · {where} · 0 = {'step start' if align == Align.STEP else 'common clock'}"
    for text in (long + keys, long):
        if len(text) <= width:
            return text
    return fit_label(short, width, min_chars=1)
