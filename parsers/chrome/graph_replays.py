"""CUDA-graph replays of a Kineto trace as one band each: for every ``cudaGraphLaunch`` (``cuGraphLaunch``,
``hipGraphLaunch``) call, an annotation band (:data:`~gputop_trace.model.kinds.Kind.GPU_RANGE`, named
:data:`REPLAY_NAME`) on each GPU stream its kernels ran on, from the first kernel's start to the last one's end,
with the call's correlation id and a launch flow from the call. The kernels stay as they are and nest one row below
the band, so the timeline can fold a stream to its replays and unfold it to their kernels. A band is an
annotation, not GPU work: busy time, gaps and overlaps are the kernels' own, exactly as without it."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from gputop_trace.model.kinds import Kind

_GRAPH_LAUNCH = re.compile(r"^(?:cudaGraphLaunch|cuGraphLaunch|hipGraphLaunch)(?:_v\d+|_ptsz)?$")
#: the name of a replay band
REPLAY_NAME = "CUDA graph replay"


def replay_bands(
    names: list[str],
    kind: np.ndarray[Any, Any],
    lane: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    corr: np.ndarray[Any, Any],
    ext: np.ndarray[Any, Any],
    start: np.ndarray[Any, Any],
    dur: np.ndarray[Any, Any],
) -> dict[str, np.ndarray[Any, Any]] | None:
    """The builder columns of one band per (graph launch, GPU lane) and ``src``, the launch call of each (for its
    launch flow), or None when the trace replays no graph. ``names`` are the interned strings; the other columns
    are every event's, by provisional index."""
    launch_ids = [i for i, n in enumerate(names) if _GRAPH_LAUNCH.match(n)]
    if not launch_ids:
        return None
    api = np.flatnonzero((kind == Kind.API) & np.isin(name, launch_ids) & (corr >= 0))
    if not len(api):
        return None
    k = np.flatnonzero((kind == Kind.KERNEL) & np.isin(corr, corr[api]))
    if not len(k):
        return None
    key = np.column_stack([corr[k], lane[k]])
    uniq, group = np.unique(key, axis=0, return_inverse=True)
    group = np.asarray(group).reshape(-1)
    n = len(uniq)
    first = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n, np.iinfo(np.int64).min, dtype=np.int64)
    np.minimum.at(first, group, start[k])
    np.maximum.at(last, group, start[k] + dur[k])
    ext_of = np.full(n, -1, dtype=np.int64)
    ext_of[group] = ext[k]
    # the launch call of each band (the graph launch with its correlation id)
    order = np.argsort(corr[api], kind="stable")
    api_sorted, corr_sorted = api[order], corr[api][order]
    src = api_sorted[np.searchsorted(corr_sorted, uniq[:, 0])]
    return {
        "src": src.astype(np.int64),
        "start_ns": first,
        "dur_ns": last - first,
        "kind": np.full(n, int(Kind.GPU_RANGE), dtype=np.uint8),
        "lane": uniq[:, 1].astype(np.int32),
        "corr": uniq[:, 0].astype(np.int64),
        "ext": ext_of,
    }
