"""Collective (NCCL/RCCL) kernels: what they are, how they overlap computation, and matching them across ranks.

A collective kernel is recognised by its name with :func:`~gputop_trace.model.kernel_names.collective_op`
(``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, ``ncclKernel_AllGather_RING_LL_Sum_int8_t``, custom all-reduces such
as ``cross_device_reduce_1stage`` …); Kineto traces also record the framework's view of the call on
the kernel (collective name, process group, message size), which :class:`~gputop_trace.model.tables.CollectiveTable`
holds. Times are int64 ns relative to the trace start.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.intervals import overlap_with_union, union
from gputop_trace.model.arrays import I64, distinct_ids, isin
from gputop_trace.model.kernel_names import COLLECTIVE_WORDS, collective_op
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

I32 = npt.NDArray[np.int32]

#: Collective operations, in display order.
OPS = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "all_to_all", "send_recv", "send", "recv")
OP_LABEL = {
    "all_reduce": "all-reduce",
    "all_gather": "all-gather",
    "reduce_scatter": "reduce-scatter",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_to_all": "all-to-all",
    "send_recv": "send/recv",
    "send": "send",
    "recv": "recv",
    "other": "collective",
}


def framework_op(name: str) -> str | None:
    """Normalise the framework's collective name (``allreduce``, ``_allgather_base``,
    ``reduce_scatter_tensor_coalesced``, ``alltoall_base``) to one of :data:`OPS`."""
    s = name.lower().replace("_", "").replace("-", "")
    for key in ("reducescatter", "allreduce", "allgather", "alltoall", "broadcast", "sendrecv", "send", "recv"):
        if key in s:
            return COLLECTIVE_WORDS[key]
    if "reduce" in s:
        return "reduce"
    return None


@dataclass(frozen=True)
class Collectives:
    """Every collective kernel of a trace, as columns (one entry per kernel, sorted by rank, group, issue time).

    ``issue_ns`` is when the host issued it (its launch call's start, else the kernel start); ``seq`` its position
    among the collectives of the same rank and group; ``bytes`` the message size (``-1`` unknown); ``group`` the
    process group (Kineto) or ``"default"``.
    """

    event: I64
    rank: I32
    device: I32
    op: tuple[str, ...]
    group: tuple[str, ...]
    start_ns: I64
    end_ns: I64
    issue_ns: I64
    bytes: I64
    seq: I64

    def __len__(self) -> int:
        return int(self.event.shape[0])


def find_collectives(trace: Trace) -> Collectives:
    """All collective kernels with their op, group, message size and order of issue per (rank, group)."""
    k = trace.of_kind(Kind.KERNEL)
    name_ids = trace.name[k]
    ops_by_name: dict[int, str | None] = {n: collective_op(trace.names[n]) for n in distinct_ids(name_ids).tolist()}
    coll_name = np.zeros(len(trace.names), dtype=bool)  # by name id: a collective's kernel name
    coll_name[[n for n, op in ops_by_name.items() if op is not None]] = True
    is_coll = coll_name[name_ids]
    ev = k[is_coll]
    ops = [ops_by_name[int(n)] or "other" for n in trace.name[ev]]
    groups = ["default"] * len(ev)
    nbytes = np.full(len(ev), -1, dtype=np.int64)
    ct = trace.collectives
    if len(ct) and len(ev):
        pos = np.searchsorted(ct.event, ev)
        posc = np.minimum(pos, len(ct) - 1)
        hit = ct.event[posc] == ev
        for j in np.flatnonzero(hit).tolist():
            row = int(posc[j])
            g = int(ct.group[row])
            if g >= 0:
                groups[j] = trace.names[g]
            fop = framework_op(trace.names[int(ct.op[row])])
            if fop is not None and ops[j] == "other":
                ops[j] = fop
            b = int(max(ct.bytes_in[row], ct.bytes_out[row]))
            nbytes[j] = b
    rank = trace.event_rank[ev].astype(np.int32)
    launch = trace.launch_of[ev]
    issue = np.where(launch >= 0, trace.start_ns[np.maximum(launch, 0)], trace.start_ns[ev])
    # order: rank, group, issue time
    gid: dict[str, int] = {}
    gcode = np.array([gid.setdefault(g, len(gid)) for g in groups], dtype=np.int64)
    order = np.lexsort((trace.start_ns[ev], issue, gcode, rank))
    ev, rank, gcode, issue, nbytes = ev[order], rank[order], gcode[order], issue[order], nbytes[order]
    ops = [ops[i] for i in order.tolist()]
    groups = [groups[i] for i in order.tolist()]
    seq = np.zeros(len(ev), dtype=np.int64)
    if len(ev):
        new_block = np.concatenate(([True], (rank[1:] != rank[:-1]) | (gcode[1:] != gcode[:-1])))
        block_start = np.maximum.accumulate(np.where(new_block, np.arange(len(ev)), 0))
        seq = np.arange(len(ev), dtype=np.int64) - block_start
    return Collectives(
        event=ev,
        rank=rank,
        device=trace.event_device[ev].astype(np.int32),
        op=tuple(ops),
        group=tuple(groups),
        start_ns=trace.start_ns[ev],
        end_ns=trace.end_ns[ev],
        issue_ns=issue,
        bytes=nbytes,
        seq=seq,
    )


@dataclass(frozen=True)
class CommOverlap:
    """Communication vs computation on one GPU (ns). ``hidden_pct`` = share of communication time during which
    computation kernels ran too; ``exposed_ns`` = communication time with no computation beside it."""

    rank: int
    device: int
    count: int
    comm_ns: int
    compute_ns: int
    overlap_ns: int
    exposed_ns: int
    hidden_pct: float
    by_op: dict[str, tuple[int, int, int]] = field(default_factory=dict)  # op -> (count, total_ns, bytes)


def comm_compute_overlap(trace: Trace, coll: Collectives | None = None) -> list[CommOverlap]:
    """Per (rank, device): union of collective kernels, union of other kernels, and how much of the first the
    second covers."""
    coll = coll if coll is not None else find_collectives(trace)
    k = trace.of_kind(Kind.KERNEL)
    is_coll = isin(k, coll.event)
    out: list[CommOverlap] = []
    pairs = sorted({(int(r), int(d)) for r, d in zip(coll.rank.tolist(), coll.device.tolist(), strict=True)})
    for r, d in pairs:
        sel = (coll.rank == r) & (coll.device == d)
        cs, ce = union(coll.start_ns[sel], coll.end_ns[sel])
        comp = k[~is_coll & (trace.event_rank[k] == r) & (trace.event_device[k] == d)]
        ps, pe = union(trace.start_ns[comp], trace.end_ns[comp])
        comm = int((ce - cs).sum())
        overlap = int(overlap_with_union(cs, ce, ps, pe).sum())
        by_op: dict[str, tuple[int, int, int]] = {}
        idx = np.flatnonzero(sel)
        for op in sorted({coll.op[i] for i in idx.tolist()}):
            m = idx[[coll.op[i] == op for i in idx.tolist()]]
            b = coll.bytes[m]
            by_op[op] = (int(m.size), int((coll.end_ns[m] - coll.start_ns[m]).sum()), int(b[b > 0].sum()))
        out.append(
            CommOverlap(
                rank=r,
                device=d,
                count=int(sel.sum()),
                comm_ns=comm,
                compute_ns=int((pe - ps).sum()),
                overlap_ns=overlap,
                exposed_ns=comm - overlap,
                hidden_pct=100.0 * overlap / comm if comm else 0.0,
                by_op=by_op,
            )
        )
    return out
