"""``CUDA_GRAPH_EVENTS`` of an nsys export: what the host did to CUDA graphs (nsys ``--cuda-graph-trace``).

The table's rows are host-side: each has a thread (``globalTid``), a start and end in ns, the CUDA function that
did it (``nameId``), the graph node it concerns (``graphNodeId``, ``originalGraphNodeId`` for a cloned node) and
an event class, one of nsys' ``TRACE_PROCESS_EVENT_CUDA_GRAPH_*`` values (``ENUM_NSYS_EVENT_CLASS``): graph
creation, node creation, clone, exec creation (``cudaGraphInstantiate``) and exec-node parameter updates. It
holds no stream, device or correlation id: the GPU side of a graph launch is ``CUPTI_ACTIVITY_KIND_GRAPH_TRACE``
(:func:`~gputop_trace.parsers.nsys.gpu.read_graph_trace`) or the graph's kernels, joined to ``cudaGraphLaunch``
through the runtime table.

Each row becomes a :attr:`~gputop_trace.model.kinds.Kind.OTHER` event on its thread's lane named
``"<what>: <function>"`` (``"CUDA graph exec creation: cudaGraphInstantiate"``), so the timeline shows where the
host spent time building and instantiating graphs, without counting it as API time twice (the CUDA call that did
it is in the runtime table already) or as GPU work.
"""

from __future__ import annotations

import numpy as np

from gputop_trace.model.kinds import Kind
from gputop_trace.parsers.nsys.common import Batch, Context, col_or, factorize, kind_array, thread_row_exprs

TABLE = "CUDA_GRAPH_EVENTS"

#: nsys' event classes of graph events, by name (``ENUM_NSYS_EVENT_CLASS``), in words.
CLASS_WORDS: dict[str, str] = {
    "TRACE_PROCESS_EVENT_CUDA_GRAPH_NODE_CREATION": "CUDA graph node creation",
    "TRACE_PROCESS_EVENT_CUDA_GRAPHEXEC_CREATION": "CUDA graph exec creation",
    "TRACE_PROCESS_EVENT_CUDA_GRAPH_CREATION": "CUDA graph creation",
    "TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE": "CUDA graph clone",
    "TRACE_PROCESS_EVENT_CUDA_GRAPH_EXEC_NODE_SET_PARAMS": "CUDA graph exec-node set params",
}
#: the values nsys 2026.2 gives those classes, for exports whose ``ENUM_NSYS_EVENT_CLASS`` table is missing
DEFAULT_CLASSES: dict[int, str] = {
    77: "TRACE_PROCESS_EVENT_CUDA_GRAPH_NODE_CREATION",
    94: "TRACE_PROCESS_EVENT_CUDA_GRAPHEXEC_CREATION",
    95: "TRACE_PROCESS_EVENT_CUDA_GRAPH_CREATION",
    96: "TRACE_PROCESS_EVENT_CUDA_GRAPH_CLONE",
    111: "TRACE_PROCESS_EVENT_CUDA_GRAPH_EXEC_NODE_SET_PARAMS",
}


def class_words(value: int, event_class: dict[int, str]) -> str:
    """What an event-class value of a graph event means, in words, from the file's ``event_class`` names (nsys'
    2026.2 values where the file does not name it); ``"CUDA graph event"`` when unknown."""
    name = event_class.get(value) or DEFAULT_CLASSES.get(value)
    return CLASS_WORDS.get(name or "", "CUDA graph event")


def read_graph_events(ctx: Context) -> None:
    """``CUDA_GRAPH_EVENTS`` → host-side graph events on their threads (see the module docstring); the number of
    rows read goes to the trace's properties as ``cuda_graph_events``."""
    t = ctx.event_table(TABLE)
    if t is None:
        return
    event_class_sql = f"ifnull({col_or(ctx.schema, t, '-1', 'eventClass')}, -1)"
    start, dur, gtid, name_sid, event_class = ctx.reader.read(t, thread_row_exprs(ctx.schema, t, event_class_sql))
    n = int(start.shape[0])
    if not n:
        return
    function = ctx.strings.intern(name_sid, missing="(unknown CUDA function)")
    combo, code = factorize(((event_class.astype(np.int64) & 0xFFFFFFFF) << 32) | function.astype(np.int64))
    names = ctx.builder.names
    classes = ctx.enums.event_class
    named = np.array(
        [names.intern(f"{class_words(c >> 32, classes)}: {names.strings[c & 0xFFFFFFFF]}") for c in combo.tolist()],
        dtype=np.int32,
    )
    ctx.add(
        Batch(
            table=t,
            start=start,
            dur=dur,
            kind=kind_array(Kind.OTHER, n),
            lane=ctx.cpu_lanes(gtid),
            name=named[code],
        )
    )
    ctx.properties["cuda_graph_events"] = n
