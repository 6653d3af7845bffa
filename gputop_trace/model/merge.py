"""Several traces (ranks) into one: lanes and names re-indexed, times on one axis (ns)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from gputop_trace.model.builder import StringTable, _build_flows, _concat_side
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
    _frozen,
)
from gputop_trace.model.trace import Trace


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
    kernels: list[dict[str, np.ndarray[Any, Any]]] = []
    copies: list[dict[str, np.ndarray[Any, Any]]] = []
    colls: list[dict[str, np.ndarray[Any, Any]]] = []
    op_args: list[dict[str, np.ndarray[Any, Any]]] = []
    memory: list[dict[str, np.ndarray[Any, Any]]] = []
    flows: list[dict[str, np.ndarray[Any, Any]]] = []
    counters: list[CounterSeries] = []
    offset = 0
    for t in traces:
        remap = np.array([names.intern(s) for s in t.names], dtype=np.int32)
        lane_base = len(lanes)
        lanes.extend(t.lanes)
        shift = np.int64(t.meta.t0_ns - t0)
        cols["start_ns"].append(t.start_ns + shift)
        cols["dur_ns"].append(t.dur_ns)
        cols["kind"].append(t.kind)
        cols["lane"].append(t.lane + np.int32(lane_base))
        cols["name"].append(remap[t.name] if len(t) else t.name)
        cols["depth"].append(t.depth)
        cols["corr"].append(t.corr)
        cols["ext"].append(t.ext)
        k = {f.name: getattr(t.kernels, f.name) for f in dataclasses.fields(KernelTable)}
        k["event"] = k["event"] + offset
        k["raw_name"] = (
            np.where(k["raw_name"] >= 0, remap[np.maximum(k["raw_name"], 0)], -1).astype(np.int32)
            if len(remap)
            else k["raw_name"]
        )
        kernels.append(k)
        c = {f.name: getattr(t.copies, f.name) for f in dataclasses.fields(CopyTable)}
        c["event"] = c["event"] + offset
        copies.append(c)
        co = {f.name: getattr(t.collectives, f.name) for f in dataclasses.fields(CollectiveTable)}
        co["event"] = co["event"] + offset
        for col in ("op", "group", "dtype"):
            ids = co[col]
            co[col] = np.where(ids >= 0, remap[np.maximum(ids, 0)], -1).astype(np.int32) if len(remap) else ids
        colls.append(co)
        oa = {f.name: getattr(t.op_args, f.name) for f in dataclasses.fields(OpArgTable)}
        oa["event"] = oa["event"] + offset
        for col in ("shapes", "types"):
            ids = oa[col]
            oa[col] = np.where(ids >= 0, remap[np.maximum(ids, 0)], -1).astype(np.int32) if len(remap) else ids
        op_args.append(oa)
        mem = {f.name: getattr(t.memory, f.name) for f in dataclasses.fields(MemoryTable)}
        mem["event"] = mem["event"] + offset
        memory.append(mem)
        flows.append({"src": t.flows.src + offset, "dst": t.flows.dst + offset, "kind": t.flows.kind})
        counters.extend(dataclasses.replace(cs, ts_ns=cs.ts_ns + shift) for cs in t.counters)
        offset += len(t)
    merged_cols = {k: np.concatenate(v) for k, v in cols.items()}
    lane_offsets = np.searchsorted(merged_cols["lane"], np.arange(len(lanes) + 1), side="left").astype(np.int64)
    metas = [t.meta for t in traces]
    meta = TraceMeta(
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
    return Trace(
        **{k: _frozen(v) for k, v in merged_cols.items()},
        names=tuple(names.strings),
        lanes=tuple(lanes),
        lane_offsets=_frozen(lane_offsets),
        kernels=KernelTable(**{k: _frozen(v) for k, v in _concat_side(KernelTable, kernels).items()}),
        copies=CopyTable(**{k: _frozen(v) for k, v in _concat_side(CopyTable, copies).items()}),
        flows=_build_flows(flows, np.arange(offset, dtype=np.int64)),
        counters=tuple(counters),
        meta=meta,
        collectives=CollectiveTable(**{k: _frozen(v) for k, v in _concat_side(CollectiveTable, colls).items()}),
        op_args=OpArgTable(**{k: _frozen(v) for k, v in _concat_side(OpArgTable, op_args).items()}),
        memory=MemoryTable(**{k: _frozen(v) for k, v in _concat_side(MemoryTable, memory).items()}),
    )
