"""The operator view: PyTorch's ``key_averages()`` from a trace (one row per key, the same figures), grouped by
name, by name and input shapes (``group_by_input_shape=True``) or by name and the Python stack around the call.

A key is (name, host or device, user annotation or not) as in ``EventList.key_averages``; the per-event figures
and their rules are in :mod:`gputop_trace.analysis.operators.tree`. Times are int64 ns, memory in bytes.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.operators.flops import Work, estimate
from gputop_trace.analysis.operators.tree import (
    DEVICE_KINDS,
    DEVICE_MEMORY_TYPES,
    HOST_MEMORY_TYPES,
    OpTree,
    build_op_tree,
)
from gputop_trace.analysis.ranges import split_range_name
from gputop_trace.model.arrays import I64, isin
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

GROUP_BY = ("name", "shape", "stack")
#: how many enclosing Python frames a ``stack`` key holds (``key_averages(group_by_stack_n=5)``, innermost first)
STACK_DEPTH = 5

#: what a row's events are, by kind
KIND_LABEL: dict[int, str] = {
    Kind.CPU_OP: "op",
    Kind.RANGE: "annotation",
    Kind.PYTHON: "python",
    Kind.API: "runtime",
    Kind.KERNEL: "kernel",
    Kind.MEMCPY: "memcpy",
    Kind.MEMSET: "memset",
    Kind.GPU_RANGE: "gpu_annotation",
}
#: row kinds ``ops`` shows unless asked for every key (``--all``): what a PyTorch user calls operators
OPERATOR_KINDS = frozenset({"op", "annotation"})


@dataclass(frozen=True)
class OpRow:
    """One key of ``key_averages()``. Times in ns, memory in bytes (negative: more freed than allocated).

    ``kind`` is what the events are (:data:`KIND_LABEL`, or ``memory`` for allocations outside every event),
    ``shapes`` the ``Input Dims`` text when grouped by shape (else None), ``stack`` the enclosing Python frames
    (innermost first) when grouped by stack. ``events`` are the instances (trace indices, in time order).
    ``flops`` / ``bytes_moved`` are the estimates from shapes summed over the calls
    (:mod:`gputop_trace.analysis.operators.flops`; None when no call had one), ``work_kind`` what the estimate is
    (``gemm``, ``attention``, ``conv``, ``elementwise``, ``memory``), ``precision`` the first input's.
    """

    name: str
    kind: str
    count: int
    cpu_total_ns: int
    self_cpu_ns: int
    device_total_ns: int
    self_device_ns: int
    cpu_mem: int
    self_cpu_mem: int
    device_mem: int
    self_device_mem: int
    shapes: str | None = None
    stack: tuple[str, ...] = ()
    flops: int | None = None
    bytes_moved: int | None = None
    work_kind: str = ""
    precision: str = ""
    events: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False, compare=False)

    @property
    def is_device(self) -> bool:
        """Whether the key is a device event (kernel, copy, memset, GPU annotation)."""
        return self.kind in ("kernel", "memcpy", "memset", "gpu_annotation")

    @property
    def cpu_mean_ns(self) -> float:
        return self.cpu_total_ns / self.count if self.count else 0.0

    @property
    def device_mean_ns(self) -> float:
        return self.device_total_ns / self.count if self.count else 0.0


def key_name(name: str) -> str:
    """The key PyTorch files an event under (``ProfilerStep#3`` → ``ProfilerStep*``)."""
    return "ProfilerStep*" if name.startswith("ProfilerStep#") else name


#: PyTorch writes ``, input_op_ids = [(op_id,output_nr), ...]`` after the sizes when record_shapes is on
_NVTX_SIZES = re.compile(r", sizes = (\[.*?\])(?=, input_op_ids = |$)")


def nvtx_key(name: str) -> tuple[str, str]:
    """(operator name, shape key) of an ``emit_nvtx`` range name (``aten::mm, seq = 3, op_id = 9, sizes = [[2,
    3], [3, 4]]``); the shape key is ``[]`` without ``sizes``."""
    m = _NVTX_SIZES.search(name)
    base = key_name(split_range_name(name, set())[1])
    return base, shape_key(m.group(1)) if m else "[]"


def shape_key(dims_text: str) -> str:
    """The ``input_shapes`` PyTorch keys an op under, from its ``Input Dims`` text: a list of tensors (``cat``'s
    first input) is ``[]`` there."""
    try:
        dims = json.loads(dims_text)
    except ValueError:
        return "[]"
    if not isinstance(dims, list):
        return "[]"
    return str([d if not any(isinstance(x, list) for x in d) else [] for d in dims if isinstance(d, list)])


def _shape_of(trace: Trace) -> Callable[[int], str]:
    """Event → its shape key (``[]`` when it has none, as PyTorch keys an event without shapes)."""
    oa = trace.op_args
    ev = oa.event
    names = trace.names
    keys: dict[int, str] = {}

    def shape(i: int) -> str:
        at = int(np.searchsorted(ev, i))
        if at < len(ev) and ev[at] == i and oa.shapes[at] >= 0:
            sid = int(oa.shapes[at])
            got = keys.get(sid)
            if got is None:
                got = keys[sid] = shape_key(names[sid])
            return got
        return "[]"

    return shape


def _stack_of(trace: Trace, tree: OpTree) -> Callable[[int], tuple[str, ...]]:
    """Position in the tree → the names of its enclosing Python frames, innermost first (at most STACK_DEPTH)."""
    parent = tree.parent.tolist()
    kinds = trace.kind[tree.event].tolist()
    events = tree.event.tolist()

    def stack(pos: int) -> tuple[str, ...]:
        out: list[str] = []
        p = parent[pos]
        while p >= 0 and len(out) < STACK_DEPTH:
            if kinds[p] == Kind.PYTHON:
                out.append(trace.event_name(events[p]))
            p = parent[p]
        return tuple(out)

    return stack


def op_table(trace: Trace, *, group_by: str = "name", tree: OpTree | None = None, python: bool = True) -> list[OpRow]:
    """The rows of ``key_averages()`` (``group_by="shape"``: of ``key_averages(group_by_input_shape=True)``;
    ``"stack"``: keyed also by the enclosing Python frames), most self CPU time first, then most device time.
    ``python``: Python frames are function events (see :func:`~gputop_trace.analysis.operators.tree.build_op_tree`)."""
    if group_by not in GROUP_BY:
        raise ValueError(f"group_by must be one of {', '.join(GROUP_BY)}, not {group_by!r}")
    tree = tree if tree is not None else build_op_tree(trace, python=python)
    kinds = trace.kind[tree.event].tolist()
    name_ids = trace.name[tree.event].tolist()
    names = trace.names
    nvtx = trace.meta.format == "nsys"
    cache = {i: nvtx_key(names[i]) for i in set(name_ids)} if nvtx else {}
    shape = _shape_of(trace) if group_by == "shape" and not nvtx else None
    stack = _stack_of(trace, tree) if group_by == "stack" else None
    groups: dict[tuple[object, ...], list[int]] = {}
    for pos in range(len(tree)):
        kind = kinds[pos]
        key: tuple[object, ...]
        if nvtx:  # emit_nvtx ranges: the operator and its sizes are in the name
            base, nvtx_shape = cache[name_ids[pos]]
            key = (base, kind in _DEVICE, False) + ((nvtx_shape,) if group_by == "shape" else ())
        else:
            key = (key_name(names[name_ids[pos]]), kind in _DEVICE, kind in _ANNOTATION)
            if shape is not None:
                key = (*key, shape(int(tree.event[pos])) if kind not in _DEVICE else "[]")
        if stack is not None:
            key = (*key, stack(pos))
        groups.setdefault(key, []).append(pos)
    work = leaf_precision(call_work(trace, tree.event), tree.parent)
    rows = [_row(trace, tree, key, positions, group_by, work) for key, positions in groups.items()]
    rows.extend(_memory_rows(trace, tree, group_by))
    rows.sort(key=lambda r: (-r.self_cpu_ns, -r.self_device_ns, r.name))
    return rows


_DEVICE = frozenset(DEVICE_KINDS)
_ANNOTATION = frozenset({Kind.RANGE, Kind.GPU_RANGE})


def call_work(trace: Trace, events: I64) -> list[Work | None]:
    """The estimated work of each event's call (None for events without ``record_shapes`` args)."""
    oa = trace.op_args
    at = np.minimum(np.searchsorted(oa.event, events), max(len(oa) - 1, 0))
    hit = (oa.event[at] == events) if len(oa) else np.zeros(len(events), dtype=bool)
    names = trace.names
    cache: dict[tuple[int, int, int], Work] = {}
    out: list[Work | None] = [None] * len(events)
    name_ids = trace.name[events].tolist()
    for i in np.flatnonzero(hit).tolist():
        sid, tid = int(oa.shapes[at[i]]), int(oa.types[at[i]])
        key = (name_ids[i], sid, tid)
        w = cache.get(key)
        if w is None:
            w = cache[key] = estimate(
                names[name_ids[i]], names[sid] if sid >= 0 else None, names[tid] if tid >= 0 else None
            )
        out[i] = w
    return out


def leaf_precision(work: list[Work | None], parent: I64) -> list[Work | None]:
    """``work`` with the precision of a matrix op taken from the matrix op it calls when there is one
    (``linear`` on FP32 inputs under autocast runs a BF16 ``addmm``: the GEMM's type is what runs)."""
    below: list[str] = [""] * len(work)
    par = parent.tolist()
    for i in range(len(work) - 1, -1, -1):  # children before their parents
        w = work[i]
        mine = below[i] or (w.precision if w is not None and w.kind in _MATRIX else "")
        if w is not None and w.kind in _MATRIX and below[i] and below[i] != w.precision:
            work[i] = dataclasses.replace(w, precision=below[i])
        p = par[i]
        if p >= 0 and mine and not below[p]:
            below[p] = mine
    return work


_MATRIX = frozenset({"gemm", "attention", "conv"})


def _sum_work(work: list[Work | None], positions: list[int]) -> tuple[int | None, int | None, str, str]:
    flops: int | None = None
    moved: int | None = None
    kind = precision = ""
    for pos in positions:
        w = work[pos]
        if w is None:
            continue
        kind = kind or w.kind
        precision = precision or w.precision
        if w.flops is not None:
            flops = (flops or 0) + w.flops
        if w.bytes is not None:
            moved = (moved or 0) + w.bytes
    return flops, moved, kind, precision


def _row(
    trace: Trace,
    tree: OpTree,
    key: tuple[object, ...],
    positions: list[int],
    group_by: str,
    work: list[Work | None],
) -> OpRow:
    p = np.array(positions, dtype=np.int64)
    events = tree.event[p]
    first_kind = int(trace.kind[events[0]])
    flops, moved, work_kind, precision = _sum_work(work, positions)
    return OpRow(
        name=str(key[0]),
        kind=KIND_LABEL.get(first_kind, "other"),
        count=len(positions),
        cpu_total_ns=int(tree.cpu_total_ns[p].sum()),
        self_cpu_ns=int(tree.self_cpu_ns[p].sum()),
        device_total_ns=int(tree.device_total_ns[p].sum()),
        self_device_ns=int(tree.self_device_ns[p].sum()),
        cpu_mem=int(tree.cpu_mem[p].sum()),
        self_cpu_mem=int(tree.self_cpu_mem[p].sum()),
        device_mem=int(tree.device_mem[p].sum()),
        self_device_mem=int(tree.self_device_mem[p].sum()),
        shapes=str(key[3]) if group_by == "shape" else None,
        stack=tuple(key[3]) if group_by == "stack" and isinstance(key[3], tuple) else (),
        flops=flops,
        bytes_moved=moved,
        work_kind=work_kind,
        precision=precision,
        events=np.sort(events),
    )


def _memory_rows(trace: Trace, tree: OpTree, group_by: str) -> list[OpRow]:
    """PyTorch's top-level ``[memory]`` key: the allocations and frees outside every host event."""
    rows = tree.orphan_memory
    if not len(rows):
        return []
    mem = trace.memory
    host = isin(mem.device_type[rows], HOST_MEMORY_TYPES)
    device = isin(mem.device_type[rows], DEVICE_MEMORY_TYPES)
    cpu = int(mem.bytes[rows][host].sum())
    dev = int(mem.bytes[rows][device].sum())
    return [
        OpRow(
            name="[memory]",
            kind="memory",
            count=len(rows),
            cpu_total_ns=0,
            self_cpu_ns=0,
            device_total_ns=0,
            self_device_ns=0,
            cpu_mem=cpu,
            self_cpu_mem=cpu,
            device_mem=dev,
            self_device_mem=dev,
            shapes="[]" if group_by == "shape" else None,
            events=np.sort(mem.event[rows]),
        )
    ]
