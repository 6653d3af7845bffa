"""The critical path's results (:class:`PathSegment`, :class:`WhatIf`, :class:`StepPath`) and the step graph they
are found on (:class:`StepGraph`), with the codes the graph uses for event roles, edge kinds and item labels. See
:mod:`gputop_trace.analysis.critical_path.path` for the model. All times int64 ns, model time (trace-relative)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from gputop_trace.model.arrays import I64

#: The categories a path segment can have.
CATEGORIES = ("cpu_op", "launch", "kernel", "copy", "sync_wait", "collective", "idle")
#: How many items of a path get a what-if.
WHAT_IF_TOP = 5


@dataclass(frozen=True)
class PathSegment:
    """One piece of the critical path, in time order. Times in ns, model time (trace-relative)."""

    start_ns: int
    dur_ns: int
    category: str  # one of CATEGORIES
    label: str  # op name, kernel name, "cudaLaunchKernel", "launch latency", "idle: GPU" ...
    event: int  # trace event index it comes from; -1 for idle / waits not tied to one event
    lane: int  # lane index in the trace's lanes table it is drawn on; -1 if none
    rank: int


@dataclass(frozen=True)
class WhatIf:
    """The step time if one item on the path were 2x faster or gone, by re-running the longest path on the
    modified graph (not a share of the path). All ns; savings are ``step_ns - if_2x_ns`` and
    ``step_ns - if_gone_ns`` (>= 0)."""

    item: str
    category: str
    on_path_ns: int
    step_ns: int
    if_2x_ns: int
    if_gone_ns: int


@dataclass(frozen=True)
class StepPath:
    """The critical path of one step of one rank (ns). ``segments`` are in time order and sum exactly to
    ``length_ns``, as do ``breakdown`` (category → ns) and ``by_item`` ((category, label, ns), largest first)."""

    rank: int
    step: int
    step_name: str
    start_ns: int
    dur_ns: int
    length_ns: int
    segments: tuple[PathSegment, ...]
    breakdown: dict[str, int]
    by_item: tuple[tuple[str, str, int], ...]
    what_if: tuple[WhatIf, ...]
    #: what the user must know about how the path was found (collectives not joined, pseudo-step ...)
    notes: tuple[str, ...] = ()
    #: edges of each kind in the step's graph: launch, sync, event_wait, collective
    edges: dict[str, int] = field(default_factory=dict)
    #: (category, label) -> (start ns, event index or -1, lane index) of the item's first piece on the path: where
    #: to point at an item without the segments (``segments=False``)
    first_piece: dict[tuple[str, str], tuple[int, int, int]] = field(default_factory=dict)


# ---- internal graph ----------------------------------------------------------------------------------------------
CATEGORY_CODE = {c: i for i, c in enumerate(CATEGORIES)}
# event roles
ROLE_NONE, ROLE_CPU, ROLE_LAUNCH, ROLE_SYNC, ROLE_KERNEL, ROLE_COPY, ROLE_COLL, ROLE_RANGE = range(8)
ROLE_CATEGORY = {
    ROLE_CPU: CATEGORY_CODE["cpu_op"],
    ROLE_RANGE: CATEGORY_CODE["cpu_op"],
    ROLE_LAUNCH: CATEGORY_CODE["launch"],
    ROLE_SYNC: CATEGORY_CODE["sync_wait"],
    ROLE_KERNEL: CATEGORY_CODE["kernel"],
    ROLE_COPY: CATEGORY_CODE["copy"],
    ROLE_COLL: CATEGORY_CODE["collective"],
}
# cross-edge kinds
CROSS_LAUNCH, CROSS_SYNC, CROSS_EVENT, CROSS_COLL = range(4)
EDGE_NAMES = ("launch", "sync", "event_wait", "collective", "wake", "join")
# labels that are not event names
SPECIAL_LABELS = ("idle: CPU", "idle: GPU", "launch latency")
#: a time (ns) far below any real one: the ready time through a missing edge
NEG_NS = np.iinfo(np.int64).min // 4


@dataclass
class StepGraph:
    """Nodes of one step's graph, lane blocks contiguous, each block in time order (ns). Node and event indices are
    int32 where they fit (the graph of a 420k-kernel step is 840k nodes)."""

    s: int
    t: I64
    lane: np.ndarray  # int32 where it fits
    ev: np.ndarray  # event per node, int32 where it fits
    first: np.ndarray
    wc: I64  # lane-edge weight (from the previous node of the lane, or from S for a lane's first node)
    wc_item: I64  # item key of that weight (-1 none)
    own: np.ndarray  # event owning the lane edge into the node (-1 none)
    x1: np.ndarray  # launch / sync / collective predecessor node (-1 none)
    w1: I64
    k1: np.ndarray  # its _X_ kind (int8)
    w1_item: I64
    x2: np.ndarray  # event-wait predecessor node (-1 none)
    r: I64
    bind: np.ndarray  # 0 lane edge, 1 x1, 2 x2 (int8)
    r_item: I64
    sink_nodes: I64  # the last node of each of the step rank's lanes
    edges: dict[str, int]


def item_key(cat: np.ndarray, label: np.ndarray) -> I64:
    """One int64 key per (category code, label id) pair: ``category * 2**40 + label`` (label -1 stays distinct)."""
    return np.asarray(cat, dtype=np.int64) * (1 << 40) + np.asarray(label, dtype=np.int64)
