"""Operator args and allocator records of a Kineto trace: what ``record_shapes`` writes on each operator
(``Input Dims``, ``Input type``, ``Sequence number``, ``Fwd thread id``) and what ``profile_memory`` writes on each
``[memory]`` instant (``Bytes``, ``Total Allocated``, ``Total Reserved``, ``Device Type``, ``Device Id``).

Gathered while streaming (:func:`gather_op_args`, by provisional event index) and handed to the builder after it
(:func:`add_op_tables`) as the model's :class:`~gputop_trace.model.tables.OpArgTable` and
:class:`~gputop_trace.model.tables.MemoryTable`."""

from __future__ import annotations

from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

import numpy as np

from gputop_trace.model.builder import TraceBuilder

_A_DIMS = attrgetter("input_dims")
_A_SEQ = attrgetter("sequence_number")
_A_TYPE = attrgetter("input_type")
_A_FWD = attrgetter("fwd_thread_id")
_A_ALLOC = attrgetter("total_allocated")


@dataclass
class OpArgRows:
    """Rows gathered while streaming (``event``/``mem_event``: provisional indices; sizes in bytes)."""

    event: list[int] = field(default_factory=list)
    shapes: list[str | None] = field(default_factory=list)  # interned after streaming: names keep file order
    types: list[str | None] = field(default_factory=list)
    seq: list[int] = field(default_factory=list)
    fwd_tid: list[int] = field(default_factory=list)
    mem_event: list[int] = field(default_factory=list)
    mem_bytes: list[int] = field(default_factory=list)
    mem_allocated: list[int] = field(default_factory=list)
    mem_reserved: list[int] = field(default_factory=list)
    mem_device: list[int] = field(default_factory=list)
    mem_device_type: list[int] = field(default_factory=list)


def shapes_text(dims: Any) -> str | None:
    """``Input Dims`` as PyTorch prints an op's ``input_shapes`` (``[[512, 256], [], [[2], [3]]]``); None when the
    value is not a list. (A list holding anything but ints reads as no shapes where it is used:
    :func:`gputop_trace.analysis.ops.shape_key`; it is not checked here, on the hot path.)"""
    return str(dims) if isinstance(dims, list) else None


def types_text(types: Any) -> str | None:
    """``Input type`` as one string (``float, float, Scalar``); None when it is not a list of strings."""
    if not isinstance(types, list):
        return None
    try:
        return ", ".join(types)
    except TypeError:
        return None


def gather_op_args(rows: OpArgRows, argl: list[Any], ev_x: np.ndarray[Any, Any], instants: list[Any]) -> None:
    """Rows from one chunk: ``argl`` the args of its complete events (``ev_x`` their provisional indices),
    ``instants`` its instant events as ``(provisional index, args)``."""
    n = len(argl)
    dims = list(map(_A_DIMS, argl))
    seqs = list(map(_A_SEQ, argl))
    no_dims, no_seq = dims.count(None), seqs.count(-1)
    if no_dims == n and no_seq == n:
        return
    # one pass per column (no Python loop body per operator: this runs on every operator of a record_shapes trace)
    if no_dims and no_seq:
        keep = [i for i, (d, q) in enumerate(zip(dims, seqs, strict=True)) if d is not None or q != -1]
        argl = [argl[i] for i in keep]
        dims = [dims[i] for i in keep]
        seqs = [seqs[i] for i in keep]
        ev_x = ev_x[keep]
    rows.event.extend(ev_x.tolist())
    rows.shapes.extend(map(shapes_text, dims))
    rows.types.extend(map(types_text, map(_A_TYPE, argl)))
    rows.seq.extend(seqs)
    rows.fwd_tid.extend(map(_A_FWD, argl))
    if instants:
        for ev, a in instants:
            if a is None or a.total_allocated is None:
                continue
            rows.mem_event.append(ev)
            rows.mem_bytes.append(a.alloc_bytes)
            rows.mem_allocated.append(a.total_allocated)
            rows.mem_reserved.append(a.total_reserved)
            rows.mem_device.append(a.device_id)
            rows.mem_device_type.append(a.device_type)


def add_op_tables(rows: OpArgRows, builder: TraceBuilder) -> None:
    """Hand the gathered rows to the builder (nothing when the trace has none)."""
    if rows.event:
        intern = builder.names.intern
        builder.add_op_args(
            event=rows.event,
            shapes=[intern(s) if s is not None else -1 for s in rows.shapes],
            types=[intern(t) if t is not None else -1 for t in rows.types],
            seq=rows.seq,
            fwd_tid=rows.fwd_tid,
        )
    if rows.mem_event:
        builder.add_memory(
            event=rows.mem_event,
            bytes=rows.mem_bytes,
            allocated=rows.mem_allocated,
            reserved=rows.mem_reserved,
            device=rows.mem_device,
            device_type=rows.mem_device_type,
        )
