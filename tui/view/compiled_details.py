"""The details-pane rows of torch.compile and CUDA graphs (no Textual): what an Inductor kernel's name, its
launcher op's args and the ``--inductor-dir`` output say about it, which CUDA-graph replay ran a kernel, and
what a ``cudaGraphLaunch`` call replayed."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.compiled.inductor import InductorInfo
from gputop_trace.analysis.compiled.regions import kernel_origins
from gputop_trace.model.kinds import Kind
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.timeline_data import TimelineData
from gputop_trace.units import format_ns

#: at most this many post-grad nodes are listed in the pane (the JSON has them all)
MAX_NODES = 12


def inductor_rows(info: InductorInfo | None) -> list[tuple[str, str]]:
    """``compiled`` (kind and fused operators), ``kernel file`` (launcher args), and with the Inductor debug output
    ``graph nodes``, ``source`` and ``output code`` rows of one kernel."""
    if info is None:
        return []
    rows: list[tuple[str, str]] = []
    d = info.decoded
    if d is not None:
        fused = f" of {', '.join(d.ops)}" if d.ops else ""
        rows.append(("compiled", f"torch.compile {d.kind} kernel{fused} (Inductor kernel {d.index})"))
    for a in info.launch_args:
        parts = [a.get("kernel_file", ""), f"hash {a['kernel_hash']}" if a.get("kernel_hash") else ""]
        if a.get("kernel_backend"):
            parts.append(f"backend {a['kernel_backend']}")
        rows.append(("kernel file", clean(" · ".join(p for p in parts if p))))
    nodes = info.post_grad_nodes
    if nodes:
        more = f" (+{len(nodes) - MAX_NODES} more)" if len(nodes) > MAX_NODES else ""
        rows.append(("graph nodes", clean(", ".join(nodes[:MAX_NODES]) + more)))
    for line in info.source_lines:
        rows.append(("source", clean(line)))
    if info.sources:
        where = "; ".join(f"{s.path}:{s.line} (graph {s.graph})" for s in info.sources)
        rows.append(("output code", clean(where)))
    return rows


def replay_rows(data: TimelineData, event: int) -> list[tuple[str, str]]:
    """For a kernel a CUDA graph replayed: which replay and where it was launched; for a ``cudaGraphLaunch``
    call or its replay band: the GPU work it replayed. Empty for anything else."""
    t = data.trace
    prog = data.program()
    if not prog.uses_cuda_graphs:
        return []
    i = int(event)
    kind = int(t.kind[i])
    if kind == Kind.KERNEL:
        o = kernel_origins(t, np.array([i], dtype=np.int64), prog)
        rows = [("replay", clean(o.label(t, 0)))] if o.replay[0] >= 0 else []
        row = t.kernel_row(i)
        if row >= 0 and int(t.kernels.graph_id[row]) >= 0:  # Nsight Systems writes the graph a kernel ran in
            node = int(t.kernels.graph_node[row])
            rows.append(
                ("CUDA graph", f"graph id {int(t.kernels.graph_id[row])}" + (f", node {node}" if node >= 0 else ""))
            )
        return rows
    band = kind in (Kind.GRAPH, Kind.GPU_RANGE)
    launch = int(t.launch_of[i]) if band else i
    if (kind == Kind.API or band) and launch in set(prog.graph_launches.tolist()):
        ops = np.flatnonzero(t.launch_of == launch)
        ops = ops[np.isin(t.kind[ops], [int(Kind.KERNEL), int(Kind.MEMCPY), int(Kind.MEMSET)])]
        no = int(np.searchsorted(prog.graph_launches, launch))
        if not len(ops):
            return [("replays", f"CUDA graph replay {no + 1} of {len(prog.graph_launches):,}: no GPU work recorded")]
        first, last = int(t.start_ns[ops].min()), int(t.end_ns[ops].max())
        busy = int(t.dur_ns[ops].sum())
        fold = " · Space on the stream folds it to its replay bands" if band else ""
        return [
            (
                "replays",
                f"CUDA graph replay {no + 1} of {len(prog.graph_launches):,}: {len(ops):,} GPU ops over "
                f"{format_ns(last - first)} ({format_ns(busy)} of GPU time), starting "
                f"{format_ns(first - int(t.start_ns[launch]))} after the call{fold}",
            )
        ]
    return []
