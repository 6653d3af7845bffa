"""The backward pass's threads: which CPU thread's ranges own the GPU work PyTorch's autograd engine launches.

``loss.backward()`` runs on the main thread inside, say, a ``backward`` range, but on a GPU the autograd engine
executes the backward operators (and launches their kernels) from a thread of its own. Ranges see only launches
from their own thread (nsys semantics), so that ``backward`` range would show almost no GPU time. This module
maps each autograd thread to the forward thread that owns its work, in the order of the evidence:

1. Kineto's ``fwdbwd`` flows (what Kineto builds from each backward operator's ``Fwd thread id`` and
   ``Sequence number``: an arrow from the forward operator to its backward operator): an autograd thread belongs
   to the thread its backward operators' flows come from (the most arrows, when several).
2. Without flows (``Fwd thread id`` is PyTorch's own thread number, which no OS thread id in the file gives), a
   thread running ``autograd::engine::evaluate_function: …`` operators outside any range of its own belongs to the
   thread of the same process whose annotation ranges hold most of those operators' start times.

A launch on an autograd thread then also counts for the ranges of its forward thread that hold the launch's
start (the ``backward`` range, and ``step_<n>`` around it); see :func:`gputop_trace.analysis.ranges.range_summary`.
"""

from __future__ import annotations

import weakref
from collections import Counter
from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.model.arrays import distinct, isin
from gputop_trace.model.kinds import FlowKind, Kind, LaneKind
from gputop_trace.model.trace import Trace

#: The operator the autograd engine runs around each backward node.
AUTOGRAD_OP_PREFIX = "autograd::engine::evaluate_function:"
#: How an autograd thread was tied to its forward thread (the words the ranges output and the app show).
VIA_FLOWS = "Kineto fwdbwd flows"
VIA_NAMES = "autograd::engine operators inside its ranges"


@dataclass(frozen=True)
class AutogradThread:
    """An autograd thread (``lane``), the forward thread that owns its GPU work (``owner``), and how that was
    found (:data:`VIA_FLOWS` or :data:`VIA_NAMES`) with the number of operators that said so (``evidence``)."""

    lane: int
    owner: int
    via: str
    evidence: int


def autograd_threads(trace: Trace) -> dict[int, AutogradThread]:
    """The autograd threads of a trace, keyed by lane (empty when backward ran on its forward thread or the
    trace has no PyTorch backward). Computed once per trace."""
    found = _CACHE.get(trace)
    if found is None:
        found = _CACHE[trace] = _find(trace)
    return found


#: per trace (held weakly): its autograd threads
_CACHE: weakref.WeakKeyDictionary[Trace, dict[int, AutogradThread]] = weakref.WeakKeyDictionary()


def _find(trace: Trace) -> dict[int, AutogradThread]:
    out: dict[int, AutogradThread] = {}
    sel = trace.flows.kind == FlowKind.FWDBWD
    if sel.any():
        a, b = trace.flows.src[sel], trace.flows.dst[sel]
        # the forward operator is the arrow's earlier end (the arrow's stored direction follows the file's order of
        # its start and end events, which Kineto writes either way round)
        later = trace.start_ns[a] > trace.start_ns[b]
        fwd, bwd = np.where(later, b, a), np.where(later, a, b)
        fwd_lane = trace.lane[fwd].astype(np.int64)
        bwd_lane = trace.lane[bwd].astype(np.int64)
        cross = fwd_lane != bwd_lane
        votes = Counter(zip(bwd_lane[cross].tolist(), fwd_lane[cross].tolist(), strict=True))
        for (lane, owner), n in sorted(votes.items(), key=lambda kv: (-kv[1], kv[0])):
            if lane not in out and trace.lanes[owner].kind == LaneKind.CPU_THREAD:
                out[lane] = AutogradThread(lane, owner, VIA_FLOWS, n)
    out.update(_by_operator_names(trace, set(out)))
    return out


def _by_operator_names(trace: Trace, known: set[int]) -> dict[int, AutogradThread]:
    """Rule 2 of the module text, for threads the flows did not tie."""
    ids = [i for i, n in enumerate(trace.names) if n.startswith(AUTOGRAD_OP_PREFIX)]
    if not ids:
        return {}
    ops = trace.of_kind(Kind.CPU_OP)
    ops = ops[isin(trace.name[ops], np.array(ids, dtype=np.int32))]
    out: dict[int, AutogradThread] = {}
    for lane in distinct(trace.lane[ops]).tolist():
        if lane in known:
            continue
        mine = ops[trace.lane[ops] == lane]
        t = trace.start_ns[mine]
        if (innermost_enclosing(trace, np.full(len(t), lane), t, (Kind.RANGE,)) >= 0).any():
            continue  # ranges of its own: backward ran where its ranges are
        me = trace.lanes[lane]
        best, best_n = -1, 0
        for other, ln in enumerate(trace.lanes):
            if other == lane or ln.kind != LaneKind.CPU_THREAD or ln.rank != me.rank or ln.pid != me.pid:
                continue
            n = int((innermost_enclosing(trace, np.full(len(t), other), t, (Kind.RANGE,)) >= 0).sum())
            if n > best_n:
                best, best_n = other, n
        if best >= 0:
            out[lane] = AutogradThread(lane, best, VIA_NAMES, best_n)
    return out


def autograd_note(trace: Trace, threads: dict[int, AutogradThread]) -> list[str]:
    """One sentence per autograd thread saying whose ranges its launches count for and why: ``thread 496
    (python) runs the backward pass of thread 456 (python): the GPU work it launches counts in that thread's
    ranges (264 Kineto fwdbwd flows tie them)``."""
    out = []
    for th in sorted(threads.values(), key=lambda t: t.lane):
        noun = trace.device_words(trace.lanes[th.lane].rank).noun
        why = (
            f"{th.evidence:,} Kineto fwdbwd flows tie them"
            if th.via == VIA_FLOWS
            else f"{th.evidence:,} of its autograd::engine operators ran inside that thread's ranges"
        )
        out.append(
            f"{trace.lanes[th.lane].name} runs the backward pass of {trace.lanes[th.owner].name}: the "
            f"{noun} work it launches counts in that thread's ranges ({why})"
        )
    return out
