"""Findings: ranked plain-word conclusions with evidence, on synthetic traces and on the planted corpus patterns."""

from __future__ import annotations

import itertools
import json
from functools import cache

import pytest

from gputop_trace.analysis.findings.assemble import Finding, find_findings
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import CopyKind, Kind, MemKind
from gputop_trace.model.trace import Trace
from tests.conftest import corpus_file
from tests.synthetic import Synth

US = 1_000
MS = 1_000_000


def _by_kind(fs: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for f in fs:
        out.setdefault(f.kind, []).append(f)
    return out


def _steps_with_data_loading() -> Trace:
    """Three steps of 2 ms of kernels separated by 8 ms in a data_load range."""
    s = Synth()
    th, st7 = s.thread(), s.stream()
    t = 0
    for step in range(3):
        if step:
            s.ev(th, Kind.RANGE, "data_load", t, 8 * MS)
            t += 8 * MS
        for _ in range(20):
            la = s.launch(th, t, 5 * US)
            s.kernel(st7, t + 10 * US, 90 * US, launch=la)
            t += 100 * US
    return s.build()


def test_data_loading_gaps_become_the_top_finding_with_evidence() -> None:
    t = _steps_with_data_loading()
    fs = find_findings(t)
    top = fs[0]
    assert top.priority == 1 and top.kind == "idle_gaps"
    assert "data_load" in top.title and "2 gaps" in top.title
    assert top.evidence["cause"] == "data_loading" and top.evidence["gaps"] == 2
    assert top.time_ns == sum(g["dur_ns"] for g in top.evidence["longest"])
    assert top.thresholds["gap_threshold_ns"] == 20 * US
    assert top.interval is not None and top.interval[1] - top.interval[0] > 8 * MS
    assert 0.7 < top.severity < 0.8  # 16 ms of a ~22 ms active span
    assert [f.priority for f in fs] == list(range(1, len(fs) + 1))
    assert all(a.time_ns >= b.time_ns for a, b in itertools.pairwise(fs))


def test_findings_are_ordered_by_time_at_stake_not_by_share() -> None:
    """GPU 1 idles 6 ms of a 10 ms span (60 %), GPU 0 idles 20 ms of a 100 ms span (20 %): the documented order
    is "most time at stake first", so GPU 0's 20 ms comes first although its share is smaller."""
    s = Synth()
    th = s.thread()
    for device, busy_ms, gap_ms, span_ms in ((0, 80, 20, 100), (1, 4, 6, 10)):
        st = s.stream(device=device)
        la = s.launch(th, 0, 5 * US)
        s.kernel(st, 10 * US, busy_ms * MS // 2, launch=la)
        la = s.launch(th, (busy_ms // 2 + gap_ms) * MS, 5 * US)
        s.kernel(st, (busy_ms // 2 + gap_ms) * MS, span_ms * MS - (busy_ms // 2 + gap_ms) * MS, launch=la)
    fs = [f for f in find_findings(s.build()) if f.kind == "idle_gaps"]
    assert [f.device for f in fs] == [0, 1]
    assert fs[0].time_ns > fs[1].time_ns and fs[0].severity < fs[1].severity
    assert fs[0].priority < fs[1].priority


def test_gap_threshold_is_passed_through() -> None:
    fs = find_findings(_steps_with_data_loading(), gap_threshold_ns=10 * MS)
    assert not any(f.kind == "idle_gaps" for f in fs)


def test_no_gpu_activity_is_said_plainly() -> None:
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "step", 0, 10 * MS)
    s.ev(th, Kind.OSRT, "poll", 0, 5 * MS)
    (f,) = find_findings(s.build())
    assert f.kind == "no_gpu_activity" and f.priority == 1 and f.severity == 1.0
    # the kinds in the user's words, singular for one (not "1 range, 1 osrt")
    assert "no kernel" in f.title and "1 annotation range, 1 OS runtime call" in f.detail
    assert "osrt" not in f.detail.lower() and "1 range" not in f.detail


def test_pageable_copy_finding_names_the_range_and_the_fix() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    s.kernel(st7, 0, 100 * US)
    s.ev(th, Kind.RANGE, "save_checkpoint", 100 * US, 30 * MS)
    la = s.launch(th, 110 * US, 25 * MS, "cudaMemcpyAsync")
    s.copy(
        st7,
        200 * US,
        24 * MS,
        direction=CopyKind.DTOH,
        src=MemKind.DEVICE,
        dst=MemKind.PAGEABLE,
        nbytes=32 << 20,
        launch=la,
    )
    s.kernel(st7, 25 * MS, 100 * US)
    fs = _by_kind(find_findings(s.build()))
    (f,) = fs["pageable_async"]
    assert "save_checkpoint" in f.title and "24.0 ms" in f.title
    assert "pin" in f.detail.lower()
    assert f.evidence["copies"][0]["bytes"] == 32 << 20
    # the same copy sits between kernels of its stream, but it is reported once, under its blocking flag
    assert "copy_on_compute_stream" not in fs


def test_host_sync_finding_counts_the_syncs_in_their_range() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    t = 0
    for _ in range(3):
        for _ in range(5):
            la = s.launch(th, t, 5 * US)
            s.kernel(st7, t + 10 * US, 200 * US, launch=la)
            t += 20 * US
        s.ev(th, Kind.RANGE, "log_loss", t, 300 * US)
        s.ev(th, Kind.CPU_OP, "aten::item", t + 10 * US, 250 * US)
        s.ev(th, Kind.API, "cudaStreamSynchronize", t + 20 * US, 230 * US)
        t += 2 * MS
    fs = _by_kind(find_findings(s.build()))
    (f,) = fs["host_sync"]
    assert f.evidence["call"] == "aten::item" and f.evidence["range"] == "log_loss" and f.evidence["count"] == 3
    assert "3 × `aten::item` in `log_loss`" in f.title


@cache
def _corpus(rel: str) -> list[Finding]:
    return find_findings(load_paths([corpus_file(rel)]))


@pytest.mark.corpus
def test_gpt_findings_name_every_planted_pattern() -> None:
    fs = _by_kind(_corpus("kineto/h200_gpt_train_small.json.gz"))
    # the ~8 ms data_load stalls between steps
    data = [f for f in fs["idle_gaps"] if f.evidence["cause"] == "data_loading"]
    assert len(data) == 1 and "data_load" in data[0].title
    assert [round(g["dur_ns"] / MS, 1) for g in data[0].evidence["longest"][:2]] == [12.4, 8.6]
    # the log_loss sync
    (sync,) = fs["host_sync"]
    assert sync.evidence["range"] == "log_loss" and sync.evidence["call"] == "aten::item"
    assert sync.evidence["count"] == 3
    # the ~24 ms pageable DtoH copy in checkpoint_d2h, and the pageable HtoD copies on the compute stream
    (pageable,) = fs["pageable_async"]
    assert "checkpoint_d2h" in pageable.title and "24.0 ms" in pageable.title
    assert "HtoD (pageable) in `data_load` on stream 7 (a compute stream)" in pageable.detail
    # how much of the side-stream pinned copy is hidden: none of it
    (side,) = fs["side_stream_copy"]
    assert side.evidence["hidden_pct"] == 0.0 and "stream 13" in side.title and "pinned HtoD" in side.title
    ranked = _corpus("kineto/h200_gpt_train_small.json.gz")
    assert {ranked[0].kind, ranked[1].kind} == {"pageable_async", "idle_gaps"}


@pytest.mark.corpus
def test_ddp_findings_show_rank_0_waiting_in_nccl_for_rank_1() -> None:
    fs = _corpus("kineto/h200_ddp_2gpu")
    (wait,) = [f for f in fs if f.kind == "collective_wait"]
    assert wait.gpu_rank == 0 and wait.evidence["straggler"] == 1
    assert wait.evidence["method"] == "cross-rank"
    assert 90 * MS < wait.time_ns < 110 * MS  # 108 ms in NCCL kernels on rank 0 vs 8 ms on rank 1
    assert "Rank 0 waits" in wait.title and "rank 1" in wait.title
    assert wait.priority <= 2
    straggler = [f for f in fs if f.kind == "idle_gaps" and f.gpu_rank == 1]
    assert straggler and "aten::randn" in straggler[0].title


@pytest.mark.corpus
def test_jax_findings() -> None:
    fs = _by_kind(_corpus("jax/h200_jax_mlp.perfetto_trace.json.gz"))
    blocked = [f for f in fs["idle_gaps"] if f.evidence["cause"] == "blocked_os"]
    assert blocked and "sleep" in blocked[0].title and blocked[0].evidence["gaps"] == 4
    assert any(f.evidence["call"] == "np.asarray(jax.Array)" for f in fs["host_sync"])


@pytest.mark.corpus
def test_inductor_findings_report_the_slow_first_launch() -> None:
    fs = _by_kind(_corpus("kineto/h200_inductor_compiled.json.gz"))
    (slow,) = fs["slow_launch"]
    assert "cudaLaunchKernel" in slow.title and slow.time_ns > 10 * MS


@pytest.mark.corpus
def test_one_ddp_rank_alone_still_shows_collective_waiting_as_an_estimate() -> None:
    (wait,) = [f for f in _corpus("kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz") if f.kind == "collective_wait"]
    assert wait.evidence["method"] == "single-rank" and wait.priority == 1
    assert 80 * MS < wait.time_ns < 110 * MS
    assert "Open all ranks' traces together" in wait.detail


@pytest.mark.corpus
def test_a_gap_that_is_mostly_one_launch_call_is_a_slow_launch_reported_once() -> None:
    """external/amd_trace: a 6.6 ms gap on GPU 2 is almost all one 6.5 ms `hipLaunchKernel`. It is a slow launch
    (not CPU-bound framework overhead), and the launch detector does not report the same call again."""
    from tests.paths import CORPUS

    t = load_paths([str(CORPUS / "external/amd_trace")], use_cache=False)
    fs = find_findings(t)
    slow = [f for f in fs if f.kind == "slow_launch"]
    assert len(slow) == 1, [f.title for f in fs]
    f = slow[0]
    assert "hipLaunchKernel" in f.title and "torch.compile" not in f.detail and "HIP" in f.detail
    (gap,) = f.evidence["launches"]
    assert gap["launch_ns"] >= 0.5 * gap["gap_ns"] and gap["gap_ns"] > 6_000_000
    for other in fs:
        if other.kind == "idle_gaps":
            assert all(g["start_ns"] != gap["gap_start_ns"] for g in other.evidence["longest"]), other.title
    assert f.time_ns == gap["gap_ns"]


@pytest.mark.corpus
def test_the_gaps_table_calls_the_slow_launch_gap_what_the_finding_calls_it(capsys: pytest.CaptureFixture[str]) -> None:
    """The same 6.63 ms gap of external/amd_trace is 'one slow launch call' in `gaps` (text and JSON) and in the
    summary's idle section, not CPU-bound there while the finding says slow launch; CPU-bound keeps the other 12."""
    from tests.cli_run import run_cli
    from tests.paths import CORPUS

    path = str(CORPUS / "external/amd_trace")
    code, out, _ = run_cli(capsys, "gaps", path, "--json")
    assert code == 0
    (dev,) = json.loads(out)["devices"]
    assert dev["by_cause"]["slow_launch"] == {"count": 1, "total_ns": 6_633_474, "label": "one slow launch call"}
    assert dev["by_cause"]["cpu_bound"]["count"] == 12
    (slow,) = [g for g in dev["gaps"] if g["cause"] == "slow_launch"]
    assert slow["dur_ns"] == 6_633_474 and slow["launch"]["name"] == "hipLaunchKernel"
    code, out, _ = run_cli(capsys, "summary", path)
    text = " ".join(out.split())  # lines break where the terminal's width says
    assert code == 0
    assert "one slow launch call 6.63 ms (1), CPU-bound (framework/Python overhead) 1.65 ms (12)" in text
    assert "6.63 ms one slow launch call: host inside one slow hipLaunchKernel call (6.54 ms)" in text


def test_the_single_rank_wait_estimate_is_robust_to_one_fast_outlier() -> None:
    """30 all-reduce calls of ~11.9 ms and one of 4 µs (357 ms in all): the fastest call would make 349 ms
    "waiting"; the baseline per kernel and message size (lower quartile) leaves only the real excess: 5 calls
    that ran 10 ms longer. Calls of another message size have their own baseline."""
    import numpy as np

    from gputop_trace.analysis.findings.collective import single_rank_wait_estimate

    dur = np.array([11_900_000] * 25 + [21_900_000] * 5 + [4_000] + [1_000_000] * 4, dtype=np.int64)
    names = np.zeros(len(dur), dtype=np.int64)
    sizes = np.array([4096] * 31 + [64] * 4, dtype=np.int64)
    assert single_rank_wait_estimate(names, sizes, dur) == 5 * 10_000_000
    # one size for all: the fastest-call baseline would have made nearly all of it waiting
    assert int((dur[:31] - dur[:31].min()).sum()) > 349 * MS


@pytest.mark.corpus
def test_the_single_rank_collective_wait_says_it_is_an_estimate() -> None:
    (wait,) = [f for f in _corpus("kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz") if f.kind == "collective_wait"]
    assert "an estimate" in wait.title and "It is an estimate" in wait.detail and wait.evidence["estimate"] is True
    assert "fastest" not in wait.title
