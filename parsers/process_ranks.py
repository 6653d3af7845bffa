"""An nsys export of a multi-process job (one process per GPU, as torchrun and mpirun start them) holds every
rank in one file: give each GPU-driving process its own rank so the per-rank analyses and the app's rank
grouping work on it as on a directory of per-rank traces."""

from __future__ import annotations

import dataclasses

import numpy as np

from gputop_trace.model.kinds import LaneKind
from gputop_trace.model.trace import Trace


def ranks_from_processes(trace: Trace) -> Trace:
    """When two or more processes each drive GPUs of their own, number them as ranks in the order of the lowest
    GPU each uses (the usual local-rank convention) and move their lanes and GPUs to those ranks. Processes with
    no GPU work stay with the first rank. Returns the trace unchanged otherwise (one process, or processes
    sharing GPUs, or a trace that already has several ranks)."""
    if len(trace.meta.ranks) != 1:
        return trace
    base = trace.meta.ranks[0]
    gpu_of: dict[int, set[int]] = {}
    for ln in trace.lanes:
        if ln.kind in (LaneKind.GPU_STREAM, LaneKind.GPU_RANGES) and ln.device >= 0 and ln.pid >= 0:
            gpu_of.setdefault(ln.pid, set()).add(ln.device)
    if len(gpu_of) < 2:
        return trace
    devices = [d for ds in gpu_of.values() for d in ds]
    if len(devices) != len(set(devices)):
        return trace  # processes share a GPU: not one rank per process
    order = sorted(gpu_of, key=lambda pid: (min(gpu_of[pid]), pid))
    rank_of_pid = {pid: base + i for i, pid in enumerate(order)}
    rank_of_dev = {d: rank_of_pid[pid] for pid, ds in gpu_of.items() for d in ds}

    def lane_rank(ln_pid: int, ln_device: int) -> int:
        if ln_pid in rank_of_pid:
            return rank_of_pid[ln_pid]
        if ln_device in rank_of_dev:
            return rank_of_dev[ln_device]
        return base

    lanes = []
    for ln in trace.lanes:
        r = lane_rank(ln.pid, ln.device)
        key = (r, *ln.sort_key[1:]) if ln.sort_key else ln.sort_key
        lanes.append(dataclasses.replace(ln, rank=r, sort_key=key))
    gpus = tuple(dataclasses.replace(g, rank=rank_of_dev.get(g.device, g.rank)) for g in trace.meta.gpus)
    ranks = tuple(sorted({ln.rank for ln in lanes}))
    props = {
        **trace.meta.properties,
        "ranks_from": "processes: one rank per GPU-driving process, numbered by their lowest GPU",
        "rank_pids": {str(r): pid for pid, r in rank_of_pid.items()},
    }
    out = dataclasses.replace(
        trace,
        lanes=tuple(lanes),
        meta=dataclasses.replace(trace.meta, gpus=gpus, ranks=ranks, properties=props),
    )
    assert np.array_equal(out.lane, trace.lane)
    return out
