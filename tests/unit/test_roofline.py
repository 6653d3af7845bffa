"""The roofline verdict (detectors.md §6) on the real corpus reports and on exact synthetic edge cases."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gputop_trace.analysis.roofline.limits import (
    SATURATED_PCT,
    occupancy,
    peak_rates,
    rank_stalls,
    ridge_point,
    tensor_use,
)
from gputop_trace.analysis.roofline.verdict import analyze_kernel, classify, is_compiled_kernel
from gputop_trace.model.ncu import NcuKernel
from gputop_trace.ncu.report_reader import load_report


def _kernel(corpus: Path, name: str) -> NcuKernel:
    (k,) = load_report(str(corpus / "ncu" / name)).kernels
    return k


@pytest.mark.corpus
def test_cublas_gemm_is_compute_bound_with_heavy_tensor_use(corpus: Path) -> None:
    k = _kernel(corpus, "tc.ncu-rep")
    v = analyze_kernel(k)
    assert v.verdict == "compute-bound" and v.verdict_basis == "roofline"
    assert v.tensor_use == "heavy" and v.tensor_pipe_pct > 85
    assert v.precision == "tensor BF16"
    # 2·4096³ FLOPs over the DRAM bytes ncu measured
    dram = k.metrics["dram__bytes_read.sum"] + k.metrics["dram__bytes_write.sum"]
    assert v.flops == pytest.approx(2 * 4096**3)
    assert v.intensity == pytest.approx(2 * 4096**3 / dram)
    # ridge = dense bf16 tensor peak (ops/cycle × SM clock) ÷ DRAM peak (bytes/cycle × DRAM clock)
    peak = (
        k.metrics["sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"]
        * k.metrics["sm__cycles_elapsed.avg.per_second"]
    )
    bw = k.metrics["dram__bytes.sum.peak_sustained"] * k.metrics["dram__cycles_elapsed.avg.per_second"]
    assert v.ridge == pytest.approx(peak / bw)
    assert 150 < v.ridge < 250 and v.intensity > v.ridge
    assert v.occupancy.limiter == "registers and shared memory"
    assert v.occupancy.theoretical_pct == pytest.approx(18.75)
    text = " ".join(v.explanation)
    assert "Tensor cores are busy 90.0%" in text and "ridge point" in text
    assert v.stalls[0].reason == "barrier"
    assert not v.warnings


@pytest.mark.corpus
def test_fma_heavy_verdict_comes_from_its_numbers(corpus: Path) -> None:
    k = _kernel(corpus, "full.ncu-rep")
    m = k.metrics
    v = analyze_kernel(k)
    # FP32 FLOPs = (fadd + fmul + 2·ffma) per elapsed cycle × elapsed cycles
    per_cycle = sum(
        f * m[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"]
        for op, f in (("fadd", 1), ("fmul", 1), ("ffma", 2))
    )
    fp32 = per_cycle * m["smsp__cycles_elapsed.avg"]
    # app.cu: 1056 blocks × 256 threads × 4096 iterations × 4 FMAs × 2 FLOP
    assert fp32 == pytest.approx(1056 * 256 * 4096 * 4 * 2, rel=2e-3)
    assert v.precision == "FP32"
    dram = m["dram__bytes_read.sum"] + m["dram__bytes_write.sum"]
    assert v.intensity == pytest.approx(v.flops / dram)
    fp32_peak = (
        2
        * m["sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"]
        * m["sm__cycles_elapsed.avg.per_second"]
    )
    assert v.ridge == pytest.approx(fp32_peak / v.peak_dram_bytes_per_s)
    expected = "compute-bound" if v.intensity >= v.ridge else "memory-bound"
    assert m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] >= SATURATED_PCT
    assert v.verdict == expected == "compute-bound"
    assert v.tensor_use == "none"
    assert v.occupancy.limiter == "none" and v.occupancy.achieved_pct == pytest.approx(56.7, abs=0.05)
    assert "FP32 pipes" in " ".join(v.explanation)
    assert v.work[0].pct_of_peak == pytest.approx(59.5, abs=0.2)  # ncu's own rule says 59% of FP32 peak


@pytest.mark.corpus
def test_saxpy_is_memory_bound_with_coalesced_loads(corpus: Path) -> None:
    v = analyze_kernel(_kernel(corpus, "fullsaxpy.ncu-rep"))
    assert v.verdict == "memory-bound"
    assert v.intensity == pytest.approx(2 / 12, rel=0.15)  # 2 FLOP per 12 bytes (x read, y read + written)
    assert v.sectors_per_request == pytest.approx(4.0)
    assert v.stalls[0].reason == "long_scoreboard"
    assert "coalesced" in " ".join(v.explanation)


def test_classify_thresholds() -> None:
    assert classify(30.0, 20.0, 100.0, 10.0)[0] == "latency-bound"
    assert classify(SATURATED_PCT, 10.0, 100.0, 10.0) == ("compute-bound", "roofline", "")
    assert classify(10.0, 80.0, 0.2, 10.0) == ("memory-bound", "roofline", "")
    # the roofline says memory, but only the SMs are busy: integer/address work the FLOP roofline cannot see
    verdict, basis, note = classify(85.0, 20.0, 0.5, 13.0)
    assert (verdict, basis) == ("compute-bound", "speed of light") and "integer" in note
    verdict, basis, note = classify(20.0, 85.0, 500.0, 13.0)
    assert (verdict, basis) == ("memory-bound", "speed of light") and "L1" in note
    assert classify(70.0, 65.0, math.nan, math.nan)[0] == "compute-bound"
    assert classify(math.nan, math.nan, 1.0, 1.0)[0] == "unknown"


def _synthetic(name: str = "k", /, **metrics: float) -> NcuKernel:
    return NcuKernel(index=0, name=name, metrics=metrics)


def test_tiny_kernel_and_counters_above_peak_are_flagged() -> None:
    k = NcuKernel(
        index=0,
        name="tiny",
        metrics={
            "gpu__time_duration.sum": 2050.0,
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": 0.0,
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 0.7,
            "l1tex__throughput.avg.pct_of_peak_sustained_elapsed": 118.65,
        },
    )
    v = analyze_kernel(k)
    assert v.verdict == "latency-bound"
    assert any("2.05 µs" in w and "unreliable" in w for w in v.warnings)
    assert any("119% of peak" in w for w in v.warnings)
    assert any("--set basic" in w for w in v.warnings)  # no instruction counters in this report


@pytest.mark.parametrize(
    ("name", "compiled"),
    [
        ("triton_poi_fused_add_0", True),
        ("triton_per_fused_addmm_gelu_native_layer_norm_0", True),
        ("cudagraph_replay_kernel", True),
        ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", False),
        ("vectorized_elementwise_kernel", False),
    ],
)
def test_compiled_kernel_names(name: str, compiled: bool) -> None:
    assert is_compiled_kernel(name) is compiled
    v = analyze_kernel(_synthetic(name, **{"gpu__time_duration.sum": 50_000.0}))
    assert any("torch.compile" in w for w in v.warnings) is compiled


def test_compiled_flag_from_the_trace() -> None:
    v = analyze_kernel(_synthetic(**{"gpu__time_duration.sum": 50_000.0}), compiled=True)
    assert any("CUDA graph" in w for w in v.warnings)


def test_latency_bound_explanation_checks_coalescing_occupancy_and_redundant_bytes() -> None:
    k = NcuKernel(
        index=0,
        name="gather",
        grid=(64, 1, 1),
        block=(128, 1, 1),
        metrics={
            "gpu__time_duration.sum": 80_000.0,
            "sm__throughput.avg.pct_of_peak_sustained_elapsed": 12.0,
            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 28.0,
            "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": 28.0,
            "dram__bytes_read.sum": 6.0e6,
            "dram__bytes_write.sum": 2.0e6,
            "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum": 32_000.0,
            "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum": 1_000.0,
            "l1tex__t_sector_hit_rate.pct": 3.0,
            "sm__warps_active.avg.pct_of_peak_sustained_active": 9.0,
            "sm__maximum_warps_per_active_cycle_pct": 50.0,
            "launch__occupancy_limit_registers": 4.0,
            "launch__occupancy_limit_shared_mem": 8.0,
            "launch__occupancy_limit_warps": 16.0,
            "launch__registers_per_thread": 128.0,
            "launch__thread_count": 8192.0,
            "device__attribute_multiprocessor_count": 132.0,
            "smsp__issue_inst0.avg.pct_of_peak_sustained_active": 92.0,
            "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": 40.0,
            "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
            "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": 2.0,
        },
    )
    v = analyze_kernel(k)
    text = "\n".join(v.explanation)
    assert v.verdict == "latency-bound"
    assert "(1) uncoalesced loads: global loads use 32.0 sectors per request" in text
    assert "(2) occupancy: achieved occupancy 9.0% of a theoretical 50.0%, limited by registers" in text
    assert "only 64 blocks for 132 SMs" in text
    assert "(3) redundant DRAM traffic: 8MB for 8.19k threads (976.6 bytes per thread)" in text
    assert "long-scoreboard" in text and "too little parallelism" in text
    assert v.occupancy.limiter == "registers"
    assert v.stalls[0].share_pct == pytest.approx(100 * 40 / 43)


def test_stalls_exclude_issuing_and_sum_to_at_most_100() -> None:
    m = {
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio": 3.0,
        "smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio": 1.0,
        "smsp__average_warps_issue_stalled_membar_per_issue_active.ratio": 0.0,
    }
    stalls = rank_stalls(m)
    assert [s.reason for s in stalls] == ["barrier", "mio_throttle"]
    assert sum(s.share_pct for s in stalls) == pytest.approx(80.0)


def test_occupancy_limiter_ties_and_full_occupancy() -> None:
    full = occupancy({"sm__maximum_warps_per_active_cycle_pct": 100.0, "launch__occupancy_limit_warps": 8.0})
    assert full.limiter == "none"
    tie = occupancy(
        {
            "sm__maximum_warps_per_active_cycle_pct": 25.0,
            "launch__occupancy_limit_registers": 2.0,
            "launch__occupancy_limit_warps": 2.0,
            "launch__occupancy_limit_blocks": 32.0,
        }
    )
    assert tie.limiter == "registers and warps per block"
    assert occupancy({}).limiter == "unknown"


def test_published_peaks_when_the_report_has_none() -> None:
    peaks, bw, source = peak_rates({}, "NVIDIA H200")
    assert source == "table"
    assert ridge_point(peaks["tensor BF16"], bw) == pytest.approx(989 / 4.8)  # ≈ 206 FLOP/byte
    a100_peaks, a100_bw, _ = peak_rates({}, "NVIDIA A100-SXM4-80GB")
    assert ridge_point(a100_peaks["tensor FP16"], a100_bw) == pytest.approx(312 / 2.0)
    assert peak_rates({}, "Some GPU")[2] == ""


def test_tensor_use_levels() -> None:
    assert [tensor_use(x) for x in (90.0, 60.0, 30.0, 2.0, 0.0, math.nan)] == [
        "heavy",
        "heavy",
        "moderate",
        "light",
        "none",
        "none",
    ]


def test_report_without_throughput_has_no_verdict() -> None:
    v = analyze_kernel(_synthetic(**{"gpu__time_duration.sum": 58_000.0}))
    assert v.verdict == "unknown" and "No verdict" in v.explanation[0]
