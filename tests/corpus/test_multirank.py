"""Multi-rank traces: collective kernels, communication/computation overlap, matching collectives across ranks,
clock offsets, stragglers and the per-rank table."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from gputop_trace.analysis.ranks.collectives import comm_compute_overlap, find_collectives, framework_op
from gputop_trace.analysis.ranks.stragglers import find_stragglers, match_collectives
from gputop_trace.analysis.ranks.table import rank_table
from gputop_trace.analysis.steps import find_steps, is_step_name
from gputop_trace.load.loader import load_paths
from gputop_trace.model.builder import TraceBuilder
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.model.kinds import FlowKind, Kind, LaneKind
from gputop_trace.model.merge import merge_traces
from gputop_trace.model.tables import Lane, TraceMeta
from gputop_trace.model.trace import Trace
from tests.conftest import CORPUS

MS = 1_000_000


@pytest.mark.parametrize(
    ("name", "op"),
    [
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "all_reduce"),
        ("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclWorkElem)", "all_gather"),
        ("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", "reduce_scatter"),
        ("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", "broadcast"),
        ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", "send_recv"),
        ("ncclKernel_Reduce_RING_LL_Sum_float", "reduce"),
        ("void at::native::vectorized_elementwise_kernel<4>(int)", None),
        ("sm90_xmma_gemm_bf16bf16_bf16f32", None),
    ],
)
def test_kernel_names_are_classified(name: str, op: str | None) -> None:
    assert collective_op(name) == op


def test_framework_names_are_normalised() -> None:
    assert framework_op("allreduce") == "all_reduce"
    assert framework_op("_allgather_base") == "all_gather"
    assert framework_op("reduce_scatter_tensor_coalesced") == "reduce_scatter"
    assert framework_op("alltoall_base") == "all_to_all"


@pytest.mark.parametrize(
    ("name", "ok"),
    [("ProfilerStep#12", True), ("step_3", True), ("train_step_0", True), ("iteration 4", True), ("infer_3", True),
     ("inference 2", True), ("step", False), ("data_load", False), ("stepper_1x", False), ("layer_3", False),
     ("infer", False)],
)  # fmt: skip
def test_step_names(name: str, ok: bool) -> None:
    assert is_step_name(name) is ok


def _rank_trace(rank: int, arrivals: list[int], ends: list[int], offset: int, compute: list[tuple[int, int]]) -> Trace:
    """One rank: all-reduce kernels (arrival = kernel start) on stream 20, compute kernels on stream 7,
    launch calls on the main thread inside step ranges; all times shifted by this rank's clock offset."""
    b = TraceBuilder("kineto")
    cpu = b.lane("cpu", Lane(kind=LaneKind.CPU_THREAD, name="main", rank=rank, pid=100 + rank, tid=1))
    comm = b.lane("s20", Lane(kind=LaneKind.GPU_STREAM, name="stream 20", rank=rank, device=rank, stream=20))
    comp = b.lane("s7", Lane(kind=LaneKind.GPU_STREAM, name="stream 7", rank=rank, device=rank, stream=7))
    ar = b.names.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)")
    gemm = b.names.intern("sm90_gemm")
    launch = b.names.intern("cudaLaunchKernel")
    step = b.names.intern("step")
    n = len(arrivals)
    durs = [e - a for a, e in zip(arrivals, ends, strict=True)]
    k = b.add_events(start_ns=[a + offset for a in arrivals], dur_ns=durs, kind=Kind.KERNEL, lane=comm, name=ar)
    api = b.add_events(start_ns=[a + offset - 50_000 for a in arrivals], dur_ns=10_000, kind=Kind.API, lane=cpu,
                       name=launch)  # fmt: skip
    b.add_flows(api, k, FlowKind.LAUNCH)
    b.add_events(start_ns=[s + offset for s, _ in compute], dur_ns=[d for _, d in compute], kind=Kind.KERNEL,
                 lane=comp, name=gemm)  # fmt: skip
    b.add_events(start_ns=[a + offset - 3 * MS for a in arrivals[:1]], dur_ns=[n * 20 * MS], kind=Kind.RANGE,
                 lane=cpu, name=step)  # fmt: skip
    b.names.intern(f"step_{rank}")
    return b.build(TraceMeta(format="kineto", ranks=(rank,)), t0_ns=0)


def test_straggler_found_across_a_clock_offset_and_a_shifted_window() -> None:
    n = 6
    base = [10 * MS + i * 20 * MS for i in range(n)]
    ends = [b + 3 * MS for b in base]  # every rank finishes together, 3 ms after rank 0 arrives
    r0 = _rank_trace(0, base, ends, 0, [(b - 4 * MS, 2 * MS) for b in base])
    # rank 1 arrives 2 ms late every time (it is the straggler) and its clock runs 5 ms ahead
    r1 = _rank_trace(1, [b + 2 * MS for b in base], ends, 5 * MS, [(b - 4 * MS, 1 * MS) for b in base])
    # rank 2's recording started one collective later: its first collective is rank 0's second
    r2 = _rank_trace(2, [b + MS // 2 for b in base[1:]], ends[1:], 0, [(b, MS) for b in base[1:]])
    t = merge_traces([r0, r1, r2])
    groups = match_collectives(t)
    assert len(groups) == 1
    g = groups[0]
    assert g.ranks == (0, 1, 2)
    assert len(g) == n - 1  # the instance rank 2 did not record cannot be matched on every rank
    rep = find_stragglers(t)
    assert rep.clock_offset_ns[1] == 5 * MS
    assert rep.clock_offset_ns[2] == 0
    assert rep.straggler == 1
    waits = {w.rank: w for w in rep.ranks}
    assert waits[1].times_last == n - 1
    assert waits[0].wait_ns == (n - 1) * 2 * MS
    assert waits[2].wait_ns == (n - 1) * (2 * MS - MS // 2)
    assert waits[1].late_median_ns == 2 * MS
    assert rep.host_activity and rep.host_activity[0][0] == "step"


def test_no_straggler_when_arrivals_are_within_noise() -> None:
    base = [10 * MS + i * 20 * MS for i in range(5)]
    ends = [b + 3 * MS for b in base]
    r0 = _rank_trace(0, base, ends, 0, [])
    r1 = _rank_trace(1, [b + 10_000 for b in base], ends, 0, [])
    rep = find_stragglers(merge_traces([r0, r1]))
    assert rep.straggler is None


def test_comm_compute_overlap_counts_only_other_kernels() -> None:
    base = [10 * MS]
    t = _rank_trace(0, base, [base[0] + 4 * MS], 0, [(base[0] + MS, 2 * MS), (base[0] + 6 * MS, MS)])
    (o,) = comm_compute_overlap(t)
    assert o.comm_ns == 4 * MS
    assert o.overlap_ns == 2 * MS
    assert o.exposed_ns == 2 * MS
    assert o.hidden_pct == pytest.approx(50.0)
    assert o.by_op == {"all_reduce": (1, 4 * MS, 0)}


@pytest.mark.corpus
def test_ddp_pair_straggler_and_waiting_time() -> None:
    t = load_paths([str(CORPUS / "kineto/h200_ddp_2gpu")])
    coll = find_collectives(t)
    assert len(coll) == 60 and set(coll.op) == {"all_reduce"}
    assert set(coll.group) == {"0"}  # the process group recorded by Kineto
    assert np.all(coll.bytes == 16781312 * 4)  # In msg nelems × float32
    rep = find_stragglers(t)
    assert rep.straggler == 1
    waits = {w.rank: w for w in rep.ranks}
    assert waits[1].times_last == 30 and waits[0].times_last == 0
    # rank 0 waits inside its NCCL kernels: at least one 4 ms sleep per step for 5 steps
    assert waits[0].wait_ns > 5 * 4 * MS
    assert waits[1].wait_ns == 0
    assert abs(rep.clock_offset_ns[1]) < 100_000  # same host: clocks agree to within 0.1 ms
    # what rank 1 did while rank 0 waited: its 15–21 ms `aten::randn` (the Gaps panel names it too), not the whole step
    assert rep.host_activity[0][0] == "step_<n> › aten::randn"
    rows = {r.rank: r for r in rank_table(t)}
    assert rows[0].steps == rows[1].steps == 5
    assert rows[0].collective_wait_ns == waits[0].wait_ns
    assert rows[0].exposed_collective_ns > rows[1].exposed_collective_ns


@pytest.mark.corpus
def test_ranks_command_json() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "ranks", str(CORPUS / "kineto/h200_ddp_2gpu"), "--json"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["command"] == "ranks"
    assert [r["rank"] for r in doc["ranks"]] == [0, 1]
    assert doc["stragglers"]["straggler"] == 1
    assert "Rank 1 is the last to arrive at 30 of 30 collectives" in doc["verdict"]
    assert doc["ranks"][0]["by_op"]["all_reduce"]["count"] == 30


@pytest.mark.corpus
def test_steps_found_in_kineto_and_jax() -> None:
    gpt = find_steps(load_paths([str(CORPUS / "kineto/h200_gpt_train_small.json.gz")]))
    assert [len(s) for s in gpt] == [3]
    jax = find_steps(load_paths([str(CORPUS / "jax/h200_jax_mlp.perfetto_trace.json.gz")]))
    assert [len(s) for s in jax] == [5]


def test_clock_alignment_shifts_only_the_skewed_rank_and_keeps_file_times() -> None:
    from gputop_trace.analysis.ranks.clock import align_rank_clocks

    base = [10 * MS + i * 20 * MS for i in range(5)]
    ends = [b + 3 * MS for b in base]
    r0 = _rank_trace(0, base, ends, 0, [])
    r1 = _rank_trace(1, [b + MS for b in base], ends, 7 * MS, [])
    t = merge_traces([r0, r1])
    a = align_rank_clocks(t)
    assert a.meta.rank_shift_ns == {1: -7 * MS}
    assert any("Rank 1's clock was 7.000 ms ahead of rank 0's" in w for w in a.meta.warnings)
    # collectives now end together on the common axis
    k = a.of_kind(Kind.KERNEL)
    ends_by_rank = [np.sort(a.end_ns[k[a.event_rank[k] == r]]) for r in (0, 1)]
    assert np.array_equal(ends_by_rank[0], ends_by_rank[1])
    # converting back gives the file's own times
    i = int(k[a.event_rank[k] == 1][0])
    j = int(t.of_kind(Kind.KERNEL)[t.event_rank[t.of_kind(Kind.KERNEL)] == 1][0])
    assert a.file_time_ns(int(a.start_ns[i]), 1) == t.file_time_ns(int(t.start_ns[j]), 1)
    # a trace whose clocks agree is returned unchanged
    same = merge_traces([r0, _rank_trace(1, [b + MS for b in base], ends, 0, [])])
    assert align_rank_clocks(same) is same


@pytest.mark.corpus
def test_nsys_export_of_two_processes_on_two_gpus_becomes_two_ranks() -> None:
    t = load_paths([str(CORPUS / "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite")], use_cache=False)
    assert t.meta.ranks == (0, 1)
    gpu_lanes = {(ln.rank, ln.device, ln.pid) for ln in t.lanes if ln.kind == LaneKind.GPU_STREAM}
    assert {(r, d) for r, d, _ in gpu_lanes} == {(0, 0), (1, 1)}
    # every CPU thread goes with the rank of its process
    pids = {r: p for r, _, p in gpu_lanes}
    for ln in t.lanes:
        if ln.kind == LaneKind.CPU_THREAD:
            assert pids[ln.rank] == ln.pid
    rows = {r.rank: r for r in rank_table(t)}
    assert set(rows) == {0, 1} and rows[0].busy_ns > 0 and rows[1].busy_ns > 0


@pytest.mark.corpus
def test_single_process_nsys_export_keeps_one_rank() -> None:
    t = load_paths([str(CORPUS / "nsys/SMcMann__cudaHW__report1.sqlite")], use_cache=False)
    assert t.meta.ranks == (0,)


@pytest.mark.corpus
def test_a_rank_never_waits_inside_a_collective_longer_than_the_collective_ran() -> None:
    """Two ranks of a 128-rank job (external/trace_filter): the last arrival of the loaded ranks can lie far beyond a
    rank's own kernel; its wait in that instance is capped by the instance's duration, and so are the totals."""
    from gputop_trace.analysis.ranks.stragglers import find_stragglers, match_collectives
    from gputop_trace.analysis.ranks.table import rank_table

    t = load_paths([str(CORPUS / "external/trace_filter")], use_cache=False)
    groups = match_collectives(t)
    assert groups and any(len(g.op) for g in groups)
    for g in groups:
        assert np.all(g.wait_ns >= 0)
        assert np.all(g.wait_ns <= g.end_ns - g.arrival_ns)
    rows = rank_table(t, find_stragglers(t))
    for r in rows:
        assert r.collective_wait_ns <= r.collective_ns, r


@pytest.mark.corpus
def test_the_straggler_never_waits_for_itself() -> None:
    """external/trace_filter: rank 1 arrives last in 7 of 10 collectives; in the other 3 it waits for rank 0. Its
    finding names rank 0, never "the straggling rank 1", and its waits split by the rank waited for."""
    from gputop_trace.analysis.findings.assemble import find_findings
    from gputop_trace.report.ranks import straggler_sentence

    t = load_paths([str(CORPUS / "external/trace_filter")], use_cache=False)
    rep = find_stragglers(t)
    assert rep.straggler == 1
    for w in rep.ranks:
        assert w.rank not in w.waited_for
        assert sum(w.waited_for.values()) == w.wait_ns
    coll = [f for f in find_findings(t) if f.kind == "collective_wait"]
    assert {f.evidence["rank"] for f in coll} == {0, 1}
    for f in coll:
        r = f.evidence["rank"]
        assert f"straggling rank {r}" not in f.title and f"rank {r}'s host" not in f.detail, f.title
        assert str(r) not in f.evidence["waited_for"]
    me = next(f for f in coll if f.evidence["rank"] == 1)
    assert "for rank 0" in me.title
    sentence = straggler_sentence(rep, rank_table(t, rep)) or ""
    assert "rank 0 waits" in sentence and "rank 1 waits" not in sentence


@pytest.mark.corpus
def test_an_incomplete_job_is_said_first_in_words_and_in_json(capsys: pytest.CaptureFixture[str]) -> None:
    """external/trace_filter holds 2 ranks of a 128-rank job; kineto/h200_ddp_2gpu/rank0 alone is 1 of 2. Summary
    and ranks say so before anything else, the JSON source block carries it, and the app's Ranks verdict too; the
    whole 2-rank job says nothing."""
    from gputop_trace.analysis.ranks.job import job_coverage
    from gputop_trace.tui.view.ranks_view import ranks_verdict
    from tests.cli_run import run_cli

    two = str(CORPUS / "external/trace_filter")
    for cmd in ("summary", "ranks"):
        code, out, _ = run_cli(capsys, cmd, two)
        assert code == 0
        lines = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith(("gputop-trace", "format:"))]
        assert lines[0].startswith("2 of 128 ranks loaded: waits and stragglers are among these 2 only"), lines[0]
        code, out, _ = run_cli(capsys, cmd, "--json", two)
        job = json.loads(out)["source"]["job"]
        assert job["world_size"] == 128 and job["ranks_loaded"] == 2 and "open the whole folder" in job["note"]
    one = load_paths([str(CORPUS / "kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz")])
    cov = job_coverage(one.meta)
    assert cov is not None and cov.note.startswith("1 of 2 ranks loaded (rank 0)")
    rep = find_stragglers(one)
    assert ranks_verdict(rep, rank_table(one, rep), one).startswith(cov.note)
    assert job_coverage(load_paths([str(CORPUS / "kineto/h200_ddp_2gpu")]).meta) is None
    code, out, _ = run_cli(capsys, "summary", "--json", str(CORPUS / "kineto/h200_ddp_2gpu"))
    assert "job" not in json.loads(out)["source"]
