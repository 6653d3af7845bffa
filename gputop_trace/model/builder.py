"""Building a :class:`~gputop_trace.model.trace.Trace` column-wise: interned names, provisional event indices
re-keyed to the final (lane, start, -duration) order."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import numpy.typing as npt

from gputop_trace.model.arrays import I64
from gputop_trace.model.depths import assign_depths
from gputop_trace.model.kinds import FlowKind
from gputop_trace.model.order import event_order
from gputop_trace.model.tables import (
    EVENT_COLUMNS,
    CollectiveTable,
    CopyTable,
    CounterSeries,
    FlowTable,
    KernelTable,
    Lane,
    MemoryTable,
    OpArgTable,
    TraceMeta,
    empty_side_columns,
    read_only,
    side_table_dtypes,
)
from gputop_trace.model.trace import Trace

if TYPE_CHECKING:  # imported where a build takes workers (with logging: a few ms of every command's start)
    from concurrent.futures import ThreadPoolExecutor

_T = TypeVar("_T")

#: events from which :meth:`TraceBuilder.build` runs its independent steps on worker threads: on 29.5 M events (an
#: nsys export) they took the calling thread's CPU from 7-11 s to 2-3 s; on 2.2 M (the 1 GB Kineto benchmark input)
#: they measured no faster than one thread on two busy cores (0.63-0.74 s against 0.67-0.77 s), so they start at 4 M
#: where the process may use fewer than :data:`MANY_CORES` cores
PARALLEL_BUILD_EVENTS = 1 << 22
#: ... and from 1 M where it may use :data:`MANY_CORES` or more: the build comes after the scan, so its workers
#: have cores of their own there, and the calling thread's share of a load is what limits its gain from cores (the
#: 1 GB Kineto input, 2.2 M events, on two quiet cores: the calling thread's CPU in the build 0.20 -> 0.10 s, wall
#: 0.20 -> 0.16 s)
PARALLEL_BUILD_EVENTS_MANY_CORES = 1 << 20
MANY_CORES = 4
#: worker threads of one build at most, besides the calling thread (it has about six independent steps)
MAX_BUILD_WORKERS = 4


def _usable_cores() -> int:
    """How many cores this process may run on (its CPU affinity, as ``parsers/cores.py`` counts them)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


class StringTable:
    """Interns strings to dense int ids."""

    def __init__(self, initial: Iterable[str] = ()) -> None:
        self.ids: dict[str, int] = {}
        self.strings: list[str] = []
        for s in initial:
            self.intern(s)

    def intern(self, s: str) -> int:
        """The id of ``s``, adding it when new."""
        i = self.ids.get(s)
        if i is None:
            i = self.ids[s] = len(self.strings)
            self.strings.append(s)
        return i

    def __len__(self) -> int:
        return len(self.strings)


@dataclass
class _Chunk:
    cols: dict[str, np.ndarray[Any, Any]]


def _thread_pool(workers: int) -> ThreadPoolExecutor:
    """The build's worker threads (``concurrent.futures`` and the ``logging`` it brings imported only here: a
    few ms of every command's start otherwise)."""
    from concurrent.futures import ThreadPoolExecutor

    return ThreadPoolExecutor(max_workers=workers, thread_name_prefix="build")


class TraceBuilder:
    """Collects events column-wise from a parser, then sorts, packs rows and freezes them into a :class:`Trace`.

    Event indices handed out by :meth:`add_events` are provisional (append order); side tables and flows given
    with those indices are re-keyed to the final order by :meth:`build`.
    """

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self.names = StringTable()
        self.lanes: list[Lane] = []
        self._lane_ids: dict[Any, int] = {}
        self._events: list[_Chunk] = []
        self._n = 0
        self._kernels: list[dict[str, np.ndarray[Any, Any]]] = []
        self._copies: list[dict[str, np.ndarray[Any, Any]]] = []
        self._flows: list[dict[str, np.ndarray[Any, Any]]] = []
        self._collectives: list[dict[str, np.ndarray[Any, Any]]] = []
        self._op_args: list[dict[str, np.ndarray[Any, Any]]] = []
        self._memory: list[dict[str, np.ndarray[Any, Any]]] = []
        self.counters: list[CounterSeries] = []
        self.warnings: list[str] = []

    # lanes ------------------------------------------------------------------------------------------------
    def lane(self, key: Any, make: Lane | None = None) -> int:
        """The id of the lane registered under ``key``; registers ``make`` first when the key is new."""
        lid = self._lane_ids.get(key)
        if lid is None:
            if make is None:
                raise KeyError(key)
            lid = self._lane_ids[key] = len(self.lanes)
            self.lanes.append(make)
        return lid

    def has_lane(self, key: Any) -> bool:
        """Whether a lane is registered under ``key``."""
        return key in self._lane_ids

    def replace_lane(self, lane_id: int, lane: Lane) -> None:
        """Replace a lane's description (names learnt late from metadata events)."""
        self.lanes[lane_id] = lane

    # events -----------------------------------------------------------------------------------------------
    @property
    def n_events(self) -> int:
        """Events added so far."""
        return self._n

    def add_events(
        self,
        *,
        start_ns: npt.ArrayLike,
        dur_ns: npt.ArrayLike,
        kind: npt.ArrayLike,
        lane: npt.ArrayLike,
        name: npt.ArrayLike,
        corr: npt.ArrayLike | None = None,
        ext: npt.ArrayLike | None = None,
    ) -> I64:
        """Append events given as equally long columns; returns their provisional indices.

        ``start_ns`` is in the file's time base (the builder makes times relative at :meth:`build`).
        Negative durations are clamped to 0 by the caller's choice — here they raise ``ValueError``.
        """
        s = np.asarray(start_ns, dtype=np.int64)
        n = s.shape[0]
        cols = {
            "start_ns": s,
            "dur_ns": _broadcast(dur_ns, n, np.int64),
            "kind": _broadcast(kind, n, np.uint8),
            "lane": _broadcast(lane, n, np.int32),
            "name": _broadcast(name, n, np.int32),
            "corr": _broadcast(-1 if corr is None else corr, n, np.int64, lazy=corr is None),
            "ext": _broadcast(-1 if ext is None else ext, n, np.int64, lazy=ext is None),
        }
        for k, v in cols.items():
            if v.shape != (n,):
                raise ValueError(f"column {k} has shape {v.shape}, expected ({n},)")
        if n and cols["dur_ns"].min() < 0:
            raise ValueError("negative durations must be clamped by the parser")
        self._events.append(_Chunk(cols))
        first = self._n
        self._n += n
        return np.arange(first, self._n, dtype=np.int64)

    def add_kernels(self, **cols: npt.ArrayLike) -> None:
        """Append kernel side-table rows (``event`` = provisional indices); missing columns get defaults."""
        self._kernels.append(_side_columns(KernelTable, cols))

    def add_copies(self, **cols: npt.ArrayLike) -> None:
        """Append copy side-table rows (``event`` = provisional indices); missing columns get defaults."""
        self._copies.append(_side_columns(CopyTable, cols))

    def add_collectives(self, **cols: npt.ArrayLike) -> None:
        """Append collective side-table rows (``event`` = provisional indices; name columns are interned ids)."""
        self._collectives.append(_side_columns(CollectiveTable, cols))

    def add_op_args(self, **cols: npt.ArrayLike) -> None:
        """Append operator-args rows (``event`` = provisional indices; ``shapes``/``types`` interned ids)."""
        self._op_args.append(_side_columns(OpArgTable, cols))

    def add_memory(self, **cols: npt.ArrayLike) -> None:
        """Append allocator rows (``event`` = provisional indices of the ``[memory]`` instants)."""
        self._memory.append(_side_columns(MemoryTable, cols))

    def add_flows(self, src: npt.ArrayLike, dst: npt.ArrayLike, kind: FlowKind | npt.ArrayLike) -> None:
        """Append arrows between provisional event indices."""
        self._flows.append(_side_columns(FlowTable, {"src": src, "dst": dst, "kind": kind}))

    def warn(self, message: str) -> None:
        """Record a warning for the user (shown by every command and the app)."""
        if message not in self.warnings:
            self.warnings.append(message)

    # build ------------------------------------------------------------------------------------------------
    def _column(self, key: str, dtype: Any) -> np.ndarray[Any, Any]:
        """One column of every event added (one chunk of events, the usual case, as it is: :meth:`build` makes
        every column it keeps anew). A column no chunk was given (``corr``, ``ext``: :func:`_broadcast`'s
        ``lazy``) comes back as one value broadcast, with no memory behind it."""
        if len(self._events) == 1:
            return self._events[0].cols[key]
        if not self._events:
            return np.zeros(0, dtype=dtype)
        parts = [c.cols[key] for c in self._events]
        if all(_is_constant(p) for p in parts) and len({p[0] for p in parts if p.shape[0]}) <= 1:
            n = sum(p.shape[0] for p in parts)
            return np.broadcast_to(next((p[:1] for p in parts if p.shape[0]), np.zeros(1, dtype=dtype)), (n,))
        return np.concatenate(parts)

    def build(self, meta: TraceMeta, *, t0_ns: int | None = None, consume: bool = False) -> Trace:
        """Sort, make times relative, pack rows, re-key side tables, and freeze.

        ``t0_ns`` (file time of relative 0) defaults to the earliest event start. ``consume``: the builder lets go
        of each column it was given once it has made the trace's from it (a lower peak of memory where the caller
        holds no other reference); it is spent after that.

        On a trace of :data:`PARALLEL_BUILD_EVENTS` events or more (:data:`PARALLEL_BUILD_EVENTS_MANY_CORES` where the
        process may use :data:`MANY_CORES` cores or more), where the process may use two cores or more, the
        independent steps run on worker threads next to this one (numpy releases the GIL in the copies, gathers and
        sorts they are made of): the columns' concatenations, then, once the order is known, the gathers of the
        columns the rows do not need and every side table, while this thread gathers start, duration and lane and
        packs the rows. The model is the same either way.
        """
        n_total = sum(c.cols["start_ns"].shape[0] for c in self._events)
        cores = _usable_cores()
        least = PARALLEL_BUILD_EVENTS_MANY_CORES if cores >= MANY_CORES else PARALLEL_BUILD_EVENTS
        workers = min(cores - 1, MAX_BUILD_WORKERS) if n_total >= least else 0
        pool = _thread_pool(workers) if workers > 0 else None
        try:
            # the order's sort in lane groups on the workers too, where they have cores of their own (on two busy
            # cores it measured slower: 3.6 -> 5.0 s of wall for the 29.5 M events of nsys_10m.sqlite)
            return self._build(meta, t0_ns, pool, workers + 1 if cores >= MANY_CORES else 1, consume)
        finally:
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)

    def _build(
        self, meta: TraceMeta, t0_ns: int | None, pool: ThreadPoolExecutor | None, threads: int, consume: bool
    ) -> Trace:
        pending = {k: _later(pool, self._column, k, dt) for k, dt in EVENT_COLUMNS.items() if k != "depth"}
        cols = {k: get() for k, get in pending.items()}
        if consume:
            self._events = []
        n = cols["start_ns"].shape[0]
        if t0_ns is None:
            t0_ns = int(cols["start_ns"].min()) if n else 0
        n_lanes = len(self.lanes)
        # by (lane, start, -dur), ties in file order (a shift of every start orders alike: file times go in)
        order = event_order(cols["lane"], cols["start_ns"], cols["dur_ns"], pool=pool, threads=threads)
        inverse = np.empty(n, dtype=np.int64)
        inverse[order] = np.arange(n, dtype=np.int64)
        gathered = {
            k: _later(pool, _constant, v, n) if _is_constant(v) else _later(pool, np.take, v, order, 0)
            for k, v in cols.items()
            if k not in ("start_ns", "dur_ns", "lane")
        }
        if consume:  # each worker's task holds its column until gathered
            cols = {k: cols[k] for k in ("start_ns", "dur_ns", "lane")}
        sides = self._side_tables_later(pool, inverse, consume)
        lane_sorted = read_only(cols["lane"][order])
        dur_sorted = read_only(cols["dur_ns"][order])
        start = cols["start_ns"][order]
        if consume:
            del cols
        start -= np.int64(t0_ns)
        lane_offsets = np.searchsorted(lane_sorted, np.arange(n_lanes + 1), side="left").astype(np.int64)
        depth = assign_depths(start, dur_sorted, lane_offsets)
        out = {k: read_only(get()) for k, get in gathered.items()}
        return Trace(
            start_ns=read_only(start),
            dur_ns=dur_sorted,
            kind=out["kind"],
            lane=lane_sorted,
            name=out["name"],
            depth=read_only(depth),
            corr=out["corr"],
            ext=out["ext"],
            names=tuple(self.names.strings),
            lanes=tuple(self.lanes),
            lane_offsets=read_only(lane_offsets),
            kernels=sides["kernels"](),
            copies=sides["copies"](),
            flows=sides["flows"](),
            counters=self._counters_from(t0_ns),
            meta=dataclasses.replace(
                meta, t0_ns=int(t0_ns), warnings=tuple(dict.fromkeys((*meta.warnings, *self.warnings)))
            ),
            collectives=sides["collectives"](),
            op_args=sides["op_args"](),
            memory=sides["memory"](),
        )

    def _side_tables_later(
        self, pool: ThreadPoolExecutor | None, inverse: I64, consume: bool
    ) -> dict[str, Callable[[], Any]]:
        """The side tables' builds (on the workers where there are), each table's parts given to its task
        (``consume``: no longer held here); ``inverse`` maps an event's file index to its final one."""
        parts = (self._kernels, self._copies, self._flows, self._collectives, self._op_args, self._memory)
        if consume:
            self._kernels, self._copies, self._flows = [], [], []
            self._collectives, self._op_args, self._memory = [], [], []
        return {
            "kernels": _later(pool, _build_side, KernelTable, parts[0], inverse, consume),
            "copies": _later(pool, _build_side, CopyTable, parts[1], inverse, consume),
            "flows": _later(pool, build_flow_table, parts[2], inverse),
            "collectives": _later(pool, _build_side, CollectiveTable, parts[3], inverse, consume),
            "op_args": _later(pool, _build_side, OpArgTable, parts[4], inverse, consume),
            "memory": _later(pool, _build_side, MemoryTable, parts[5], inverse, consume),
        }

    def _counters_from(self, t0_ns: int) -> tuple[CounterSeries, ...]:
        """The counter series with times relative to ``t0_ns`` (ns), read-only."""
        return tuple(
            dataclasses.replace(c, ts_ns=read_only(c.ts_ns - np.int64(t0_ns)), values=read_only(c.values))
            for c in self.counters
        )


def _later(pool: ThreadPoolExecutor | None, fn: Callable[..., _T], *args: Any) -> Callable[[], _T]:
    """``fn(*args)`` on a worker of ``pool`` (its result when asked for), or here and now without workers."""
    if pool is None:
        value = fn(*args)
        return lambda: value
    return pool.submit(fn, *args).result


def _broadcast(v: npt.ArrayLike, n: int, dtype: Any, *, lazy: bool = False) -> np.ndarray[Any, Any]:
    """``v`` as a column of ``n`` values; a scalar repeated (``lazy``: as a read-only broadcast view with no memory
    behind it, which :meth:`TraceBuilder.build` turns into a column only at the end)."""
    a = np.asarray(v, dtype=dtype)
    if a.ndim:
        return a
    return np.broadcast_to(a.reshape(1), (n,)) if lazy else np.full(n, a, dtype=dtype)


def _is_constant(a: np.ndarray[Any, Any]) -> bool:
    """Whether ``a`` is one value broadcast (a column :func:`_broadcast` made ``lazy``)."""
    return a.ndim == 1 and a.shape[0] > 1 and a.strides == (0,)


def _constant(a: np.ndarray[Any, Any], n: int) -> np.ndarray[Any, Any]:
    """The column of :func:`_is_constant` ``a`` in any order: its value ``n`` times."""
    return np.full(n, a[0], dtype=a.dtype)


_SIDE_DEFAULTS: dict[str, Any] = {
    "occupancy": np.nan,
    "blocks_per_sm": np.nan,
    "warps_per_sm": np.nan,
    "raw_name": -1,
    "graph_id": -1,
    "graph_node": -1,
    "is_async": -1,
    "group": -1,
    "bytes_in": -1,
    "bytes_out": -1,
    "dtype": -1,
    "shapes": -1,
    "types": -1,
    "seq": -1,
    "fwd_tid": -1,
    "allocated": -1,
    "reserved": -1,
}


def _side_columns(cls: type, cols: dict[str, npt.ArrayLike]) -> dict[str, np.ndarray[Any, Any]]:
    dtypes = side_table_dtypes(cls)
    unknown = set(cols) - set(dtypes)
    if unknown:
        raise TypeError(f"{cls.__name__} has no columns {sorted(unknown)}")
    first = "event" if "event" in dtypes else "src"
    n = np.asarray(cols[first]).shape[0]
    out: dict[str, np.ndarray[Any, Any]] = {}
    for name, dt in dtypes.items():
        if isinstance(dt, tuple):
            v = cols.get(name)
            a = np.zeros((n, dt[1]), dtype=dt[0]) if v is None else np.asarray(v, dtype=dt[0]).reshape(n, dt[1])
        else:  # a column not given is its default broadcast (no memory; :func:`_build_side` fills it at the end)
            a = _broadcast(cols.get(name, _SIDE_DEFAULTS.get(name, 0)), n, dt, lazy=name not in cols)
        out[name] = a
    return out


def concat_side_columns(cls: type, parts: Sequence[dict[str, np.ndarray[Any, Any]]]) -> dict[str, np.ndarray[Any, Any]]:
    """The columns of side table ``cls`` from ``parts`` (per chunk or per trace), concatenated in order; no parts:
    empty columns."""
    if not parts:
        return empty_side_columns(cls)
    return {k: np.concatenate([p[k] for p in parts]) for k in side_table_dtypes(cls)}


def _build_side(
    cls: type, parts: Sequence[dict[str, np.ndarray[Any, Any]]], inverse: I64, consume: bool = False
) -> Any:
    """The side table of ``parts`` (rows keyed by provisional event indices) with ``event`` mapped through
    ``inverse`` and its rows in event order (``consume``: each column of the parts is dropped from them once it is
    in place, so that the parts' memory is freed column by column).

    Each event has at most one row, so the order is found without a sort: every row's new event index is marked in
    an array as long as the trace, and the marks read back in event order (the one order a stable argsort gives
    distinct keys). The columns are then scattered from their parts into place, never concatenated first."""
    if not parts:
        return cls(**{k: read_only(v) for k, v in empty_side_columns(cls).items()})
    event = inverse[np.concatenate([p["event"] for p in parts])] if len(parts) > 1 else inverse[parts[0]["event"]]
    m = event.shape[0]
    if m == 0:
        return cls(**{k: read_only(v) for k, v in concat_side_columns(cls, parts).items()})
    small = np.int32 if m < 2**31 else np.int64
    slot = np.full(inverse.shape[0], -1, dtype=small)
    slot[event] = np.arange(m, dtype=small)
    order = slot[slot >= 0]
    if order.shape[0] != m:
        raise ValueError(f"{cls.__name__}: {m - order.shape[0]} events have two rows")
    del slot
    rank = np.empty(m, dtype=np.int64)  # where each row (in the parts' order) goes
    rank[order] = np.arange(m, dtype=np.int64)
    cols: dict[str, np.ndarray[Any, Any]] = {"event": event[order]}
    for k in side_table_dtypes(cls):
        if k == "event":
            continue
        first = parts[0][k]
        if all(_is_constant(p[k]) for p in parts) and len({p[k][:1].tobytes() for p in parts}) == 1:
            cols[k] = np.full(m, first[0], dtype=first.dtype)  # one value in every part (a default): no scatter
            if consume:
                for p in parts:
                    del p[k]
            continue
        out = np.empty((m, *first.shape[1:]), dtype=first.dtype)
        del first
        at = 0
        for p in parts:
            v = p.pop(k) if consume else p[k]
            out[rank[at : at + v.shape[0]]] = v
            at += v.shape[0]
            del v
        cols[k] = out
    return cls(**{k: read_only(v) for k, v in cols.items()})


def build_flow_table(parts: Sequence[dict[str, np.ndarray[Any, Any]]], inverse: I64) -> FlowTable:
    """The flow table of ``parts`` with event indices mapped through ``inverse`` (old index -> final index), sorted
    by (kind, dst, src)."""
    cols = concat_side_columns(FlowTable, parts)
    if cols["src"].shape[0]:
        cols["src"] = inverse[cols["src"]]
        cols["dst"] = inverse[cols["dst"]]
        order = np.lexsort((cols["src"], cols["dst"], cols["kind"]))
        cols = {k: v[order] for k, v in cols.items()}
    return FlowTable(**{k: read_only(v) for k, v in cols.items()})
