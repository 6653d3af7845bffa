"""The operator tree PyTorch's ``key_averages()`` is computed on, rebuilt from a Kineto trace.

The rules, read from ``torch/autograd/profiler.py`` (``_parse_kineto_results``) and ``profiler_util.py``
(``FunctionEvent``, ``EventList._populate_cpu_children``) and checked against ``key_averages()`` of recorded
traces (tests/unit/test_ops_reference.py: PyTorch 2.13 on CPU, 2.11 on an H200):

- **keys**: every host event PyTorch recorded (operators, ``record_function`` / user annotations, CUDA runtime and
  driver calls, profiler overhead such as CUPTI's ``Activity Buffer Request``, and the ``with_stack`` Python
  frames, which PyTorch 2.13 makes function events and 2.11 does not: load with ``include_python=False`` for
  2.11's figures) and every device event (kernels, copies, memsets, ``gpu_user_annotation`` bands), except the
  bookkeeping names ``_filter_name`` drops (``[memory]``, ``aten::is_leaf`` …). ``ProfilerStep#N`` is keyed as
  ``ProfilerStep*``.
- **parents**: per thread, events sorted by (start, longest first); an event's parent is the innermost earlier
  event that contains it entirely (an event starting at the parent's end is not inside it). Profiler overhead,
  written outside any thread, nests on the process's main thread. Device events have no parent.
- **device time**: a frontend event (operator, annotation, Python frame) owns the kernels, copies and memsets
  whose ``External id`` is its own; profiler overhead owns those of the innermost enclosing event with an id;
  runtime calls and ``gpu_user_annotation`` bands own nothing. ``device total`` = own device time plus the
  children's device totals, ``self device`` = own. A device event's device total and self time are its duration.
- **duplicates**: an event with its parent's name that is the parent's only child (an op calling its own
  overload) is dropped, its children and device work going to the parent (``EventList._remove_dup_nodes``).
- **self CPU** = duration minus the children's durations. Device events have no CPU time.
- **memory**: every ``[memory]`` record whose time lies in ``[start, end]`` of a host event (on any thread) counts
  for it, as CPU memory (host allocations) or device memory (CUDA/HIP/XPU); self = minus the children's. Records
  no host event covers become ``[memory]`` keys of their own.

Nsight Systems traces of a run under ``torch.autograd.profiler.emit_nvtx`` give the same table from the NVTX
operator ranges (``aten::mm, seq = 12, op_id = 34, sizes = [[512, 256], [256, 768]]``): the keys are the names
without the per-call suffix, the shapes those of ``sizes``, and a range owns the device work launched by the
runtime calls directly inside it (nsys has no External ids). Such a run records no memory.

Times are int64 ns (PyTorch reports µs; the trace writes µs with three decimals, so the ns are exact), memory in
bytes (negative for frees).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.model.arrays import I64, distinct, isin
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace

#: names ``torch.autograd.profiler_util._filter_name`` leaves out of the function events
FILTERED_NAMES = frozenset(
    {
        "[memory]",
        "[OutOfMemory]",
        "profiler::_record_function_enter",
        "profiler::_record_function_enter_new",
        "profiler::_record_function_exit",
        "aten::is_leaf",
        "aten::output_nr",
        "aten::_version",
    }
)
#: host kinds that are function events, and those among them that own device work (PyTorch's "frontend" events)
HOST_KINDS = (Kind.CPU_OP, Kind.RANGE, Kind.PYTHON, Kind.API)
FRONTEND_KINDS = (Kind.CPU_OP, Kind.RANGE, Kind.PYTHON)
DEVICE_KINDS = (Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET, Kind.GPU_RANGE)
#: PyTorch ``DeviceType`` numbers of host and of device memory (``_cpu_memory_usage`` / ``_device_memory_usage``)
HOST_MEMORY_TYPES = (0, 2, 5)  # CPU, MKLDNN, IDEEP
DEVICE_MEMORY_TYPES = (1, 6, 12, 20)  # CUDA, HIP, XPU, PrivateUse1


@dataclass(frozen=True)
class OpTree:
    """The function events of a trace (``event``: trace indices, host events first in start order, then device
    events) and their per-event figures: ``parent`` the position (in ``event``) of the enclosing host event
    (``-1`` none); times in ns, memory in bytes. ``orphan_memory`` are the ``MemoryTable`` rows no host event
    covers (PyTorch's top-level ``[memory]`` events)."""

    event: I64
    parent: I64
    is_device: np.ndarray
    cpu_total_ns: I64
    self_cpu_ns: I64
    device_total_ns: I64
    self_device_ns: I64
    cpu_mem: I64
    self_cpu_mem: I64
    device_mem: I64
    self_device_mem: I64
    orphan_memory: I64

    def __len__(self) -> int:
        return int(self.event.shape[0])


def key_events(trace: Trace, rank: int | None = None, *, python: bool = True) -> tuple[I64, I64]:
    """(host events, device events) that are function events (of ``rank`` only when given; Python frames only
    with ``python``): trace indices. Host events are on CPU thread lanes, or profiler overhead (CUPTI's
    ``Activity Buffer Request``) anywhere; device events on GPU lanes. Each in trace order."""
    lane_kind = trace.lane_kind
    kind = trace.kind
    on_cpu = lane_kind[trace.lane] == LaneKind.CPU_THREAD
    host_kinds = HOST_KINDS if python else tuple(k for k in HOST_KINDS if k != Kind.PYTHON)
    host = isin(kind, np.array(host_kinds, dtype=np.uint8)) & on_cpu
    if trace.meta.format != "nsys":  # Kineto's overhead events are PyTorch's; nsys' CUPTI overhead is not
        host |= kind == Kind.OVERHEAD
    device = isin(kind, np.array(DEVICE_KINDS, dtype=np.uint8)) & ~on_cpu
    keep = host | device
    if rank is not None:
        keep &= trace.lane_rank[trace.lane] == rank
    filtered = [trace.name_ids.get(n, -1) for n in FILTERED_NAMES]
    filtered = [i for i in filtered if i >= 0]
    if filtered:
        keep &= ~isin(trace.name, np.array(filtered, dtype=np.int32))
    return np.flatnonzero(keep & host).astype(np.int64), np.flatnonzero(keep & device).astype(np.int64)


def _nest_lanes(trace: Trace, host: I64) -> I64:
    """The lane each host event nests on: its own; profiler overhead outside any thread nests on its rank's main
    thread (the thread whose id is its process id, else the first CPU thread), where PyTorch files it."""
    lanes = trace.lane[host].astype(np.int64)
    stray = trace.lane_kind[lanes] != LaneKind.CPU_THREAD
    if stray.any():
        main: dict[int, int] = {}
        for i, ln in enumerate(trace.lanes):
            if ln.kind == LaneKind.CPU_THREAD and ln.tid == ln.pid:
                main.setdefault(ln.rank, i)
        for i, ln in enumerate(trace.lanes):
            if ln.kind == LaneKind.CPU_THREAD:
                main.setdefault(ln.rank, i)
        ranks = trace.lane_rank[lanes[stray]].tolist()
        lanes[stray] = [main.get(r, -1) for r in ranks]
    return lanes


def _parents(trace: Trace, host: I64, nest_lane: I64) -> I64:
    """Position (in ``host``, sorted by lane, start, longest first) of each host event's parent: the innermost
    enclosing event on its lane."""
    start = trace.start_ns[host].tolist()
    end = (trace.start_ns[host] + trace.dur_ns[host]).tolist()
    lane = nest_lane.tolist()
    parent = [-1] * len(host)
    stack: list[int] = []
    cur_lane = None
    for i in range(len(host)):
        if lane[i] != cur_lane:
            stack = []
            cur_lane = lane[i]
        s, e = start[i], end[i]
        while stack:
            p = stack[-1]
            if s >= end[p] or e > end[p]:
                stack.pop()
            else:
                parent[i] = p
                break
        stack.append(i)
    return np.array(parent, dtype=np.int64)


def _subtree_sums(values: I64, parent: I64) -> I64:
    """Each event's value plus its descendants' (children come after their parent in start order)."""
    total = values.tolist()
    par = parent.tolist()
    for i in range(len(par) - 1, -1, -1):  # children before parents, in reverse start order
        p = par[i]
        if p >= 0:
            total[p] += total[i]
    return np.array(total, dtype=np.int64)


def _child_sums(values: I64, parent: I64) -> I64:
    out = np.zeros_like(values)
    has = parent >= 0
    np.add.at(out, parent[has], values[has])
    return out


def _host_ids(trace: Trace, host: I64, parent: I64) -> I64:
    """The id PyTorch links device work to, per host event: a frontend event's External id; profiler overhead
    takes the id of the innermost enclosing event that has one (CUPTI files it under the operator active when the
    buffer was requested); ``-1`` for the rest (runtime calls link to their operator, they own nothing)."""
    ext = trace.ext[host]
    kind = trace.kind[host]
    ids = np.where(isin(kind, np.array(FRONTEND_KINDS, dtype=np.uint8)) & (ext > 0), ext, -1)
    for i in np.flatnonzero(kind == Kind.OVERHEAD).tolist():
        p = int(parent[i])
        while p >= 0 and ids[p] <= 0:
            p = int(parent[p])
        ids[i] = ids[p] if p >= 0 else -1
    return ids.astype(np.int64)


def _own_device_ns(trace: Trace, host: I64, host_id: I64, device: I64) -> I64:
    """Device time each host event owns: the device events whose External id is the event's id (see
    :func:`_host_ids`; per rank, as ids are per process)."""
    own = np.zeros(len(host), dtype=np.int64)
    if not len(device) or not len(host):
        return own
    rank = trace.lane_rank
    d_ext = trace.ext[device]
    # GPU annotation bands carry the External id of their annotation but are not its device work
    linked = (d_ext > 0) & (trace.kind[device] != Kind.GPU_RANGE)
    d_key = rank[trace.lane[device]][linked].astype(np.int64) * (1 << 40) + d_ext[linked]
    d_dur = trace.dur_ns[device][linked]
    if not len(d_key):
        return own
    order = np.argsort(d_key, kind="stable")
    d_key, d_dur = d_key[order], d_dur[order]
    uniq, first = np.unique(d_key, return_index=True)
    sums = np.add.reduceat(d_dur, first)
    front = host_id > 0
    h_key = rank[trace.lane[host]].astype(np.int64) * (1 << 40) + host_id
    at = np.minimum(np.searchsorted(uniq, h_key), len(uniq) - 1)
    hit = front & (uniq[at] == h_key)
    own[hit] = sums[at[hit]]
    return own


def _own_device_by_launch(trace: Trace, host: I64, parent: I64, device: I64) -> I64:
    """Device time each host event owns when the trace has no External ids (Nsight Systems with ``emit_nvtx``):
    the device work whose launch call's innermost enclosing range is the event."""
    own = np.zeros(len(host), dtype=np.int64)
    if not len(device) or not len(host):
        return own
    launch = trace.launch_of[device]
    order = np.argsort(host, kind="stable")
    at = np.minimum(np.searchsorted(host[order], launch), len(host) - 1)
    hit = (launch >= 0) & (host[order][at] == launch)
    pos = order[at[hit]]
    owner = parent[pos]
    keep = owner >= 0
    np.add.at(own, owner[keep], trace.dur_ns[device][hit][keep])
    return own


def _memory(trace: Trace, host: I64, rank: int | None) -> tuple[I64, I64, I64]:
    """(host bytes, device bytes) each host event's interval covers (records of its rank, any thread, both ends
    inclusive), and the memory rows no host event covers."""
    mem = trace.memory
    n = len(host)
    cpu = np.zeros(n, dtype=np.int64)
    dev = np.zeros(n, dtype=np.int64)
    if not len(mem):
        return cpu, dev, np.zeros(0, dtype=np.int64)
    m_rank = trace.lane_rank[trace.lane[mem.event]]
    m_ts = trace.start_ns[mem.event]
    h_rank = trace.lane_rank[trace.lane[host]]
    covered = np.zeros(len(mem), dtype=bool)
    for r in distinct(m_rank).tolist():
        rows = np.flatnonzero(m_rank == r)
        rows = rows[np.argsort(m_ts[rows], kind="stable")]
        ts = m_ts[rows]
        b = mem.bytes[rows]
        dt = mem.device_type[rows]
        cum_cpu = np.concatenate(([0], np.cumsum(np.where(isin(dt, HOST_MEMORY_TYPES), b, 0))))
        cum_dev = np.concatenate(([0], np.cumsum(np.where(isin(dt, DEVICE_MEMORY_TYPES), b, 0))))
        sel = np.flatnonzero(h_rank == r)
        s = trace.start_ns[host[sel]]
        lo = np.searchsorted(ts, s, side="left")
        hi = np.searchsorted(ts, s + trace.dur_ns[host[sel]], side="right")
        cpu[sel] = cum_cpu[hi] - cum_cpu[lo]
        dev[sel] = cum_dev[hi] - cum_dev[lo]
        mark = np.zeros(len(rows) + 1, dtype=np.int64)
        np.add.at(mark, lo, 1)
        np.add.at(mark, hi, -1)
        covered[rows] = np.cumsum(mark)[:-1] > 0
    if rank is not None:
        covered |= m_rank != rank
    return cpu, dev, np.flatnonzero(~covered).astype(np.int64)


def _remove_duplicates(trace: Trace, host: I64, parent: I64, own: I64) -> np.ndarray:
    """PyTorch's ``EventList._remove_dup_nodes``: an event with the same name as its parent, and its parent's only
    child (``aten::mean`` calling the ``aten::mean.dim`` overload), is dropped; its children become the parent's and
    its device work replaces the parent's own. Updates ``parent`` and ``own`` in place; returns the kept mask."""
    n = len(host)
    name = trace.name[host].tolist()
    par = parent.tolist()
    kids: list[list[int]] = [[] for _ in range(n)]
    for i, p in enumerate(par):
        if p >= 0:
            kids[p].append(i)
    alive = [True] * n
    changed = True
    while changed:
        changed = False
        for i in range(n):
            p = par[i]
            if alive[i] and p >= 0 and name[p] == name[i] and len(kids[p]) == 1:
                kids[p] = kids[i]
                own[p] = own[i]
                for c in kids[i]:
                    par[c] = p
                alive[i] = False
                changed = True
    parent[:] = par
    return np.array(alive, dtype=bool)


def build_op_tree(trace: Trace, rank: int | None = None, *, python: bool = True) -> OpTree:
    """The function events of ``trace`` (of ``rank`` only when given) with PyTorch's per-event figures (see the
    module docstring). ``python``: ``with_stack`` Python frames are function events (PyTorch 2.13 makes them
    keys of key_averages and parents of the operators they call; 2.11 leaves them out)."""
    host, device = key_events(trace, rank, python=python)
    nest = _nest_lanes(trace, host)
    order = np.lexsort((-trace.dur_ns[host], trace.start_ns[host], nest))
    host, nest = host[order], nest[order]
    parent = _parents(trace, host, nest)
    if trace.meta.format == "nsys":
        own_dev = _own_device_by_launch(trace, host, parent, device)
    else:
        own_dev = _own_device_ns(trace, host, _host_ids(trace, host, parent), device)
    keep = _remove_duplicates(trace, host, parent, own_dev)
    if not keep.all():
        new_pos = np.cumsum(keep) - 1
        host, own_dev = host[keep], own_dev[keep]
        parent = parent[keep]
        parent = np.where(parent >= 0, new_pos[np.maximum(parent, 0)], -1).astype(np.int64)
    dur = trace.dur_ns[host].astype(np.int64)
    dev_total = _subtree_sums(own_dev, parent)
    cpu_mem, dev_mem, orphans = _memory(trace, host, rank)
    nd = len(device)
    zeros = np.zeros(nd, dtype=np.int64)
    d_dur = trace.dur_ns[device].astype(np.int64)
    return OpTree(
        event=np.concatenate((host, device)),
        parent=np.concatenate((parent, np.full(nd, -1, dtype=np.int64))),
        is_device=np.concatenate((np.zeros(len(host), dtype=bool), np.ones(nd, dtype=bool))),
        cpu_total_ns=np.concatenate((dur, zeros)),
        self_cpu_ns=np.concatenate((dur - _child_sums(dur, parent), zeros)),
        device_total_ns=np.concatenate((dev_total, d_dur)),
        self_device_ns=np.concatenate((own_dev, d_dur)),
        cpu_mem=np.concatenate((cpu_mem, zeros)),
        self_cpu_mem=np.concatenate((cpu_mem - _child_sums(cpu_mem, parent), zeros)),
        device_mem=np.concatenate((dev_mem, zeros)),
        self_device_mem=np.concatenate((dev_mem - _child_sums(dev_mem, parent), zeros)),
        orphan_memory=orphans,
    )
