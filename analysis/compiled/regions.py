"""What a trace says about torch.compile and CUDA graphs (detectors.md §7): the compiled regions Dynamo ran
(``Torch-Compiled Region: F/C``, frame F, compile C), the compilations recorded inside the profile, the CUDA-graph
replays (``cudaGraphLaunch`` calls) and, for every kernel, where it came from: the replay that ran it, the
compiled region and the operator around its launch. Times are int64 ns from the trace start."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from gputop_trace.analysis.enclosing import innermost_enclosing, nesting_parents
from gputop_trace.analysis.intervals import union
from gputop_trace.model.arrays import I64, distinct, distinct_ids, isin
from gputop_trace.model.kernel_names import inductor_kernel
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace

REGION = re.compile(r"^Torch-Compiled Region: (\d+)/(\d+)")
CALL_GRAPH = re.compile(r"^## Call CompiledFxGraph (\S+) ##$")
#: API calls that launch a whole CUDA (HIP) graph
GRAPH_LAUNCH = re.compile(r"^(?:cudaGraphLaunch|cuGraphLaunch|hipGraphLaunch)(?:_v\d+|_ptsz)?$")
#: the events torch.compile records while it compiles (Dynamo, AOTAutograd, Inductor): any of them in the
#: profile is a compilation inside it; the outermost on each thread is counted
COMPILE_EVENT = re.compile(
    r"^(?:_compile\.compile_inner|entire_frame_compile|compile_fx_inner|inductor_compile|backend_compile|"
    r"OutputGraph\.call_user_compiler|create_aot_dispatcher_function|fx_codegen_and_compile)(?: \(dynamo_timed\))?$"
)
#: CUDA-graph trees recording a graph (a new shape, or the first run after compiling)
RECORD_EVENT = re.compile(r"^CUDAGraphNode\.record(?: \(dynamo_timed\))?$")
#: operators and ranges that say nothing about where a kernel came from (the wrappers around a compiled call)
_WRAPPERS = re.compile(
    r"^(?:## Call CompiledFxGraph|Torch-Compiled Region|TorchDynamo Cache Lookup|Pregraph bytecode|AOTDispatcher)"
)


@dataclass(frozen=True)
class CompiledProgram:
    """The torch.compile / CUDA-graph facts of a trace. Event indices, sorted by start.

    ``regions``: ``Torch-Compiled Region`` events, with their ``frame`` and ``compile_id``; ``fx_calls``:
    ``## Call CompiledFxGraph … ##`` events; ``compiles``: the outermost compilation events; ``records``: the
    outermost CUDA-graph recordings (``CUDAGraphNode.record``); ``graph_launches``:
    ``cudaGraphLaunch`` calls. ``uses_compile`` / ``uses_cuda_graphs``: what the program already does
    (Inductor kernels or compiled regions; graph launches, graph rows or kernels with a graph id)."""

    regions: I64
    frame: I64
    compile_id: I64
    fx_calls: I64
    compiles: I64
    records: I64
    graph_launches: I64
    uses_compile: bool
    uses_cuda_graphs: bool
    inductor_kernels: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)


def _named(trace: Trace, kinds: tuple[Kind, ...], pattern: re.Pattern[str]) -> I64:
    """Events of ``kinds`` whose name matches ``pattern``, sorted by start."""
    ev = trace.of_kind(*kinds)
    if not len(ev):
        return ev
    ids = distinct_ids(trace.name[ev])
    hit = [int(i) for i in ids.tolist() if pattern.match(trace.names[int(i)])]
    sel = ev[isin(trace.name[ev], np.array(hit, dtype=np.int32))] if hit else ev[:0]
    return sel[np.argsort(trace.start_ns[sel], kind="stable")]


def _outermost(trace: Trace, ev: I64) -> I64:
    """The events of ``ev`` not inside another of them on the same lane."""
    keep = []
    for lane in distinct(trace.lane[ev]).tolist():
        mine = ev[trace.lane[ev] == lane]
        mine = mine[np.lexsort((-trace.dur_ns[mine], trace.start_ns[mine]))]
        end = -1
        for e in mine.tolist():
            if trace.start_ns[e] >= end:
                keep.append(e)
                end = int(trace.end_ns[e])
            else:
                end = max(end, int(trace.end_ns[e]))
    return np.array(sorted(keep, key=lambda e: int(trace.start_ns[e])), dtype=np.int64)


def compile_intervals(trace: Trace, prog: CompiledProgram) -> tuple[I64, I64]:
    """The disjoint sorted time intervals (ns) torch.compile spent compiling or recording CUDA graphs."""
    ev = np.concatenate((prog.compiles, prog.records))
    return union(trace.start_ns[ev], trace.end_ns[ev])


def compiled_program(trace: Trace) -> CompiledProgram:
    """The compiled regions, compilations and graph replays of ``trace`` (see :class:`CompiledProgram`)."""
    ops = (Kind.CPU_OP, Kind.RANGE)
    regions = _named(trace, ops, REGION)
    parsed = [REGION.match(trace.event_name(int(e))) for e in regions.tolist()]
    frame = np.array([int(m.group(1)) if m else -1 for m in parsed], dtype=np.int64)
    compile_id = np.array([int(m.group(2)) if m else -1 for m in parsed], dtype=np.int64)
    fx_calls = _named(trace, ops, CALL_GRAPH)
    compiles = _outermost(trace, _named(trace, ops, COMPILE_EVENT))
    records = _outermost(trace, _named(trace, ops, RECORD_EVENT))
    graph_launches = _named(trace, (Kind.API,), GRAPH_LAUNCH)
    k = trace.of_kind(Kind.KERNEL)
    names = distinct_ids(trace.name[k])
    inductor_ids = [int(i) for i in names.tolist() if inductor_kernel(trace.names[int(i)]) is not None]
    n_inductor = int(isin(trace.name[k], np.array(inductor_ids, dtype=np.int32)).sum()) if inductor_ids else 0
    graph_rows = bool(len(trace.of_kind(Kind.GRAPH))) or bool((trace.kernels.graph_id >= 0).any())
    return CompiledProgram(
        regions=regions,
        frame=frame,
        compile_id=compile_id,
        fx_calls=fx_calls,
        compiles=compiles,
        records=records,
        graph_launches=graph_launches,
        uses_compile=bool(len(regions) or len(fx_calls) or n_inductor),
        uses_cuda_graphs=bool(len(graph_launches)) or graph_rows,
        inductor_kernels=n_inductor,
    )


@dataclass(frozen=True)
class KernelOrigins:
    """Where each kernel of ``kernels`` came from (one entry per kernel, ``-1``/``""`` unknown).

    ``replay``: the ``cudaGraphLaunch`` call that ran it (an event index); ``replay_no``: that replay's number
    in the trace (0-based, over all ``replays`` graph launches); ``node``: the kernel's place in its replay
    (0-based, in GPU start order; the graph node it ran for, as far as a Kineto trace can tell) and
    ``replay_size`` how many kernels that replay ran; ``region``: the
    ``Torch-Compiled Region`` event around its launch call; ``operator``: the innermost operator or range
    around the launch that is not one of torch.compile's wrappers."""

    kernels: I64
    replay: I64
    replay_no: I64
    node: I64
    replay_size: I64
    replays: int
    region: I64
    operator: I64

    def label(self, trace: Trace, i: int) -> str:
        """One line for kernel ``i``: ``CUDA graph replay 4 of 10 · kernel 3 of 6 in it · Torch-Compiled Region: 1/0``
        (numbers 1-based)."""
        parts = []
        if self.replay[i] >= 0:
            parts.append(f"CUDA graph replay {int(self.replay_no[i]) + 1} of {self.replays:,}")
            parts.append(f"kernel {int(self.node[i]) + 1} of {int(self.replay_size[i])} in it")
        if self.operator[i] >= 0:
            parts.append(f"`{trace.event_name(int(self.operator[i]))}`")
        if self.region[i] >= 0:
            parts.append(trace.event_name(int(self.region[i])))
        return " · ".join(parts)


def kernel_origins(trace: Trace, kernels: I64, program: CompiledProgram | None = None) -> KernelOrigins:
    """The :class:`KernelOrigins` of ``kernels`` (kernel event indices)."""
    prog = program if program is not None else compiled_program(trace)
    kernels = np.asarray(kernels, dtype=np.int64)
    api = trace.launch_of[kernels] if len(kernels) else np.zeros(0, dtype=np.int64)
    has = api >= 0
    is_replay = np.zeros(len(kernels), dtype=bool)
    if len(prog.graph_launches) and has.any():
        is_replay[has] = isin(api[has], prog.graph_launches)
    replay = np.where(is_replay, api, -1)
    replay_no = np.full(len(kernels), -1, dtype=np.int64)
    node = np.full(len(kernels), -1, dtype=np.int64)
    size = np.zeros(len(kernels), dtype=np.int64)
    if is_replay.any():
        replay_no[is_replay] = np.searchsorted(prog.graph_launches, api[is_replay])
        node[is_replay], size[is_replay] = _node_positions(trace, kernels[is_replay], api[is_replay])
    lanes = np.where(has, trace.lane[np.maximum(api, 0)], -1)
    times = np.where(has, trace.start_ns[np.maximum(api, 0)], 0)
    region = np.full(len(kernels), -1, dtype=np.int64)
    if len(prog.regions):
        region = _enclosing_of(trace, prog.regions, lanes, times)
    operator = _operator(trace, lanes, times)
    return KernelOrigins(
        kernels=kernels,
        replay=replay,
        replay_no=replay_no,
        node=node,
        replay_size=size,
        replays=len(prog.graph_launches),
        region=region,
        operator=operator,
    )


def _node_positions(trace: Trace, kernels: I64, api: I64) -> tuple[I64, I64]:
    """Each replayed kernel's place among all the kernels its replay ran (0-based, GPU start order, ties by
    index), and how many kernels that replay ran."""
    every = trace.of_kind(Kind.KERNEL)
    mine = every[isin(trace.launch_of[every], distinct(api))]
    owner = trace.launch_of[mine]
    order = np.lexsort((mine, trace.start_ns[mine], owner))
    mine, owner = mine[order], owner[order]
    first = np.concatenate(([True], owner[1:] != owner[:-1]))
    starts = np.flatnonzero(first)
    group_start = np.maximum.accumulate(np.where(first, np.arange(len(mine)), 0))
    pos_all = np.arange(len(mine)) - group_start
    counts = np.diff(np.concatenate((starts, [len(mine)])))
    size_all = np.repeat(counts, counts)
    by_event = np.argsort(mine)
    at = by_event[np.searchsorted(mine[by_event], kernels)]
    return pos_all[at].astype(np.int64), size_all[at].astype(np.int64)


def _enclosing_of(trace: Trace, events: I64, lanes: I64, times: I64) -> I64:
    """For each (lane, time), the last-starting event of ``events`` on that lane that encloses it (``-1``): when
    the last one to start before the time has already ended (a nested region that returned), the search goes up
    to the events it nests in."""
    out = np.full(len(lanes), -1, dtype=np.int64)
    for lane in distinct(trace.lane[events]).tolist():
        mine = events[trace.lane[events] == lane]
        mine = mine[np.lexsort((-trace.dur_ns[mine], trace.start_ns[mine]))]
        q = np.flatnonzero(lanes == lane)
        if not len(q):
            continue
        starts, ends = trace.start_ns[mine], trace.end_ns[mine]
        parent = nesting_parents(starts, ends)
        cur = np.searchsorted(starts, times[q], side="right") - 1
        found = np.full(len(q), -1, dtype=np.int64)
        todo = cur >= 0
        while todo.any():
            i = np.flatnonzero(todo)
            hit = ends[cur[i]] > times[q[i]]
            found[i[hit]] = cur[i[hit]]
            cur[i[~hit]] = parent[cur[i[~hit]]]
            todo[i[hit]] = False
            todo[i] &= cur[i] >= 0
        ok = found >= 0
        out[q[ok]] = mine[found[ok]]
    return out


def _operator(trace: Trace, lanes: I64, times: I64) -> I64:
    """The innermost operator or range around each launch that is not a torch.compile wrapper (``-1`` none)."""
    enc = innermost_enclosing(trace, lanes, times, (Kind.CPU_OP, Kind.RANGE))
    out: I64 = np.array(enc, dtype=np.int64)
    wrapper_ids = {i for i, n in enumerate(trace.names) if _WRAPPERS.match(n)} if len(enc) else set()
    if not wrapper_ids:
        return out
    bad = isin(trace.name[np.maximum(enc, 0)], np.fromiter(wrapper_ids, dtype=np.int32)) & (enc >= 0)
    out[bad] = -1
    return out
