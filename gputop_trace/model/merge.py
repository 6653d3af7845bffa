"""Several traces (ranks) into one: lanes and names re-indexed, times on one axis (ns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np

from gputop_trace.model.builder import StringTable, build_flow_table, concat_side_columns
from gputop_trace.model.tables import (
    EVENT_COLUMNS,
    CollectiveTable,
    CopyTable,
    CounterSeries,
    KernelTable,
    Lane,
    MemoryTable,
    OpArgTable,
    TraceMeta,
    read_only,
)
from gputop_trace.model.trace import Trace

_T = TypeVar("_T")


_Columns = dict[str, np.ndarray[Any, Any]]


def merge_traces(traces: Sequence[Trace], *, fmt: str | None = None) -> Trace:
    """Concatenate several traces (ranks) into one: lanes and names are re-indexed, times put on one axis.

    Each input's absolute time is ``start_ns + meta.t0_ns``; the result's relative 0 is the earliest of them.
    Lane ranks are kept as they are in the inputs.
    """
    if len(traces) == 1:
        return traces[0]
    t0 = min(t.meta.t0_ns + (int(t.start_ns.min()) if len(t) else 0) for t in traces)
    names = StringTable()
    lanes: list[Lane] = []
    cols: dict[str, list[np.ndarray[Any, Any]]] = {k: [] for k in EVENT_COLUMNS}
    sides: dict[type, list[_Columns]] = {cls: [] for cls in _SIDE_TABLES}
    flows: list[_Columns] = []
    counters: list[CounterSeries] = []
    offset = 0
    for t in traces:
        remap = np.array([names.intern(s) for s in t.names], dtype=np.int32)
        shift = np.int64(t.meta.t0_ns - t0)
        for k, v in _shifted_events(t, remap, len(lanes), shift).items():
            cols[k].append(v)
        lanes.extend(t.lanes)
        for cls, part in _shifted_side_tables(t, remap, offset).items():
            sides[cls].append(part)
        flows.append({"src": t.flows.src + offset, "dst": t.flows.dst + offset, "kind": t.flows.kind})
        counters.extend(dataclasses.replace(cs, ts_ns=cs.ts_ns + shift) for cs in t.counters)
        offset += len(t)
    merged_cols = {k: np.concatenate(v) for k, v in cols.items()}
    lane_offsets = np.searchsorted(merged_cols["lane"], np.arange(len(lanes) + 1), side="left").astype(np.int64)
    return Trace(
        **{k: read_only(v) for k, v in merged_cols.items()},
        names=tuple(names.strings),
        lanes=tuple(lanes),
        lane_offsets=read_only(lane_offsets),
        kernels=_side_table(KernelTable, sides[KernelTable]),
        copies=_side_table(CopyTable, sides[CopyTable]),
        flows=build_flow_table(flows, np.arange(offset, dtype=np.int64)),
        counters=tuple(counters),
        meta=_merged_meta([t.meta for t in traces], fmt, t0),
        collectives=_side_table(CollectiveTable, sides[CollectiveTable]),
        op_args=_side_table(OpArgTable, sides[OpArgTable]),
        memory=_side_table(MemoryTable, sides[MemoryTable]),
    )


#: the side tables keyed by event, and their columns that hold name ids
_SIDE_TABLES: dict[type, tuple[str, ...]] = {
    KernelTable: ("raw_name",),
    CopyTable: (),
    CollectiveTable: ("op", "group", "dtype"),
    OpArgTable: ("shapes", "types"),
    MemoryTable: (),
}


def _shifted_events(t: Trace, remap: np.ndarray[Any, Any], lane_base: int, shift: np.int64) -> _Columns:
    """The event columns of ``t`` on the merged axes: times shifted by ``shift`` ns, lanes after ``lane_base``,
    names mapped through ``remap`` (name id in ``t`` -> merged name id)."""
    return {
        "start_ns": t.start_ns + shift,
        "dur_ns": t.dur_ns,
        "kind": t.kind,
        "lane": t.lane + np.int32(lane_base),
        "name": remap[t.name] if len(t) else t.name,
        "depth": t.depth,
        "corr": t.corr,
        "ext": t.ext,
    }


def _shifted_side_tables(t: Trace, remap: np.ndarray[Any, Any], offset: int) -> dict[type, _Columns]:
    """The side tables of ``t`` with events after ``offset`` and name ids mapped through ``remap`` (-1 stays -1)."""
    tables = {
        KernelTable: t.kernels,
        CopyTable: t.copies,
        CollectiveTable: t.collectives,
        OpArgTable: t.op_args,
        MemoryTable: t.memory,
    }
    out: dict[type, _Columns] = {}
    for cls, name_cols in _SIDE_TABLES.items():
        table = tables[cls]
        part = {f.name: getattr(table, f.name) for f in dataclasses.fields(cls)}
        part["event"] = part["event"] + offset
        for col in name_cols:
            ids = part[col]
            part[col] = np.where(ids >= 0, remap[np.maximum(ids, 0)], -1).astype(np.int32) if len(remap) else ids
        out[cls] = part
    return out


def _side_table(cls: type[_T], parts: list[_Columns]) -> _T:
    """Side table ``cls`` of the merged trace from the parts of its inputs (read-only columns)."""
    return cls(**{k: read_only(v) for k, v in concat_side_columns(cls, parts).items()})


def _merged_meta(metas: list[TraceMeta], fmt: str | None, t0: int) -> TraceMeta:
    """The merged trace's metadata: sources, GPUs, ranks, warnings of all inputs; ``t0`` (ns) its time origin."""
    return TraceMeta(
        format=fmt or metas[0].format,
        source=tuple(s for m in metas for s in m.source),
        producer=" / ".join(dict.fromkeys(m.producer for m in metas if m.producer)),
        t0_ns=t0,
        gpus=tuple(g for m in metas for g in m.gpus),
        ranks=tuple(sorted({r for m in metas for r in m.ranks})),
        world_size=max((m.world_size or 0 for m in metas), default=0) or None,
        rank_shift_ns={r: s for m in metas for r, s in m.rank_shift_ns.items()},
        truncated_bytes=sum(m.truncated_bytes for m in metas),
        warnings=tuple(dict.fromkeys(w for m in metas for w in m.warnings)),
        properties={"ranks": [m.properties for m in metas]},
    )
