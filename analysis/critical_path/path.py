"""Critical path of each step: which chain of work sets the step time, what it is made of, and what the step would
take if one item on it were 2x faster or gone. All times are int64 ns, model time (trace-relative).

**The graph** (one per step of a rank, built from the events that overlap the step window ``[S, E]``, clipped
to it): on every CPU thread of the rank (operators, annotation ranges other than the step ranges themselves, runtime
calls, host synchronisation rows) and every GPU stream (kernels, memcpys, memsets), each event's start and end
are nodes, in time order per lane. Consecutive nodes of a lane are joined by a *lane edge*; the time between them
belongs to the innermost event open there (its self time), and that is the edge's intrinsic weight, except that
nothing open (an idle gap) and a synchronising call (``cudaStreamSynchronize``, ``cudaDeviceSynchronize``,
``cudaEventSynchronize``, a non-async ``cudaMemcpy``, a copy call that returned only after its copy ended, such
as ``cudaMemcpyAsync`` from pageable memory, ``Kind.SYNC`` rows) weigh 0: that time is waiting, not work.
Cross-lane edges, all of weight 0 unless said:

- **launch**: a launch call's start → the kernel/copy's start (Kineto correlation ids / ``ac2g`` flows, nsys
  ``correlationId``);
- **sync**: the GPU operation of the rank that ended last inside a synchronising call → the call's end;
- **event wait** (inferred: Kineto and nsys record no event ids on the calls): a ``cudaStreamWaitEvent`` on a thread
  makes the next GPU operation launched from that thread wait for the last operation launched on another stream
  before the latest ``cudaEventRecord`` of that thread (before the wait call when it recorded none); the edge is
  kept only if that operation ended before the waiting one started. On a rank that issued stream waits, a GPU
  operation that started after both its launch and its stream's previous operation waited for the operation of
  another stream of its device that ended last before it started (the wait was issued from another thread);
- **join** (inferred): time an annotation range spends with nothing of its thread inside it weighs 0; the node
  that ends such a span depends on the latest end of an operation on another thread of the rank inside it (the
  main thread's ``backward`` range returns when the autograd thread's last operation ends); when no other thread
  worked then, the span stays on the path as the range's own host time;
- **wake** (inferred: threads record no hand-offs): a CPU thread resuming after an idle gap depends on the start
  of the innermost operation open then on another thread of the rank, or when none is open on the latest end of
  one on another thread before it resumed;
- **collective**: with every rank of the job loaded, a collective kernel's end depends on the start of the matched
  kernel (:func:`~gputop_trace.analysis.ranks.stragglers.match_collectives`) on every other rank, with weight the
  instance's shortest duration over the ranks (the transfer itself); the kernel's own lane edge weighs that too,
  the rest of its time is waiting for peers.

**Timing**: ``ready(n) = max over preds (t(pred) + w)``; the residual ``r(n) = t(n) - ready(n) >= 0`` is delay
the graph does not explain. On the path it is *launch* latency when the binding predecessor is a launch edge,
*sync_wait* when it is a sync edge or the node ends a synchronising call, *collective* inside a collective kernel,
and *idle* otherwise. Every edge goes forward in recorded time, so recorded time order is topological; replaying
``t'(n) = max over preds (t'(pred) + w') + r(n)`` with the recorded weights gives back every recorded time exactly
(tested on the corpus).

**The path**: from the step's sink (the latest end of any event of the rank's lanes in the window) back along each
node's binding predecessor (ties prefer the lane edge when it carries work, then launch/sync/collective, then
event-wait and wake edges, then an idle lane edge) to the
step start ``S``. Its segments are the edges' weights and the residuals walked, so they sum exactly to its length
``sink - S`` (``<= E - S``; idle on the path included, so it is never shorter than any lane's busy time in the
step). A step with no recorded end after its last activity has a path shorter than the step by that tail.

**What-if**: the step's path length if every instance of an item (a kernel, an operator, a runtime call, a wait
kind) in the step ran 2x faster (its weights and residuals halved, floor) or took no time, by replaying the whole
graph with the changed weights; the residuals of other nodes stay as recorded (a kernel that started late for a
reason the trace does not show still starts that much after what it waits for).

Traces without step ranges have one pseudo-step per rank: the rank's whole recording, named ``""``.
"""

from __future__ import annotations

import weakref

import numpy as np

from gputop_trace.analysis.critical_path.context import noted_step_windows, path_context
from gputop_trace.analysis.critical_path.graph import build_step_graph
from gputop_trace.analysis.critical_path.model import CATEGORIES, WHAT_IF_TOP, PathSegment, StepPath, WhatIf
from gputop_trace.analysis.critical_path.walk import replay_graph, sink_time, walk_path, what_ifs
from gputop_trace.model.trace import Trace

__all__ = [
    "CATEGORIES",
    "WHAT_IF_TOP",
    "PathSegment",
    "StepPath",
    "WhatIf",
    "critical_paths",
    "replay_matches",
    "step_windows",
]


def critical_paths(
    trace: Trace,
    *,
    step: int | None = None,
    rank: int | None = None,
    what_if: bool = True,
    segments: bool = True,
) -> list[StepPath]:
    """The critical path of every step (or of step ``step``, 0-based per rank) of every rank (or of ``rank``);
    what-ifs for the top :data:`WHAT_IF_TOP` items of each path unless ``what_if`` is False; ``segments=False``
    leaves ``segments`` empty (for callers that need only the totals, twice as fast). See the module. Results are
    kept with the trace: asking again costs nothing."""
    key = (step, rank, what_if, segments)
    cached = _RESULTS.setdefault(trace, {})
    if key not in cached:
        cached[key] = tuple(_critical_paths(trace, step, rank, what_if, segments))
    return list(cached[key])


#: critical_paths' results per trace and arguments
_RESULTS: weakref.WeakKeyDictionary[Trace, dict[tuple[int | None, int | None, bool, bool], tuple[StepPath, ...]]] = (
    weakref.WeakKeyDictionary()
)


def _critical_paths(trace: Trace, step: int | None, rank: int | None, what_if: bool, segments: bool) -> list[StepPath]:
    ctx = path_context(trace)
    out: list[StepPath] = []
    for rk, i, name, s, e, note in noted_step_windows(trace, ctx):
        if (rank is not None and rk != rank) or (step is not None and i != step):
            continue
        notes = tuple(x for x in (note, ctx.coll_note) if x)
        g = build_step_graph(ctx, rk, s, e)
        if g is None:
            out.append(StepPath(rk, i, name, s, e - s, 0, (), {c: 0 for c in CATEGORIES}, (), (), notes, {}))
            continue
        segs, breakdown, by_item, first = walk_path(trace, g, segments)
        length = sink_time(g, g.t) - s
        wi: tuple[WhatIf, ...] = ()
        if what_if:
            top = [it for it in by_item if it[0] != "idle"][:WHAT_IF_TOP]
            wi = what_ifs(trace, g, length, list(top))
        out.append(StepPath(rk, i, name, s, e - s, length, tuple(segs), breakdown, by_item, wi, notes, g.edges, first))
        del g  # before the next step's graph is built
    return out


def step_windows(trace: Trace) -> list[tuple[int, int, str, int, int]]:
    """(rank, step index, step name, start ns, end ns) of every step :func:`critical_paths` works on, in its order,
    without building any graph (a rank without step ranges is one pseudo-step named "")."""
    return [(rk, i, name, s, e) for rk, i, name, s, e, _note in noted_step_windows(trace, path_context(trace))]


def replay_matches(trace: Trace) -> bool:
    """Whether replaying every step's graph with its recorded weights gives back every recorded time (a check)."""
    ctx = path_context(trace)
    for rk, _i, _name, s, e, _note in noted_step_windows(trace, ctx):
        g = build_step_graph(ctx, rk, s, e)
        if g is not None and not np.array_equal(replay_graph(g, g.wc, g.w1, g.r), g.t):
            return False
    return True
