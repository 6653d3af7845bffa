"""Why one kernel is slow, from its Nsight Compute metrics (detectors.md §6): roofline verdict, speed of light,
occupancy and its limiter, warp-stall ranking, tensor-pipe use, cache hit rates, and a plain-words explanation.

Pure functions of an :class:`~gputop_trace.model.ncu.NcuKernel`'s metrics (ncu base units). Definitions:

- FLOPs per precision from thread-instruction counts: FP32 = fadd + fmul + 2·ffma, FP64 likewise with d*,
  FP16 = 2·hadd + 2·hmul + 4·hfma (half2 instructions, as ncu's half roofline counts them); counts are
  ``smsp__sass_thread_inst_executed_op_*_pred_on.sum.per_cycle_elapsed`` × ``smsp__cycles_elapsed.avg``.
  Tensor-core work is ``sm__ops_path_tensor_src_<type>.sum`` (operations, one multiply-add = 2).
- DRAM bytes = ``dram__bytes_read.sum`` + ``dram__bytes_write.sum``; arithmetic intensity I = FLOPs / DRAM bytes.
- Peaks from ncu's own peak metrics (ops per cycle × the measured clock): dense tensor rate of the data type used,
  2·FFMA rate for FP32 ...; DRAM peak = ``dram__bytes.sum.peak_sustained`` × ``dram__cycles_elapsed.avg.per_second``.
  Without those metrics, a table of published peaks for known GPUs (:data:`GPU_PEAKS`).
- Ridge point = peak FLOP/s of the kernel's dominant precision (the one closest to its own peak) ÷ peak DRAM B/s.
- Verdict (``unknown`` when the report lacks both throughput metrics): when both SM and memory throughput are
  under :data:`SATURATED_PCT` (60 %, ncu's own threshold) of peak, the kernel is **latency-bound**: neither unit
  is busy, it waits. Otherwise I ≥ ridge → **compute-bound**, I < ridge → **memory-bound**; when the speed-of-light
  figures contradict the roofline (the busy unit is the other one: integer/load-store work the FLOP roofline cannot
  see, or traffic that stays in L1/L2), the busy unit wins and the explanation says why. Without FLOP counts
  (``--set basic``), the busier unit decides.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from gputop_trace.model.ncu import NcuKernel, NcuRule

#: Throughput (% of peak) under which ncu calls a unit "not saturated" (its SOLBottleneck rule uses 60 %).
SATURATED_PCT = 60.0
#: Kernels shorter than this (ns) give unreliable counter values (replay overhead, counter noise).
TINY_KERNEL_NS = 10_000
#: Tensor-pipe activity (% of peak) from which tensor cores are "heavily" used.
HEAVY_TENSOR_PCT = 60.0
#: "No eligible warp" share (% of active cycles) that counts as starved of ready warps.
STARVED_ISSUE_PCT = 70.0

#: Published peaks used when a report lacks ncu's peak metrics: name fragment → (dense FP16/BF16 tensor TFLOP/s,
#: FP32 TFLOP/s, FP64 TFLOP/s, DRAM TB/s). First match wins (more specific names first).
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


@dataclass(frozen=True)
class KernelVerdict:
    """Everything the drill-down shows for one kernel. Times in ns, rates per second, percentages 0–100,
    NaN where the report lacks the metric."""

    kernel: NcuKernel
    launch: int | None
    duration_ns: float
    sm_pct: float
    memory_pct: float
    dram_pct: float
    l1_hit_pct: float
    l2_hit_pct: float
    tensor_pipe_pct: float
    tensor_use: str
    occupancy: Occupancy
    registers: int | None
    flops: float
    dram_bytes: float
    intensity: float
    ridge: float
    precision: str
    peak_flop_per_s: float
    peak_dram_bytes_per_s: float
    achieved_flop_per_s: float
    peaks_from: str
    work: tuple[PrecisionWork, ...]
    verdict: str
    verdict_basis: str
    explanation: tuple[str, ...]
    stalls: tuple[Stall, ...]
    no_eligible_pct: float
    sectors_per_request: float
    rules: tuple[NcuRule, ...]
    warnings: tuple[str, ...]

    @property
    def name(self) -> str:
        """The kernel's function name."""
        return self.kernel.name


def _m(metrics: Mapping[str, float], *names: str) -> float:
    for n in names:
        v = metrics.get(n)
        if v is not None and math.isfinite(v):
            return float(v)
    return math.nan


def _nz(x: float) -> float:
    return 0.0 if math.isnan(x) else x


def fp_flops(metrics: Mapping[str, float]) -> dict[str, float]:
    """Non-tensor floating-point operations per precision (FP64, FP32, FP16) from thread-instruction counts.
    Empty when the report has no instruction counters (``--set basic``)."""
    cycles = _m(metrics, "smsp__cycles_elapsed.avg")
    if math.isnan(cycles):
        return {}
    out: dict[str, float] = {}

    def rate(op: str) -> float:
        return _m(metrics, f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed")

    for prec, p in (("FP64", "d"), ("FP32", "f")):
        add, mul, fma = rate(f"{p}add"), rate(f"{p}mul"), rate(f"{p}fma")
        if all(math.isnan(x) for x in (add, mul, fma)):
            continue
        out[prec] = (_nz(add) + _nz(mul) + 2 * _nz(fma)) * cycles
    hadd, hmul, hfma = rate("hadd"), rate("hmul"), rate("hfma")
    if not all(math.isnan(x) for x in (hadd, hmul, hfma)):
        out["FP16"] = (2 * _nz(hadd) + 2 * _nz(hmul) + 4 * _nz(hfma)) * cycles
    return out


def tensor_flops(metrics: Mapping[str, float]) -> dict[str, float]:
    """Tensor-core floating-point operations per input type (``BF16``, ``FP16``, ``TF32``, ``FP8``, ``FP64``)."""
    out: dict[str, float] = {}
    for prec, metric, _dense, _sparse in _TENSOR_TYPES:
        v = _m(metrics, metric)
        if prec == "FP8":
            v = _nz(v) + _nz(_m(metrics, "sm__ops_path_tensor_src_fp8_sparsity_on.sum")) if not math.isnan(v) else v
        if not math.isnan(v):
            out[prec] = v
    return out


def _sm_clock(metrics: Mapping[str, float]) -> float:
    return _m(metrics, "sm__cycles_elapsed.avg.per_second", "smsp__cycles_elapsed.avg.per_second")


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
            per_cycle = _m(metrics, f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum.peak_sustained")
            if not math.isnan(per_cycle):
                peaks[prec] = per_cycle * (4 if prec == "FP16" else 2) * clock
        for prec, _metric, dense, sparse in _TENSOR_TYPES:
            used_sparse = any(_nz(_m(metrics, f"sm__ops_path_tensor_{s}.sum")) > 0 for s in sparse)
            names = sparse if used_sparse and sparse else dense
            vals = [_m(metrics, f"sm__ops_path_tensor_{n}.sum.peak_sustained") for n in names]
            vals = [v for v in vals if not math.isnan(v)]
            if vals:
                peaks[f"tensor {prec}"] = max(vals) * clock
    dram = _m(metrics, "dram__bytes.sum.peak_sustained") * _m(metrics, "dram__cycles_elapsed.avg.per_second")
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
    duration_s = _m(metrics, "gpu__time_duration.sum") / 1e9
    peaks, dram_peak, source = peak_rates(metrics, device_name)
    counts = dict(fp_flops(metrics))
    counts.update({f"tensor {k}": v for k, v in tensor_flops(metrics).items()})
    work = []
    for prec, flops in counts.items():
        if flops <= 0:
            continue
        achieved = flops / duration_s if duration_s > 0 else math.nan
        work.append(PrecisionWork(prec, flops, peaks.get(prec, 0.0), achieved))
    work.sort(key=lambda w: (-(_nz(w.pct_of_peak)), -w.flops))
    return work, dram_peak, source


def classify(sm_pct: float, memory_pct: float, intensity: float, ridge: float) -> tuple[str, str, str]:
    """``(verdict, basis, note)``: verdict ``compute-bound`` / ``memory-bound`` / ``latency-bound`` (``unknown``
    when the report has no speed-of-light metrics); basis
    ``roofline`` or ``speed of light``; note says why speed of light overruled the roofline (or ``""``)."""
    if math.isnan(sm_pct) and math.isnan(memory_pct):
        return "unknown", "", ""
    sm, mem = _nz(sm_pct), _nz(memory_pct)
    if sm < SATURATED_PCT and mem < SATURATED_PCT:
        return "latency-bound", "speed of light", ""
    if math.isnan(intensity) or math.isnan(ridge):
        return ("compute-bound" if sm >= mem else "memory-bound"), "speed of light", ""
    roof = "compute-bound" if intensity >= ridge else "memory-bound"
    if roof == "memory-bound" and sm >= SATURATED_PCT > mem:
        return (
            "compute-bound",
            "speed of light",
            "The FLOP roofline puts it on the memory side, but memory is not busy and the SMs are: the work is "
            "integer, address or load/store instructions that the roofline does not count as FLOPs.",
        )
    if roof == "compute-bound" and mem >= SATURATED_PCT > sm:
        return (
            "memory-bound",
            "speed of light",
            "The FLOP roofline puts it on the compute side for DRAM, but the traffic that saturates is inside the "
            "chip (L1, shared memory or L2), not DRAM.",
        )
    return roof, "roofline", ""


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
    achieved = _m(metrics, "sm__warps_active.avg.pct_of_peak_sustained_active")
    theoretical = _m(metrics, "sm__maximum_warps_per_active_cycle_pct")
    limits = {label: int(v) for name, label in _OCC_LIMITS if not math.isnan(v := _m(metrics, name))}
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


_COMPILED = re.compile(r"(^triton_|cudagraph|cuda_graph|^fused_|_fused_\w*triton|^cutlass_.*_fused_)", re.IGNORECASE)


def is_compiled_kernel(name: str) -> bool:
    """Whether a kernel name looks generated by torch.compile / Inductor (``triton_*``) or a CUDA-graph capture."""
    return bool(_COMPILED.search(name))


def kernel_warnings(k: NcuKernel, duration_ns: float, *, compiled: bool = False, has_flops: bool = True) -> list[str]:
    """Reliability and context warnings for one kernel (tiny kernel, >100 % counters, compiled/graph, basic set)."""
    out = []
    if not math.isnan(duration_ns) and duration_ns < TINY_KERNEL_NS:
        out.append(
            f"This kernel ran for {_fmt_time(duration_ns)}: under ~10 µs, replay overhead and counter noise make "
            "ncu's numbers unreliable (values can exceed 100% of peak). Profile a larger launch of it, or read these "
            "figures as rough."
        )
    over = [
        (n, v)
        for n, v in k.metrics.items()
        if n.endswith("pct_of_peak_sustained_elapsed") and ".avg." in n and v > 100.5 and "breakdown" not in n
    ]
    if over:
        n, v = max(over, key=lambda x: x[1])
        out.append(
            f"ncu measured {v:.0f}% of peak for {n}: counters above 100% mean the kernel is too short to measure."
        )
    if compiled or is_compiled_kernel(k.name) or is_compiled_kernel(k.demangled):
        out.append(
            "This kernel was generated by torch.compile (Inductor/Triton) or replayed from a CUDA graph: its name "
            "differs from your source operators. Map it back with TORCH_LOGS=output_code (Inductor prints which ops "
            "each triton_* kernel fuses); ncu profiles graph-launched kernels one node at a time."
        )
    if not has_flops:
        out.append(
            "The report holds no instruction counters (collected with --set basic?), so the roofline cannot count "
            "FLOPs: the verdict comes from speed of light only. Profile with --set detailed or full for the roofline."
        )
    return out


def _fmt_time(ns: float) -> str:
    if ns < 1_000:
        return f"{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{ns / 1e3:.2f} µs"
    return f"{ns / 1e6:.2f} ms"


def _fmt_rate(x: float, unit: str) -> str:
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def _fmt_count(x: float) -> str:
    for factor, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g}{suffix}"
    return f"{x:.3g}"


def format_intensity(x: float) -> str:
    """FLOP/byte with a sensible number of digits."""
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "∞"
    return f"{x:.3g}" if x < 1000 else f"{x:,.0f}"


def explain(v: KernelVerdict, note: str = "") -> list[str]:
    """The verdict in plain words: what limits the kernel and what to check or change, most useful first."""
    out: list[str] = []
    gpu = v.kernel.device_name or "this GPU"
    roof = ""
    if not math.isnan(v.intensity) and not math.isnan(v.ridge):
        roof = (
            f"It does {format_intensity(v.intensity)} FLOP per byte of DRAM traffic "
            f"({_fmt_count(v.flops)} FLOP over {_fmt_count(v.dram_bytes)}B); the ridge point of {gpu} for "
            f"{v.precision} is {format_intensity(v.ridge)} FLOP/byte ({_fmt_rate(v.peak_flop_per_s, 'FLOP/s')} ÷ "
            f"{_fmt_rate(v.peak_dram_bytes_per_s, 'B/s')})."
        )
    sol = f"SMs at {_pct(v.sm_pct)} and memory at {_pct(v.memory_pct)} of peak (DRAM {_pct(v.dram_pct)})"
    top = v.stalls[0] if v.stalls else None
    occ = v.occupancy
    occ_text = (
        f"achieved occupancy {_pct(occ.achieved_pct)} of a theoretical {_pct(occ.theoretical_pct)}"
        + (f", limited by {occ.limiter}" if occ.limiter not in ("none", "unknown") else "")
        + (f" ({v.registers} registers per thread)" if "registers" in occ.limiter and v.registers else "")
    )
    if v.verdict == "compute-bound":
        out.append(f"Compute-bound: {sol}. {roof}".strip())
        if v.tensor_use == "heavy":
            out.append(
                f"Tensor cores are busy {_pct(v.tensor_pipe_pct)} of the time: this is what they are for, and the "
                "kernel is near the GPU's limit. To go faster, do less math (lower precision such as FP8, fewer or "
                "smaller matrix products, work fused into the epilogue) rather than tuning this kernel."
            )
        elif v.precision in ("FP32", "FP64", "FP16") and v.tensor_use == "none":
            w = v.work[0] if v.work else None
            pct = f" ({_pct(w.pct_of_peak)} of the {w.precision} peak)" if w and not math.isnan(w.pct_of_peak) else ""
            out.append(
                f"All the math runs on the {v.precision} pipes{pct} and tensor cores are idle. If this is matrix or "
                "convolution math, tensor cores (TF32, BF16, FP16) have several times the throughput; otherwise "
                "reduce the instruction count (cheaper math, fewer recomputations)."
            )
        if not math.isnan(v.sm_pct) and v.sm_pct < 80 and top is not None:
            out.append(
                f"The SMs are busy but below their peak; warps lose most cycles to {top.label} stalls "
                f"({top.cycles:.1f} cycles per instruction, {_pct(top.share_pct)}): {top.meaning}."
            )
    elif v.verdict == "memory-bound":
        out.append(f"Memory-bound: {sol}. {roof}".strip())
        if not math.isnan(v.dram_pct) and v.dram_pct >= 80:
            out.append(
                "DRAM bandwidth is nearly saturated: the remaining gains are in moving fewer bytes — fuse this kernel "
                "with its neighbours, use a smaller data type, avoid reading the same data twice."
            )
        else:
            out.append(
                f"Bandwidth is not saturated ({_pct(v.dram_pct)} of DRAM peak): more bytes in flight would help — "
                f"{occ_text}."
            )
        out.extend(_coalescing(v))
    elif v.verdict == "unknown":
        out.append(
            "No verdict: the report lacks the speed-of-light metrics (SM and memory throughput). Profile with "
            "--set basic or more (the drill-down uses --set full)."
        )
    else:
        out.append(
            f"Latency-bound: neither compute nor memory is saturated ({sol}; ncu treats anything under "
            f"{SATURATED_PCT:.0f}% as a latency problem). The GPU mostly waits. Check, in order:"
        )
        coal = _coalescing(v)
        out.append("(1) " + (coal[0] if coal else "memory access pattern: no global-load counters in this report."))
        grid_note = ""
        blocks = v.kernel.grid[0] * v.kernel.grid[1] * v.kernel.grid[2] if v.kernel.grid else 0
        sms = int(_nz(_m(v.kernel.metrics, "device__attribute_multiprocessor_count", "launch__sm_count")))
        if blocks and sms and blocks < sms:
            grid_note = f"; the grid has only {blocks} blocks for {sms} SMs, so most SMs sit idle"
        out.append(f"(2) occupancy: {occ_text}{grid_note}.")
        threads = _m(v.kernel.metrics, "launch__thread_count")
        if v.dram_bytes > 0 and not math.isnan(threads) and threads > 0:
            out.append(
                f"(3) redundant DRAM traffic: {_fmt_count(v.dram_bytes)}B for {_fmt_count(threads)} threads "
                f"({v.dram_bytes / threads:.1f} bytes per thread) — compare with what each thread must read and "
                "write once; more means data is loaded again instead of reused."
            )
        if top is not None and top.reason == "long_scoreboard":
            out.append(
                "Warps mostly wait for global memory (long-scoreboard stalls): memory latency is exposed — more "
                "warps in flight, prefetching, or staging data through shared memory hides it."
            )
        if (
            not math.isnan(v.no_eligible_pct)
            and v.no_eligible_pct >= STARVED_ISSUE_PCT
            and not math.isnan(occ.achieved_pct)
            and occ.achieved_pct < 30
        ):
            out.append(
                f"In {_pct(v.no_eligible_pct)} of cycles no warp is ready to issue while few warps are resident: "
                "too little parallelism — launch more threads or give each more independent work."
            )
    if note:
        out.append(note)
    if v.stalls and v.verdict != "latency-bound":
        names = ", ".join(f"{s.label} {_pct(s.share_pct)}" for s in v.stalls[:3])
        out.append(f"Top warp stalls: {names}.")
    elif v.stalls and top is not None and top.reason != "long_scoreboard":
        out.append(f"Warps lose most cycles to {top.label} stalls ({_pct(top.share_pct)}): {top.meaning}.")
    return out


def _coalescing(v: KernelVerdict) -> list[str]:
    spr = v.sectors_per_request
    l1 = f"L1 hit rate {_pct(v.l1_hit_pct)}, L2 hit rate {_pct(v.l2_hit_pct)}"
    if math.isnan(spr):
        return [f"access pattern: {l1}."] if not math.isnan(v.l1_hit_pct) else []
    if spr > 4.5:
        return [
            f"uncoalesced loads: global loads use {spr:.1f} sectors per request (4 is ideal for 32 threads reading "
            f"4 bytes each): make neighbouring threads read neighbouring addresses ({l1})."
        ]
    return [f"loads are coalesced ({spr:.1f} sectors per request; {l1})."]


def _pct(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.1f}%"


def analyze_kernel(kernel: NcuKernel, *, launch: int | None = None, compiled: bool = False) -> KernelVerdict:
    """The full drill-down verdict for one profiled kernel. ``launch`` is which launch of its name it was (when
    known); ``compiled`` marks kernels known to come from torch.compile or a CUDA graph."""
    m = kernel.metrics
    duration = _m(m, "gpu__time_duration.sum")
    sm_pct = _m(m, "sm__throughput.avg.pct_of_peak_sustained_elapsed")
    mem_pct = _m(m, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed")
    dram_pct = _m(
        m,
        "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
    )
    dram_bytes = _nz(_m(m, "dram__bytes_read.sum")) + _nz(_m(m, "dram__bytes_write.sum"))
    if math.isnan(_m(m, "dram__bytes_read.sum")):
        dram_bytes = _m(m, "dram__bytes.sum")
    work, dram_peak, source = precision_work(m, kernel.device_name)
    fp = {w.precision: w for w in work}
    flops = sum(w.flops for w in work if w.precision not in ("tensor INT8",))
    has_counts = bool(fp_flops(m)) or bool(tensor_flops(m))
    dominant = work[0] if work else None
    if dominant is None:
        peaks, _, _ = peak_rates(m, kernel.device_name)
        prec = "FP32" if "FP32" in peaks else ""
        peak = peaks.get(prec, math.nan) if prec else math.nan
    else:
        prec, peak = dominant.precision, dominant.peak_flop_per_s or math.nan
    intensity = flops / dram_bytes if has_counts and dram_bytes and not math.isnan(dram_bytes) else math.nan
    if has_counts and flops > 0 and dram_bytes == 0:
        intensity = math.inf
    ridge = ridge_point(peak, dram_peak)
    verdict, basis, note = classify(sm_pct, mem_pct, intensity, ridge)
    ld_sectors = _m(m, "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum")
    ld_requests = _m(m, "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum")
    spr = ld_sectors / ld_requests if not math.isnan(ld_requests) and ld_requests > 0 else math.nan
    tensor_pct = _m(m, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed")
    regs = _m(m, "launch__registers_per_thread")
    v = KernelVerdict(
        kernel=kernel,
        launch=launch,
        duration_ns=duration,
        sm_pct=sm_pct,
        memory_pct=mem_pct,
        dram_pct=dram_pct,
        l1_hit_pct=_m(m, "l1tex__t_sector_hit_rate.pct"),
        l2_hit_pct=_m(m, "lts__t_sector_hit_rate.pct"),
        tensor_pipe_pct=tensor_pct,
        tensor_use=tensor_use(tensor_pct),
        occupancy=occupancy(m),
        registers=None if math.isnan(regs) else int(regs),
        flops=flops if has_counts else math.nan,
        dram_bytes=dram_bytes,
        intensity=intensity,
        ridge=ridge,
        precision=prec,
        peak_flop_per_s=peak,
        peak_dram_bytes_per_s=dram_peak,
        achieved_flop_per_s=sum(w.achieved_flop_per_s for w in fp.values()) if work else math.nan,
        peaks_from=source,
        work=tuple(work),
        verdict=verdict,
        verdict_basis=basis,
        explanation=(),
        stalls=tuple(rank_stalls(m)),
        no_eligible_pct=_m(m, "smsp__issue_inst0.avg.pct_of_peak_sustained_active"),
        sectors_per_request=spr,
        rules=tuple(sorted(kernel.rules, key=_rule_order)),
        warnings=tuple(kernel_warnings(kernel, duration, compiled=compiled, has_flops=has_counts)),
    )
    from dataclasses import replace

    return replace(v, explanation=tuple(explain(v, note)))


def _rule_order(r: NcuRule) -> tuple[int, float]:
    rank = {"ERR": 0, "WRN": 1, "OPT": 2, "INF": 3}.get(r.type, 4)
    return rank, -(r.speedup_pct or 0.0)
