"""Findings that fit a compiled program (detectors.md §7): graph breaks (several compiled regions per step),
recompilation inside the profile, kernel time launched outside compiled regions, steps that CUDA-graph replays do
not cover; the launch advice worded for what the program already does; and where the profile itself misleads
(a note on launch-bound traces and traces of kernels under ~10 µs). Times are int64 ns from the trace start."""

from __future__ import annotations

import numpy as np

from gputop_trace.analysis.compiled.regions import CompiledProgram, kernel_origins
from gputop_trace.analysis.findings.draft import Draft, pct
from gputop_trace.analysis.gaps.detect import SHORT_OP_NS, DeviceGaps
from gputop_trace.analysis.gaps.detect import cause_fix as device_cause_fix
from gputop_trace.analysis.intervals import overlap_with_union, subtract, total, union
from gputop_trace.analysis.steps import Steps, find_steps
from gputop_trace.model.arrays import distinct
from gputop_trace.model.devices import DeviceWords
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.units import format_ns

#: Kernel time launched outside compiled regions is a finding from this share of all kernel time on.
MIN_OUTSIDE_SHARE = 0.05
#: Host time in steps outside compiled regions (and compilations) is a finding from this share of step time on.
MIN_HOST_OUTSIDE_SHARE = 0.25
#: A step is covered by CUDA-graph replays when at least this share of its kernel time ran in replays.
MIN_REPLAY_COVER = 0.9
#: The profile note: traces where at least this share of kernels run under SHORT_OP_NS.
MIN_SHORT_KERNEL_SHARE = 0.5


def launch_fix(prog: CompiledProgram | None, words: DeviceWords | None = None) -> str:
    """What to do about launch overhead, for a program that may already use torch.compile / CUDA graphs: never
    advice to do what it already does. ``words``: the device's; off CUDA, graphs are HIP graphs on ROCm and none
    elsewhere."""
    if words is not None and words.runtime != "CUDA":
        capture = f"capture the step in a {words.graphs}, " if words.graphs else ""
        return f"fuse small ops (torch.compile), {capture}or make each kernel do more work (larger batch)"
    compiled = prog is not None and prog.uses_compile
    graphs = prog is not None and prog.uses_cuda_graphs
    if compiled and graphs:
        return (
            "the program already uses torch.compile and CUDA graphs, so cover more of the step with them (remove "
            "graph breaks, move eager code between compiled regions into them, keep shapes static so replays are "
            "not re-recorded), or make each kernel do more work (larger batch)"
        )
    if compiled:
        return (
            "the program is already compiled: capture the step in CUDA graphs (torch.compile "
            'mode="reduce-overhead"), remove graph breaks so more of the step is compiled, or make each kernel do '
            "more work (larger batch)"
        )
    if graphs:
        return (
            "the program already replays CUDA graphs: fuse small ops (torch.compile), capture more of the step in "
            "the graph, or make each kernel do more work (larger batch)"
        )
    return (
        "fuse small ops (torch.compile), capture the step in a CUDA graph, or make each kernel do more work "
        "(larger batch)"
    )


def host_fix(prog: CompiledProgram | None) -> str:
    """What to do about a host too slow to feed the GPU (the ``cpu_bound`` idle cause), worded like
    :func:`launch_fix`."""
    if prog is not None and (prog.uses_compile or prog.uses_cuda_graphs):
        return f"cut host overhead per step: {launch_fix(prog)}; less Python per kernel"
    return (
        "cut host overhead per step: larger batches or fused ops, torch.compile or CUDA graphs, less Python per kernel"
    )


def cause_fix(cause: str, prog: CompiledProgram | None, words: DeviceWords) -> str:
    """What to do about an idle cause on one device (:func:`~gputop_trace.analysis.gaps.detect.cause_fix`), with the
    host-overhead advice on a CUDA GPU worded for what the program already does (:func:`host_fix`)."""
    if cause == "cpu_bound" and words.runtime == "CUDA":
        return host_fix(prog)
    return device_cause_fix(cause, words)


def compiled_findings(
    trace: Trace, prog: CompiledProgram, span_ns: int, gaps: list[DeviceGaps] | None = None
) -> list[Draft]:
    """Graph breaks, recompilation, kernel time outside compiled regions and steps that graph replays do not
    cover; ``span_ns`` the GPU active span the times are weighed against; ``gaps`` the GPUs' idle gaps (the
    recompilation finding says how long the GPU sat idle during compilation)."""
    if not (prog.uses_compile or prog.uses_cuda_graphs):
        return []
    steps = find_steps(trace)
    out: list[Draft] = []
    out.extend(_graph_breaks(trace, prog, steps, span_ns))
    out.extend(_recompilation(trace, prog, gaps or [], span_ns))
    k = trace.of_kind(Kind.KERNEL)
    if len(k):
        origins = kernel_origins(trace, k, prog)
        out.extend(_outside_regions(trace, prog, k, origins.region, steps, span_ns))
        if prog.uses_cuda_graphs and len(prog.graph_launches):
            out.extend(_replay_cover(trace, k, origins.replay, steps, span_ns))
    return out


def _in_step(trace: Trace, s: Steps, i: int, events: np.ndarray) -> np.ndarray:
    """Which of ``events`` start inside step ``i`` of ``s`` on the step's rank."""
    t0, t1 = int(s.start_ns[i]), int(s.start_ns[i] + s.dur_ns[i])
    st = trace.start_ns[events]
    return np.asarray((st >= t0) & (st < t1) & (trace.event_rank[events] == s.rank))


def _glue_ns(trace: Trace, prog: CompiledProgram, regions: np.ndarray, t0: int, t1: int) -> int:
    """Host time (ns) inside ``regions`` but outside their compiled graphs' calls and any compilation: Dynamo's
    entry work and the eager code between graphs (a resumed frame's region nests inside the one that broke)."""
    us, ue = union(trace.start_ns[regions], trace.end_ns[regions])
    inner = np.concatenate((prog.fx_calls, prog.compiles))
    inner = inner[(trace.start_ns[inner] < t1) & (trace.end_ns[inner] > t0)]
    bs, be = union(trace.start_ns[inner], trace.end_ns[inner])
    rs, re_ = subtract(us, ue, bs, be)
    return total(rs, re_)


def _graph_breaks(trace: Trace, prog: CompiledProgram, steps: list[Steps], span_ns: int) -> list[Draft]:
    if not len(prog.regions) or not steps:
        return []
    per_step: list[int] = []
    glue_ns = 0
    broken = 0
    first_step = -1
    for s in steps:
        for i in range(len(s)):
            inside = _in_step(trace, s, i, prog.regions)
            frames = set(prog.frame[inside].tolist())
            per_step.append(len(frames))
            if len(frames) > 1:
                broken += 1
                first_step = int(s.events[i]) if first_step < 0 else first_step
                t0 = int(s.start_ns[i])
                glue_ns += _glue_ns(trace, prog, prog.regions[inside], t0, t0 + int(s.dur_ns[i]))
    if not broken:
        return []
    n_regions = max(per_step)
    frames_all = sorted(set(prog.frame.tolist()))
    return [
        Draft(
            kind="graph_breaks",
            title=f"Graph breaks: {broken} of {len(per_step)} steps run {n_regions} separate torch.compile regions "
            f"(frames {', '.join(str(f) for f in frames_all)}), with {format_ns(glue_ns)} of host time in them "
            "outside the compiled graphs",
            detail="Each compiled region is entered on its own (guards checked, inputs copied into CUDA-graph "
            "buffers, a separate replay), and the code at a break runs eagerly, one kernel at a time. Fix: find "
            "the breaks with TORCH_LOGS=graph_breaks (or torch._dynamo.explain) and remove them (data-dependent "
            "Python, .item(), print, unsupported calls), so the step compiles as one graph.",
            time_ns=glue_ns,
            span_ns=span_ns,
            evidence={
                "steps": len(per_step),
                "broken_steps": broken,
                "regions_per_step": per_step,
                "frames": frames_all,
                "host_outside_graphs_ns": glue_ns,
            },
            thresholds={"min_frames_per_step": 2},
            event=first_step,
        )
    ]


def _recompilation(trace: Trace, prog: CompiledProgram, gaps: list[DeviceGaps], span_ns: int) -> list[Draft]:
    recompiled = sorted(
        {f"{f}/{c}" for f, c in zip(prog.frame.tolist(), prog.compile_id.tolist(), strict=True) if c > 0}
    )
    if not len(prog.compiles) and not len(prog.records):
        return []
    compile_ns = int(trace.dur_ns[prog.compiles].sum())
    record_ns = int(trace.dur_ns[prog.records].sum())
    idle_ns = sum(compile_idle_ns(trace, prog, dg) for dg in gaps)
    ids = f" (new compile ids {', '.join(recompiled)})" if recompiled else ""
    what = []
    if len(prog.compiles):
        n = len(prog.compiles)
        what.append(f"compiled {n} time{'s' if n > 1 else ''} ({format_ns(compile_ns)})")
    if len(prog.records):
        n = len(prog.records)
        what.append(f"recorded {n} CUDA graph{'s' if n > 1 else ''} ({format_ns(record_ns)})")
    idle = f"; the GPU sat idle {format_ns(idle_ns)} meanwhile" if idle_ns else ""
    longest = np.concatenate((prog.compiles, prog.records))
    return [
        Draft(
            kind="recompilation",
            title=f"torch.compile {' and '.join(what)} inside the profile{ids}{idle}",
            detail="A compilation inside the profiled steps means a guard failed (a new input shape, dtype, or a "
            "changed Python value) and Dynamo/Inductor compiled the frame again; with CUDA graphs the new graph is "
            "warmed up and recorded too. The steps around it are not representative. Fix: run every shape once "
            "before profiling, mark changing dimensions dynamic (torch._dynamo.mark_dynamic, or pad batches to a "
            "few sizes); TORCH_LOGS=recompiles says which guard failed.",
            time_ns=max(compile_ns + record_ns, idle_ns),
            span_ns=span_ns,
            evidence={
                "compiles": [
                    {"event": int(e), "start_ns": int(trace.start_ns[e]), "dur_ns": int(trace.dur_ns[e])}
                    for e in prog.compiles[:10].tolist()
                ],
                "records": [
                    {"event": int(e), "start_ns": int(trace.start_ns[e]), "dur_ns": int(trace.dur_ns[e])}
                    for e in prog.records[:10].tolist()
                ],
                "compile_ns": compile_ns,
                "record_ns": record_ns,
                "gpu_idle_ns": idle_ns,
                "recompiled_regions": recompiled,
            },
            thresholds={},
            event=int(longest[np.argmax(trace.dur_ns[longest])]),
        )
    ]


def compile_gap_mask(trace: Trace, prog: CompiledProgram | None, dg: DeviceGaps) -> np.ndarray:
    """Which idle gaps of ``dg`` torch.compile explains: at least half of the gap inside compilation or CUDA-graph
    recording on the GPU's rank (they belong to the recompilation finding, not to host overhead)."""
    c = dg.columns
    if prog is None or not (len(prog.compiles) or len(prog.records)) or not len(c):
        return np.zeros(len(c), dtype=bool)
    ev = np.concatenate((prog.compiles, prog.records))
    ev = ev[trace.event_rank[ev] == dg.rank]
    us, ue = union(trace.start_ns[ev], trace.end_ns[ev])
    covered = overlap_with_union(c.start_ns, c.start_ns + c.dur_ns, us, ue)
    return np.asarray(2 * covered >= c.dur_ns) & (c.dur_ns > 0)


def compile_idle_ns(trace: Trace, prog: CompiledProgram, dg: DeviceGaps) -> int:
    """GPU idle time (ns) of ``dg`` in gaps torch.compile explains (:func:`compile_gap_mask`)."""
    return int(dg.columns.dur_ns[compile_gap_mask(trace, prog, dg)].sum()) if len(dg.columns) else 0


def _host_outside_ns(trace: Trace, prog: CompiledProgram, steps: list[Steps]) -> tuple[int, int]:
    """(host time outside every compiled region and compilation, step time not spent compiling) over all steps,
    ns: a compilation inside a step is the recompilation finding's, not eager time."""
    outside = 0
    step_ns = 0
    building = np.concatenate((prog.compiles, prog.records))
    inner_all = np.concatenate((prog.regions, building))

    def covered(ev: np.ndarray, t0: int, t1: int, rank: int) -> int:
        ev = ev[(trace.start_ns[ev] < t1) & (trace.end_ns[ev] > t0) & (trace.event_rank[ev] == rank)]
        return total(*union(np.maximum(trace.start_ns[ev], t0), np.minimum(trace.end_ns[ev], t1)))

    for s in steps:
        for i in range(len(s)):
            t0, t1 = int(s.start_ns[i]), int(s.start_ns[i] + s.dur_ns[i])
            outside += (t1 - t0) - covered(inner_all, t0, t1, s.rank)
            step_ns += (t1 - t0) - covered(building, t0, t1, s.rank)
    return outside, step_ns


def _outside_regions(
    trace: Trace, prog: CompiledProgram, k: np.ndarray, region: np.ndarray, steps: list[Steps], span_ns: int
) -> list[Draft]:
    if not len(prog.regions):
        return []
    outside = (trace.launch_of[k] >= 0) & (region < 0)
    kernel_ns = int(trace.dur_ns[k].sum())
    out_ns = int(trace.dur_ns[k[outside]].sum())
    host_ns, step_ns = _host_outside_ns(trace, prog, steps) if steps else (0, 0)
    kernels_hit = kernel_ns > 0 and out_ns >= MIN_OUTSIDE_SHARE * kernel_ns
    host_hit = step_ns > 0 and host_ns >= MIN_HOST_OUTSIDE_SHARE * step_ns
    if not (kernels_hit or host_hit):
        return []
    names, counts = np.unique(trace.name[k[outside]], return_counts=True)
    top = [trace.names[int(n)] for n in names[np.argsort(-counts, kind="stable")][:3].tolist()]
    parts = []
    if kernels_hit:
        parts.append(
            f"{pct(out_ns, kernel_ns)} of kernel time ({format_ns(out_ns)}, {int(outside.sum()):,} kernels) is "
            "launched outside torch.compile regions"
        )
    if host_hit:
        where = "them" if parts else "torch.compile regions"
        parts.append(f"{pct(host_ns, step_ns)} of step time ({format_ns(host_ns)}) is spent outside {where}")
    mostly = f" (mostly {', '.join(f'`{t}`' for t in top)})" if kernels_hit and top else ""
    return [
        Draft(
            kind="outside_compiled",
            title="; ".join(parts),
            detail="Outside the compiled regions the step runs eagerly: Python, data handling and any operators "
            f"between, before or after the compiled calls{mostly}, launched one by one with the full operator "
            "overhead, or host work the GPU waits for. Fix: compile that code too or move it into a compiled region "
            "(a graph break often leaves it outside), and take host-only work (logging, sleeps, data preparation) "
            "off the step's critical path.",
            time_ns=out_ns if kernels_hit else host_ns,
            span_ns=span_ns,
            evidence={
                "kernel_ns": kernel_ns,
                "outside_ns": out_ns,
                "kernels_outside": int(outside.sum()),
                "top": top,
                "step_ns": step_ns,
                "host_outside_ns": host_ns,
            },
            thresholds={"min_kernel_share": MIN_OUTSIDE_SHARE, "min_step_share": MIN_HOST_OUTSIDE_SHARE},
            event=int(k[np.flatnonzero(outside)[0]]) if outside.any() else -1,
        )
    ]


def _replay_cover(trace: Trace, k: np.ndarray, replay: np.ndarray, steps: list[Steps], span_ns: int) -> list[Draft]:
    if not steps:
        return []
    api = trace.launch_of[k]
    has = api >= 0
    not_covered: list[dict[str, int]] = []
    eager_ns = 0
    launch_ns = 0
    eager_kernels = 0
    first = -1
    n_steps = 0
    for s in steps:
        for i in range(len(s)):
            n_steps += 1
            inside = np.zeros(len(k), dtype=bool)
            inside[has] = _in_step(trace, s, i, api[has])
            tot = int(trace.dur_ns[k[inside]].sum())
            rep = int(trace.dur_ns[k[inside & (replay >= 0)]].sum())
            if tot and rep < MIN_REPLAY_COVER * tot:
                eager = inside & (replay < 0)
                calls = distinct(api[eager])
                not_covered.append(
                    {"step": int(s.events[i]), "kernel_ns": tot, "replay_ns": rep, "kernels_outside": int(eager.sum())}
                )
                eager_ns += tot - rep
                eager_kernels += int(eager.sum())
                launch_ns += int(trace.dur_ns[calls].sum())
                first = int(s.events[i]) if first < 0 else first
    if not not_covered:
        return []
    names = [trace.event_name(d["step"]) for d in not_covered]
    return [
        Draft(
            kind="replay_cover",
            title=f"CUDA-graph replays do not cover {len(not_covered)} of {n_steps} steps "
            f"({', '.join(names[:4])}{', …' if len(names) > 4 else ''}): {eager_kernels:,} kernels "
            f"({format_ns(eager_ns)}) were launched one by one, {format_ns(launch_ns)} of launch calls",
            detail="In these steps kernels were launched one by one instead of replayed: the graph was being warmed "
            "up or recorded (a new shape or a recompilation), a graph break left eager code in the step, or an "
            "operation could not be captured (CPU tensors, synchronization, dynamic shapes). Fix: warm every shape "
            "up before the measured steps and keep the step's shapes static, and capture more of the step; "
            "TORCH_LOGS=cudagraphs says why a graph was skipped or re-recorded.",
            time_ns=launch_ns,
            span_ns=span_ns,
            evidence={
                "steps": not_covered[:20],
                "kernels_outside": eager_kernels,
                "kernel_ns_outside": eager_ns,
                "launch_ns": launch_ns,
            },
            thresholds={"min_replay_share": MIN_REPLAY_COVER},
            event=first,
        )
    ]


def profile_caveat(trace: Trace, gaps: list[DeviceGaps]) -> Draft | None:
    """Where the profile misleads: a torch.profiler trace that is launch-bound or dominated by kernels under
    :data:`~gputop_trace.analysis.gaps.detect.SHORT_OP_NS` (10 µs). None otherwise (and for Nsight Systems traces)."""
    if trace.meta.format != "kineto":
        return None
    k = trace.of_kind(Kind.KERNEL)
    if not len(k):
        return None
    short = trace.dur_ns[k] < SHORT_OP_NS
    n_short = int(short.sum())
    bound = [g for g in gaps if g.launch_bound]
    if not bound and n_short < MIN_SHORT_KERNEL_SHARE * len(k):
        return None
    why = f"{pct(n_short, len(k))} of its {len(k):,} kernels run under {format_ns(SHORT_OP_NS)}" + (
        f" and {'a GPU is' if len(bound) == 1 else 'GPUs are'} launch-bound" if bound else ""
    )
    span = max((g.span_ns for g in gaps), default=trace.span_ns)
    words = trace.device_words()
    why = words.say(why)
    # a system-wide tracer of the device's own vendor: Nsight Systems only where the device is a CUDA GPU
    tracer = {"CUDA": "Nsight Systems (gputop-trace record --nsys)", "HIP": "rocprofv3 (--sys-trace)"}.get(
        words.runtime or "", "the device vendor's own system-wide tracer"
    )
    return Draft(
        kind="profile_caveat",
        title=f"Where this profile misleads: {why}, so its launch and gap times are inflated by the profiler",
        detail="torch.profiler records every operator and launch call, and that bookkeeping costs the host time on "
        "each of them; for kernels this short it is of the same order as the kernels, so the gaps between them, "
        "the launch overhead and the host time per step are pessimistic, and overlap between kernels can be "
        f"hidden. Do not act on differences of a few microseconds here: record the same steps with {tracer} for "
        "truer launch gaps and kernel overlap.",
        time_ns=int(trace.dur_ns[k[short]].sum()),
        span_ns=span,
        evidence={"kernels": len(k), "short_kernels": n_short, "launch_bound_gpus": len(bound)},
        thresholds={"kernel_below_ns": SHORT_OP_NS, "min_short_share": MIN_SHORT_KERNEL_SHARE},
    )
