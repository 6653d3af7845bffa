"""Reading Nsight Compute output: .ncu-rep through the ncu-report package and ncu's CSV pages (raw and details, base
and human units, with ==PROF== noise). The ncu -i fallback and finding ncu: test_ncu_report_reader.py."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model.kernel_names import function_name
from gputop_trace.ncu.report_reader import load_report
from gputop_trace.parsers.ncu import kernels_from_csv, parse_number, plain_rule_text, unit_factor


def _text(corpus: Path, name: str) -> str:
    return (corpus / "ncu" / name).read_text()


@pytest.mark.corpus
def test_tc_report_reads_the_cublas_gemm(corpus: Path) -> None:
    rep = load_report(str(corpus / "ncu" / "tc.ncu-rep"))
    assert rep.reader == "ncu_report"
    (k,) = rep.kernels
    assert k.name == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert k.device_name == "NVIDIA H200"
    assert k.duration_ns == 177888.0
    assert k.grid == (2, 66, 1) and k.block == (384, 1, 1)
    # the 4096^3 bf16 GEMM: 2*4096^3 tensor operations
    assert k.metric("sm__ops_path_tensor_src_bf16_dst_fp32.sum") == 2 * 4096**3
    assert len(k.metrics) > 2000
    assert {r.identifier for r in k.rules} >= {"SOLBottleneck", "TheoreticalOccupancy", "SharedMemoryConflicts"}


@pytest.mark.corpus
def test_full_report_names_and_rules(corpus: Path) -> None:
    (k,) = load_report(str(corpus / "ncu" / "full.ncu-rep")).kernels
    assert (k.name, k.demangled, k.mangled) == ("fma_heavy", "demo::fma_heavy(float *, int)", "_ZN4demo9fma_heavyEPfi")
    bottleneck = next(r for r in k.rules if r.identifier == "SOLBottleneck")
    assert bottleneck.type == "OPT" and bottleneck.title == "High Compute Throughput"
    # ncu's @section:Id:Title@ markup is turned into words, as the CSV page prints it
    assert "@section" not in bottleneck.text and "Compute Workload Analysis section" in bottleneck.text
    occ = next(r for r in k.rules if r.identifier == "AchievedOccupancy")
    assert occ.speedup_pct == pytest.approx(43.30, abs=0.01)
    assert "CUDA Best Practices Guide (https://docs.nvidia.com/cuda/cuda-c-best-practices-guide" in occ.text


@pytest.mark.corpus
def test_raw_csv_in_human_and_base_units_matches_the_report(corpus: Path) -> None:
    rep = load_report(str(corpus / "ncu" / "full.ncu-rep")).kernels[0]
    human = kernels_from_csv(_text(corpus, "full_raw.csv"))[0]
    base = kernels_from_csv(_text(corpus, "full_raw_base.csv"))[0]
    assert human.name == base.name == "fma_heavy"
    compared = 0
    for name, v in rep.metrics.items():
        for parsed in (human, base):
            w = parsed.metrics.get(name)
            if w is None:
                continue
            compared += 1
            # the CSV pages print 2 (base) or 6 (human) significant decimals
            assert w == pytest.approx(v, rel=2e-3, abs=6e-3), name
    assert compared > 4000
    assert human.metrics["gpu__time_duration.sum"] == pytest.approx(222752)  # printed as 222.752000 us
    assert human.metrics["dram__bytes_read.sum"] == pytest.approx(5376)  # printed as 5.376000 Kbyte
    assert human.metrics["lts__t_sectors.sum.per_second"] == pytest.approx(297918761.67, rel=1e-6)  # sector/us


@pytest.mark.corpus
def test_details_page_from_a_profiling_run_with_prof_noise(corpus: Path) -> None:
    text = _text(corpus, "details_basic.csv")
    assert text.startswith("==WARNING==")
    (k,) = kernels_from_csv(text)
    assert k.name == "saxpy" and k.grid == (65536, 1, 1)
    assert k.metrics["gpu__time_duration.sum"] == pytest.approx(58656)  # "Duration" in base units (ns)
    assert k.metrics["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(64.85)
    assert k.metrics["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(34.37)
    assert {r.identifier for r in k.rules} == {"SOLBottleneck", "AchievedOccupancy"}
    # a rule row has empty metric fields: it must not become a metric
    assert "Rule Name" not in k.strings and "Estimated Speedup" not in k.metrics


@pytest.mark.corpus
def test_details_page_with_metric_names_and_rules(corpus: Path) -> None:
    (k,) = kernels_from_csv(_text(corpus, "full_details_names.csv"))
    assert k.metrics["gpu__time_duration.sum"] == pytest.approx(222750)  # "us" 222.75
    assert len(k.rules) == 8 and {r.type for r in k.rules} == {"OPT", "INF"}


@pytest.mark.corpus
def test_metrics_page_with_several_kernels_and_nvtx_columns(corpus: Path) -> None:
    kernels = kernels_from_csv(_text(corpus, "metrics_details.csv"))
    assert len(kernels) == 4 and {k.name for k in kernels} == {"saxpy"}
    assert kernels[0].metrics["dram__bytes.sum"] == 182895616
    step = kernels_from_csv(_text(corpus, "nvtx_step.csv"))
    assert [k.name for k in step] == ["saxpy", "saxpy", "saxpy", "fma_heavy", "tiny"]
    assert all(k.nvtx == ("step",) for k in step)
    (warm,) = kernels_from_csv(_text(corpus, "nvtx_warm_raw.csv"))
    assert warm.nvtx == ("warmup",) and warm.metrics["gpu__time_duration.sum"] == 58208


@pytest.mark.corpus
def test_raw_page_from_a_run_with_two_launches(corpus: Path) -> None:
    block = _text(corpus, "error_cases.txt").split("### ")
    raw = next(b for b in block if b and "--page raw --print-units base" in b.splitlines()[0])
    kernels = kernels_from_csv(raw)
    assert [k.index for k in kernels] == [0, 1]
    assert [k.metrics["gpu__time_duration.sum"] for k in kernels] == [57920, 57280]
    assert kernels[0].strings["device__attribute_display_name"] == "NVIDIA H200"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3,189,083,820.66", 3189083820.66),
        ("62.41", 62.41),
        ("0", 0.0),
        ("-1.5e+03", -1500.0),
        ("n/a", None),
        ("", None),
        ("(256, 1, 1)", None),
        ("NVIDIA H200", None),
        ("1,2", None),
    ],
)
def test_parse_number(text: str, value: float | None) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize(
    ("unit", "factor", "base"),
    [
        ("us", 1e3, "ns"),
        ("ms", 1e6, "ns"),
        ("ns", 1.0, "ns"),
        ("Kbyte", 1e3, "byte"),
        ("Mbyte/s", 1e6, "byte/s"),
        ("Ghz", 1e9, "hz"),
        ("sector/us", 1e6, "sector/s"),
        ("Kbyte/cycle", 1e3, "byte/cycle"),
        ("%", 1.0, "%"),
        ("SM", 1.0, "SM"),
        ("register/thread", 1.0, "register/thread"),
    ],
)
def test_unit_factor(unit: str, factor: float, base: str) -> None:
    got_factor, got_base = unit_factor(unit)
    assert got_factor == pytest.approx(factor) and got_base == base


@pytest.mark.parametrize(
    ("demangled", "function"),
    [
        ("void saxpy<float>(int, T1, const T1 *, T1 *)", "saxpy"),
        ("demo::fma_heavy(float *, int)", "fma_heavy"),
        ("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT", "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
        (
            "void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
            "FusedOptimizerTensorListMetadata<4>, float>(at::native::(anonymous namespace)::X<4>, float)",
            "multi_tensor_apply_kernel",
        ),
        (
            "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda("
            "at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, float)",
            "vectorized_elementwise_kernel",
        ),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
    ],
)
def test_function_name(demangled: str, function: str) -> None:
    assert function_name(demangled) == function


def test_rule_markup() -> None:
    assert plain_rule_text("See @section:LaunchStats:Launch Statistics@ and @url:Guide:https://x.y/z#a@.") == (
        "See Launch Statistics and Guide (https://x.y/z#a)."
    )


@pytest.mark.corpus
def test_missing_and_wrong_files_are_clear_errors(tmp_path: Path, corpus: Path) -> None:
    with pytest.raises(TraceError, match="does not exist"):
        load_report(str(tmp_path / "nope.ncu-rep"))
    bad = tmp_path / "trace.ncu-rep"
    bad.write_text('{"traceEvents": []}')
    with pytest.raises(TraceError, match="not an Nsight Compute report"):
        load_report(str(bad))
    with pytest.raises(TraceError, match="holds no ncu metrics"):
        load_report(str(corpus / "ncu" / "full_session.csv"))


@pytest.mark.corpus
def test_truncated_report_is_an_error_not_a_crash(tmp_path: Path, corpus: Path) -> None:
    data = (corpus / "ncu" / "tc.ncu-rep").read_bytes()
    cut = tmp_path / "cut.ncu-rep"
    cut.write_bytes(data[: len(data) * 2 // 5])
    with pytest.raises(TraceError, match=r"no complete kernel results|no profiled kernels|truncated"):
        load_report(str(cut), reader="ncu_report")


@pytest.mark.corpus
def test_nan_free_metrics(corpus: Path) -> None:
    for name in ("tc.ncu-rep", "full.ncu-rep", "fullsaxpy.ncu-rep"):
        (k,) = load_report(str(corpus / "ncu" / name)).kernels
        assert all(math.isfinite(v) for v in k.metrics.values())
