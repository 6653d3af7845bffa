"""What a kernel could do and what held it back, from its Nsight Compute metrics (ncu base units): FLOP counts per
precision, the GPU's peaks and ridge point, occupancy and its limiter, warp stalls, tensor-pipe use. The verdict built
from these is in :mod:`gputop_trace.analysis.roofline.verdict`. Definitions:

- FLOPs per precision from thread-instruction counts: FP32 = fadd + fmul + 2·ffma, FP64 likewise with d*,
  FP16 = 2·hadd + 2·hmul + 4·hfma (half2 instructions, as ncu's half roofline counts them); counts are
  ``smsp__sass_thread_inst_executed_op_*_pred_on.sum.per_cycle_elapsed`` × ``smsp__cycles_elapsed.avg``.
  Tensor-core work is ``sm__ops_path_tensor_src_<type>.sum`` (operations, one multiply-add = 2).
- Peaks from ncu's own peak metrics (ops per cycle × the measured clock): dense tensor rate of the data type used,
  2·FFMA rate for FP32 ...; DRAM peak = ``dram__bytes.sum.peak_sustained`` × ``dram__cycles_elapsed.avg.per_second``.
  Without those metrics, a table of published peaks for known GPUs (:data:`GPU_PEAKS`).
- Ridge point = peak FLOP/s ÷ peak DRAM B/s (FLOP per byte).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Throughput (% of peak) under which ncu calls a unit "not saturated" (its SOLBottleneck rule uses 60 %).
SATURATED_PCT = 60.0
#: Tensor-pipe activity (% of peak) from which tensor cores are "heavily" used.
HEAVY_TENSOR_PCT = 60.0

#: Published peaks used when a report lacks ncu's peak metrics: name fragment → (dense FP16/BF16 tensor TFLOP/s,
#: FP32 TFLOP/s, FP64 TFLOP/s, DRAM TB/s). First match wins (more specific names first). Sources, dense figures
#: (the datasheets print the 2:4-sparsity figure, twice these, for the tensor rates): NVIDIA H200 datasheet (SXM:
#: BF16/FP16 1,979 TFLOPS sparse, FP32 67, FP64 34, 4.8 TB/s HBM3e); NVIDIA H100 datasheet (SXM: 1,979 sparse,
#: FP32 67, FP64 34, 3.35 TB/s; PCIe: 1,513 sparse, FP32 51, FP64 26, 2.0 TB/s); NVIDIA A100 datasheet
#: (BF16/FP16 312 dense, FP32 19.5, FP64 9.7, 80GB SXM 2.0 TB/s). FP8 (op_flops.peak_for) = 2 × the FP16 rate.
GPU_PEAKS: tuple[tuple[str, float, float, float, float], ...] = (
    ("H200", 989.0, 67.0, 34.0, 4.8),
    ("H100 PCIe", 756.0, 51.0, 26.0, 2.0),
    ("H100", 989.0, 67.0, 34.0, 3.35),
    ("A100", 312.0, 19.5, 9.7, 2.0),
)

_STALL_RE = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")

#: Warp stall reasons: label and what a high value means.
STALL_MEANING: dict[str, tuple[str, str]] = {
    "long_scoreboard": ("long scoreboard", "waiting for data from global/local memory (L1TEX): memory latency"),
    "short_scoreboard": ("short scoreboard", "waiting for shared memory or special-function (MUFU) results"),
    "barrier": ("barrier", "waiting at __syncthreads() for the rest of the block"),
    "membar": ("memory barrier", "waiting on a memory fence"),
    "mio_throttle": ("MIO throttle", "the memory-input/output queue (shared memory, special math) is full"),
    "lg_throttle": ("LG throttle", "the local/global memory queue is full: too many memory instructions"),
    "tex_throttle": ("TEX throttle", "the texture unit queue is full"),
    "math_pipe_throttle": ("math pipe throttle", "the math pipe is busy: good if the kernel is compute-bound"),
    "wait": ("wait", "a fixed-latency dependency between instructions"),
    "not_selected": ("not selected", "ready but another warp was picked: there is enough parallelism"),
    "dispatch_stall": ("dispatch stall", "the dispatcher held back a ready instruction"),
    "no_instruction": ("no instruction", "instruction cache miss or branch target not fetched"),
    "branch_resolving": ("branch resolving", "waiting for a branch target to be computed"),
    "drain": ("drain", "waiting for memory stores to drain at exit"),
    "imc_miss": ("IMC miss", "immediate-constant cache miss"),
    "sleeping": ("sleeping", "the warp is sleeping (nanosleep or all threads blocked)"),
    "gmma": ("GMMA", "waiting for warpgroup matrix-multiply (tensor core) results"),
    "misc": ("misc", "miscellaneous hardware reasons"),
    "selected": ("selected", "issuing an instruction"),
}

_OCC_LIMITS = (
    ("launch__occupancy_limit_registers", "registers"),
    ("launch__occupancy_limit_shared_mem", "shared memory"),
    ("launch__occupancy_limit_warps", "warps per block"),
    ("launch__occupancy_limit_blocks", "blocks per SM"),
    ("launch__occupancy_limit_barriers", "barriers"),
)

# tensor data types: FLOP metric, dense (sparsity off) peak candidates, sparse peak candidates
_TENSOR_TYPES: tuple[tuple[str, str, tuple[str, ...], tuple[str, ...]], ...] = (
    (
        "BF16",
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum",
        ("op_hgmma_src_bf16_dst_fp32_sparsity_off", "op_hmma_src_bf16_dst_fp32_sparsity_off"),
        ("op_hgmma_src_bf16_dst_fp32_sparsity_on", "op_hmma_src_bf16_dst_fp32_sparsity_on"),
    ),
    (
        "FP16",
        "sm__ops_path_tensor_src_fp16.sum",
        (
            "op_hgmma_src_fp16_sparsity_off",
            "op_hmma_src_fp16_dst_fp16_sparsity_off",
            "op_hmma_src_fp16_dst_fp32_sparsity_off",
        ),
        (
            "op_hgmma_src_fp16_sparsity_on",
            "op_hmma_src_fp16_dst_fp16_sparsity_on",
            "op_hmma_src_fp16_dst_fp32_sparsity_on",
        ),
    ),
    (
        "TF32",
        "sm__ops_path_tensor_src_tf32_dst_fp32.sum",
        ("op_hgmma_src_tf32_dst_fp32_sparsity_off", "op_hmma_src_tf32_dst_fp32_sparsity_off"),
        ("op_hgmma_src_tf32_dst_fp32_sparsity_on", "op_hmma_src_tf32_dst_fp32_sparsity_on"),
    ),
    ("FP8", "sm__ops_path_tensor_src_fp8_sparsity_off.sum", ("src_fp8_sparsity_off",), ("src_fp8_sparsity_on",)),
    ("FP64", "sm__ops_path_tensor_src_fp64.sum", ("src_fp64",), ()),
)


@dataclass(frozen=True)
class PrecisionWork:
    """Floating-point work of one precision: ``flops`` (count), ``peak_flop_per_s`` (0 when unknown),
    ``achieved_flop_per_s`` over the kernel's duration."""

    precision: str
    flops: float
    peak_flop_per_s: float
    achieved_flop_per_s: float

    @property
    def pct_of_peak(self) -> float:
        """Achieved rate as % of this precision's peak (NaN when the peak is unknown)."""
        return 100.0 * self.achieved_flop_per_s / self.peak_flop_per_s if self.peak_flop_per_s > 0 else math.nan


@dataclass(frozen=True)
class Stall:
    """One warp stall reason: ``cycles`` = average cycles a warp spends in it per issued instruction;
    ``share_pct`` = its share of all cycles between two issued instructions (the "selected" cycle included)."""

    reason: str
    label: str
    cycles: float
    share_pct: float
    meaning: str


@dataclass(frozen=True)
class Occupancy:
    """Achieved vs theoretical occupancy (% of the SM's warp slots), what limits the theoretical one (``none``
    when it is 100 %), and the per-resource block limits (blocks per SM)."""

    achieved_pct: float
    theoretical_pct: float
    limiter: str
    limits: Mapping[str, int] = field(default_factory=dict)


def first_metric(metrics: Mapping[str, float], *names: str) -> float:
    """The first of ``names`` the metrics hold with a finite value (in ncu's base units), else NaN."""
    for n in names:
        v = metrics.get(n)
        if v is not None and math.isfinite(v):
            return float(v)
    return math.nan


def nan_to_zero(x: float) -> float:
    """``x``, or 0 when it is NaN (a metric the report lacks counts as none)."""
    return 0.0 if math.isnan(x) else x


def fp_flops(metrics: Mapping[str, float]) -> dict[str, float]:
    """Non-tensor floating-point operations per precision (FP64, FP32, FP16) from thread-instruction counts.
    Empty when the report has no instruction counters (``--set basic``)."""
    cycles = first_metric(metrics, "smsp__cycles_elapsed.avg")
    if math.isnan(cycles):
        return {}
    out: dict[str, float] = {}

    def rate(op: str) -> float:
        return first_metric(metrics, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")

    for prec, p in (("FP64", "d"), ("FP32", "f")):
        add, mul, fma = rate(f"{p}add"), rate(f"{p}mul"), rate(f"{p}fma")
        if all(math.isnan(x) for x in (add, mul, fma)):
            continue
        out[prec] = (nan_to_zero(add) + nan_to_zero(mul) + 2 * nan_to_zero(fma)) * cycles
    hadd, hmul, hfma = rate("hadd"), rate("hmul"), rate("hfma")
    if not all(math.isnan(x) for x in (hadd, hmul, hfma)):
        out["FP16"] = (2 * nan_to_zero(hadd) + 2 * nan_to_zero(hmul) + 4 * nan_to_zero(hfma)) * cycles
    return out


def tensor_flops(metrics: Mapping[str, float]) -> dict[str, float]:
    """Tensor-core floating-point operations per input type (``BF16``, ``FP16``, ``TF32``, ``FP8``, ``FP64``)."""
    out: dict[str, float] = {}
    for prec, metric, _dense, _sparse in _TENSOR_TYPES:
        v = first_metric(metrics, metric)
        if prec == "FP8":
            v = (
                nan_to_zero(v) + nan_to_zero(first_metric(metrics, "sm__ops_path_tensor_src_fp8_sparsity_on.sum"))
                if not math.isnan(v)
                else v
            )
        if not math.isnan(v):
            out[prec] = v
    return out


def _sm_clock(metrics: Mapping[str, float]) -> float:
    return first_metric(metrics, "sm__cycles_elapsed.avg.per_second", "smsp__cycles_elapsed.avg.per_second")


def _table_peaks(device_name: str) -> tuple[float, float, float, float] | None:
    for fragment, tensor, fp32, fp64, dram in GPU_PEAKS:
        if fragment.lower() in device_name.lower():
            return tensor * 1e12, fp32 * 1e12, fp64 * 1e12, dram * 1e12
    return None


def peak_rates(metrics: Mapping[str, float], device_name: str = "") -> tuple[dict[str, float], float, str]:
    """Peak FLOP/s per precision (keys as in :func:`fp_flops` and ``tensor <type>``), peak DRAM bytes/s, and where
    they came from (``ncu`` peak metrics or the ``table`` of published figures; ``""`` when unknown)."""
    clock = _sm_clock(metrics)
    peaks: dict[str, float] = {}
    if not math.isnan(clock):
        for prec, op in (("FP64", "dfma"), ("FP32", "ffma"), ("FP16", "hfma")):
            per_cycle = first_metric(metrics, f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained")
            if not math.isnan(per_cycle):
                peaks[prec] = per_cycle * (4 if prec == "FP16" else 2) * clock
        for prec, _metric, dense, sparse in _TENSOR_TYPES:
            used_sparse = any(nan_to_zero(first_metric(metrics, f"sm__ops_path_tensor_{s}.sum")) > 0 for s in sparse)
            names = sparse if used_sparse and sparse else dense
            vals = [first_metric(metrics, f"sm__ops_path_tensor_{n}.sum.peak_sustained") for n in names]
            vals = [v for v in vals if not math.isnan(v)]
            if vals:
                peaks[f"tensor {prec}"] = max(vals) * clock
    dram = first_metric(metrics, "dram__bytes.sum.peak_sustained") * first_metric(
        metrics, "dram__cycles_elapsed.avg.per_second"
    )
    if peaks and not math.isnan(dram):
        return peaks, dram, "ncu"
    table = _table_peaks(device_name)
    if table is None:
        return peaks, (dram if not math.isnan(dram) else math.nan), "ncu" if peaks else ""
    tensor, fp32, fp64, tb = table
    for prec in ("BF16", "FP16"):
        peaks.setdefault(f"tensor {prec}", tensor)
    peaks.setdefault("tensor TF32", tensor / 2)
    peaks.setdefault("tensor FP8", tensor * 2)
    peaks.setdefault("FP32", fp32)
    peaks.setdefault("FP64", fp64)
    peaks.setdefault("FP16", fp32 * 2)
    return peaks, (dram if not math.isnan(dram) else tb), "table"


def ridge_point(peak_flop_per_s: float, peak_bytes_per_s: float) -> float:
    """FLOP per byte at which a kernel stops being limited by DRAM bandwidth and starts being limited by math."""
    if not peak_bytes_per_s or math.isnan(peak_bytes_per_s) or math.isnan(peak_flop_per_s):
        return math.nan
    return peak_flop_per_s / peak_bytes_per_s


def precision_work(metrics: Mapping[str, float], device_name: str = "") -> tuple[list[PrecisionWork], float, str]:
    """Work per precision (only those that did any), peak DRAM B/s and where peaks came from; the list is sorted
    with the dominant precision (highest % of its own peak, else most FLOPs) first."""
    duration_s = first_metric(metrics, "gpu__time_duration.sum") / 1e9
    peaks, dram_peak, source = peak_rates(metrics, device_name)
    counts = dict(fp_flops(metrics))
    counts.update({f"tensor {k}": v for k, v in tensor_flops(metrics).items()})
    work = []
    for prec, flops in counts.items():
        if flops <= 0:
            continue
        achieved = flops / duration_s if duration_s > 0 else math.nan
        work.append(PrecisionWork(prec, flops, peaks.get(prec, 0.0), achieved))
    work.sort(key=lambda w: (-(nan_to_zero(w.pct_of_peak)), -w.flops))
    return work, dram_peak, source


def rank_stalls(metrics: Mapping[str, float]) -> list[Stall]:
    """Warp stall reasons sorted by cycles per issued instruction (largest first), without ``selected``."""
    values: dict[str, float] = {}
    for name, v in metrics.items():
        m = _STALL_RE.match(name)
        if m and math.isfinite(v):
            values[m.group(1)] = float(v)
    total = sum(values.values())
    out = []
    for reason, v in values.items():
        if reason == "selected" or v <= 0:
            continue
        label, meaning = STALL_MEANING.get(reason, (reason.replace("_", " "), ""))
        out.append(Stall(reason, label, v, 100.0 * v / total if total > 0 else math.nan, meaning))
    out.sort(key=lambda s: -s.cycles)
    return out


def occupancy(metrics: Mapping[str, float]) -> Occupancy:
    """Achieved and theoretical occupancy and the resource that limits the theoretical one."""
    achieved = first_metric(metrics, "sm__warps_active.avg.pct_of_peak_sustained_active")
    theoretical = first_metric(metrics, "sm__maximum_warps_per_active_cycle_pct")
    limits = {label: int(v) for name, label in _OCC_LIMITS if not math.isnan(v := first_metric(metrics, name))}
    if not limits:
        limiter = "unknown"
    elif not math.isnan(theoretical) and theoretical >= 99.95:
        limiter = "none"
    else:
        low = min(limits.values())
        limiter = " and ".join(label for label, v in limits.items() if v == low)
    return Occupancy(achieved, theoretical, limiter, limits)


def tensor_use(pct: float) -> str:
    """``heavy`` (≥ 60 % of peak), ``moderate`` (≥ 10 %), ``light`` (> 0.5 %) or ``none``."""
    if math.isnan(pct) or pct <= 0.5:
        return "none"
    if pct >= HEAVY_TENSOR_PCT:
        return "heavy"
    return "moderate" if pct >= 10 else "light"
