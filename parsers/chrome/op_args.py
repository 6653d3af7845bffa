"""Operator args and allocator records of a Kineto trace: what ``record_shapes`` writes on each operator
(``Input Dims``, ``Input type``, ``Sequence number``, ``Fwd thread id``) and what ``profile_memory`` writes on each
``[memory]`` instant (``Bytes``, ``Total Allocated``, ``Total Reserved``, ``Device Type``, ``Device Id``).

Gathered while streaming (:func:`gather_op_args`, by provisional event index) and handed to the builder after it
(:func:`add_op_tables`) as the model's :class:`~gputop_trace.model.tables.OpArgTable` and
:class:`~gputop_trace.model.tables.MemoryTable`."""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.parsers.chrome.values import local_to_global

_A_DIMS = attrgetter("input_dims")
_A_SEQ = attrgetter("sequence_number")
_A_TYPE = attrgetter("input_type")
_A_FWD = attrgetter("fwd_thread_id")
_A_ALLOC = attrgetter("total_allocated")


class OpArgRows(msgspec.Struct):
    """Rows gathered while streaming (``event``/``mem_event``: provisional indices; sizes in bytes). Operator rows
    are kept a chunk at a time as arrays; their shape and type texts as dense ids into ``shape_table`` /
    ``type_table`` (in the order the texts first appear, -1: none), interned after streaming so names keep file
    order."""

    event: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    shapes: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    types: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    seq: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    fwd_tid: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    shape_table: dict[str | None, int] = msgspec.field(default_factory=dict)
    type_table: dict[str | None, int] = msgspec.field(default_factory=dict)
    mem_event: list[int] = msgspec.field(default_factory=list)
    mem_bytes: list[int] = msgspec.field(default_factory=list)
    mem_allocated: list[int] = msgspec.field(default_factory=list)
    mem_reserved: list[int] = msgspec.field(default_factory=list)
    mem_device: list[int] = msgspec.field(default_factory=list)
    mem_device_type: list[int] = msgspec.field(default_factory=list)

    def add_row(self, event: int, shapes: str | None, types: str | None, seq: int, fwd_tid: int) -> None:
        """One operator row (the texts as :func:`shapes_text` and :func:`types_text` give them)."""
        self.event.append(np.array([event], dtype=np.int64))
        self.shapes.append(np.array([self.shape_table.setdefault(shapes, len(self.shape_table))], dtype=np.int64))
        self.types.append(np.array([self.type_table.setdefault(types, len(self.type_table))], dtype=np.int64))
        self.seq.append(np.array([seq], dtype=np.int64))
        self.fwd_tid.append(np.array([fwd_tid], dtype=np.int64))


class OpCols(msgspec.Struct):
    """The operator args of a run of complete events: ``seq``/``fwd`` int64 (-1: none), ``shape``/``type`` ids
    into ``shape_keys``/``type_keys`` (-1: the event has no ``Input Dims`` / ``Input type``; a key is None where
    the value is there but not a list :func:`shapes_text` / :func:`types_text` can print)."""

    seq: np.ndarray[Any, Any]
    fwd: np.ndarray[Any, Any]
    shape: np.ndarray[Any, Any]
    shape_keys: list[str | None]
    type: np.ndarray[Any, Any]
    type_keys: list[str | None]

    def override(self, at: np.ndarray[Any, Any], other: OpCols) -> None:
        """Take ``other``'s rows at the places ``at`` (the compiled scanner's columns, with the events whose args
        the Python side decoded read from their ``Args``)."""
        if len(at) == 0:
            return
        self.seq[at], self.fwd[at] = other.seq, other.fwd
        ns, nt = len(self.shape_keys), len(self.type_keys)
        self.shape[at] = np.where(other.shape >= 0, other.shape + ns, -1)
        self.type[at] = np.where(other.type >= 0, other.type + nt, -1)
        self.shape_keys = self.shape_keys + other.shape_keys
        self.type_keys = self.type_keys + other.type_keys


def _local_ids(values: list[Any], text: Any) -> tuple[np.ndarray[Any, Any], list[str | None]]:
    """Values (None: absent) → local ids of their texts, and the texts."""
    ids: dict[str | None, int] = {}
    local = [-1 if v is None else ids.setdefault(text(v), len(ids)) for v in values]
    return np.array(local, dtype=np.int64), list(ids)


def op_cols(argl: list[Any]) -> OpCols:
    """The operator args of decoded :class:`~gputop_trace.parsers.chrome.structs.Args` (one per event)."""
    n = len(argl)
    dims = list(map(_A_DIMS, argl))
    types = list(map(_A_TYPE, argl))
    shape_keys: list[str | None] = []
    type_keys: list[str | None] = []
    if dims.count(None) == n:
        shape = np.full(n, -1, dtype=np.int64)
    else:
        shape, shape_keys = _local_ids(dims, shapes_text)
    if types.count(None) == n:
        type_ = np.full(n, -1, dtype=np.int64)
    else:
        type_, type_keys = _local_ids(types, types_text)
    return OpCols(
        seq=np.fromiter(map(_A_SEQ, argl), np.int64, n),
        fwd=np.fromiter(map(_A_FWD, argl), np.int64, n),
        shape=shape,
        shape_keys=shape_keys,
        type=type_,
        type_keys=type_keys,
    )


def shapes_text(dims: Any) -> str | None:
    """``Input Dims`` as PyTorch prints an op's ``input_shapes`` (``[[512, 256], [], [[2], [3]]]``); None when the
    value is not a list. (A list holding anything but ints reads as no shapes where it is used:
    :func:`gputop_trace.analysis.operators.table.shape_key`; it is not checked here, on the hot path.)"""
    return str(dims) if isinstance(dims, list) else None


def types_text(types: Any) -> str | None:
    """``Input type`` as one string (``float, float, Scalar``); None when it is not a list of strings."""
    if not isinstance(types, list):
        return None
    try:
        return ", ".join(types)
    except TypeError:
        return None


def _dense(local: np.ndarray[Any, Any], keys: list[str | None], table: dict[str | None, int]) -> np.ndarray[Any, Any]:
    out = np.full(len(local), -1, dtype=np.int64)
    has = local >= 0
    if has.any():
        out[has] = local_to_global(local[has], keys, table)
    return out


def gather_op_args(rows: OpArgRows, cols: OpCols, ev_x: np.ndarray[Any, Any], instants: list[Any]) -> None:
    """Rows from one run of complete events (``ev_x`` their provisional indices; an operator row for each event
    with ``Input Dims`` or a sequence number), and ``instants``, its instant events as ``(provisional index,
    args)``."""
    keep = np.flatnonzero((cols.shape >= 0) | (cols.seq != -1))
    if len(keep):  # whole columns at a time: this runs on every operator of a record_shapes trace
        rows.event.append(np.asarray(ev_x, dtype=np.int64)[keep])
        rows.shapes.append(_dense(cols.shape[keep], cols.shape_keys, rows.shape_table))
        rows.types.append(_dense(cols.type[keep], cols.type_keys, rows.type_table))
        rows.seq.append(cols.seq[keep])
        rows.fwd_tid.append(cols.fwd[keep])
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


def _interned(rows: list[np.ndarray[Any, Any]], table: dict[str | None, int], intern: Any) -> np.ndarray[Any, Any]:
    """Dense text ids → the names table's ids (texts interned in the order they first appeared; -1 stays)."""
    ids = np.array([intern(t) if t is not None else -1 for t in table] + [-1], dtype=np.int64)
    out: np.ndarray[Any, Any] = ids[np.concatenate(rows)]  # -1 reads the last entry, -1
    return out


def add_op_tables(rows: OpArgRows, builder: TraceBuilder) -> None:
    """Hand the gathered rows to the builder (nothing when the trace has none)."""
    if rows.event:
        intern = builder.names.intern
        shapes = _interned(rows.shapes, rows.shape_table, intern)  # every shape first, then every type
        types = _interned(rows.types, rows.type_table, intern)
        builder.add_op_args(
            event=np.concatenate(rows.event),
            shapes=shapes,
            types=types,
            seq=np.concatenate(rows.seq),
            fwd_tid=np.concatenate(rows.fwd_tid),
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
