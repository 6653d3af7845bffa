"""Estimated work of an operator call from its input shapes and types (``record_shapes``): FLOPs of the
matrix-multiply-like operators, bytes moved by the memory-bound ones, and the GPU peak to hold them against.

These are **estimates from shapes**, not measurements:

- GEMMs are exact: ``mm``/``addmm`` ``[M, K] @ [K, N]`` = 2·M·K·N, ``bmm``/``baddbmm`` 2·B·M·K·N (the ``add`` of
  addmm/baddbmm is not counted, as PyTorch's ``with_flops`` does not count it), ``linear`` 2·rows·K·N,
  ``matmul`` from its operands' shapes (batch dimensions broadcast).
- Attention (``scaled_dot_product_attention``, its flash/efficient/cuDNN/math forms and the ``_flash_/_efficient_/
  _cudnn_attention_forward/backward`` calls under them): 4·B·H·L·S·E (QKᵀ and PV;
  causal masking is not known from shapes, so a causal call is counted in full), backward 2.5× the forward.
- Convolution: 2·N·Cout·(Cin/groups)·kh·kw·Hout·Wout with Hout·Wout taken equal to the input's (stride 1, "same"
  padding: the shapes do not say).
- Elementwise ops: one FLOP per output element (as ``with_flops`` counts ``add``/``mul``).
- Bytes moved (memory-bound ops: elementwise, layer/RMS norm, softmax, copies): each tensor input read once plus
  an output of the largest input's size written, at the element size of ``Input type``.

Units: FLOPs and bytes per call; rates in FLOP/s and bytes/s.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from gputop_trace.analysis.roofline.limits import GPU_PEAKS

#: bytes per element of the ``Input type`` names PyTorch writes
DTYPE_BYTES: dict[str, int] = {
    "float": 4, "double": 8, "c10::Half": 2, "c10::BFloat16": 2, "long int": 8, "int": 4, "short int": 2,
    "signed char": 1, "unsigned char": 1, "bool": 1, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::complex<float>": 8, "c10::complex<double>": 16,
}  # fmt: skip
#: precision a peak is looked up for, by ``Input type``
DTYPE_PRECISION: dict[str, str] = {
    "float": "FP32", "double": "FP64", "c10::Half": "FP16", "c10::BFloat16": "BF16",
    "c10::Float8_e4m3fn": "FP8", "c10::Float8_e5m2": "FP8",
}  # fmt: skip

_GEMM = {"aten::mm": (0, 1), "aten::addmm": (1, 2), "aten::bmm": (0, 1), "aten::baddbmm": (1, 2)}
_ATTENTION = re.compile(
    r"^aten::(_?scaled_dot_product_(flash_|efficient_|cudnn_|fused_)?attention(_math)?(_for_cpu)?(_backward)?"
    r"|_(flash|efficient|cudnn)_attention_(forward|backward))$"
)
#: the kernels' own entry points, which take query/key/value as [B, L, H, E] (the ``sdpa`` forms: [B, H, L, E])
_BLHE = frozenset(f"aten::_{k}_attention_{d}" for k in ("flash", "efficient") for d in ("forward", "backward"))
_CONV = re.compile(r"^aten::(conv[123]d|convolution|_convolution|cudnn_convolution|mkldnn_convolution)$")
_ELEMENTWISE = re.compile(
    r"^aten::(add|sub|mul|div|addcmul|addcdiv|lerp|pow|sqrt|rsqrt|exp|log|neg|abs|relu|gelu|silu|sigmoid|tanh"
    r"|threshold_backward|gelu_backward|silu_backward|sigmoid_backward|tanh_backward|where|clamp|maximum|minimum"
    r"|copy|fill|zero|dropout|masked_fill)_?(\.\w+)?$"
)
_NORM = re.compile(
    r"^aten::(native_layer_norm|layer_norm|_fused_rms_norm|rms_norm|native_layer_norm_backward|_softmax|softmax"
    r"|_log_softmax|log_softmax|_softmax_backward_data|_log_softmax_backward_data|native_group_norm"
    r"|native_batch_norm|_fused_rms_norm_backward)$"
)


@dataclass(frozen=True)
class Work:
    """Estimated work of one call: ``flops`` (None when shapes say nothing), ``bytes`` moved (None when the op
    is not memory-bound or the shapes say nothing), ``kind`` ``gemm``/``attention``/``conv``/``elementwise``/
    ``memory``, ``precision`` of its first tensor input (``BF16`` …, ``""`` unknown)."""

    flops: int | None
    bytes: int | None
    kind: str
    precision: str


def _numel(shape: list[int]) -> int:
    return math.prod(shape) if shape else 1


def _tensors(dims: list[object], types: list[str]) -> list[tuple[list[int], str]]:
    """The tensor inputs: (shape, type name); a list of tensors is left out."""
    out = []
    for i, d in enumerate(dims):
        t = types[i] if i < len(types) else ""
        if isinstance(d, list) and d and all(isinstance(x, int) for x in d) and t in DTYPE_BYTES:
            out.append((list(d), t))  # type: ignore[arg-type]
    return out


def _gemm_flops(name: str, dims: list[object]) -> int | None:
    a_i, b_i = _GEMM[name]
    if len(dims) <= b_i:
        return None
    a, b = dims[a_i], dims[b_i]
    if not (isinstance(a, list) and isinstance(b, list)) or len(a) != len(b) or len(a) not in (2, 3):
        return None
    if len(a) == 2:
        return 2 * int(a[0]) * int(a[1]) * int(b[1])
    return 2 * int(a[0]) * int(a[1]) * int(a[2]) * int(b[2])


def _matmul_flops(name: str, dims: list[object]) -> int | None:
    if len(dims) < 2 or not isinstance(dims[0], list) or not isinstance(dims[1], list):
        return None
    a, b = [int(x) for x in dims[0]], [int(x) for x in dims[1]]
    if not a or not b:
        return None
    if name == "aten::linear":  # weight [N, K]
        return 2 * _numel(a[:-1]) * a[-1] * (b[0] if len(b) == 2 else 1)
    if len(b) == 1:
        return 2 * _numel(a)
    batch = _numel(a[:-2]) if len(a) >= len(b) else _numel(b[:-2])
    m = a[-2] if len(a) >= 2 else 1
    return 2 * batch * m * a[-1] * b[-1]


def _attention_flops(name: str, dims: list[object]) -> int | None:
    backward = name.endswith("_backward")
    q_at = 1 if backward else 0  # backward ops take grad_out first
    if len(dims) < q_at + 3:
        return None
    q, k = dims[q_at], dims[q_at + 1]
    if not (isinstance(q, list) and isinstance(k, list)) or len(q) != 4 or len(k) != 4:
        return None
    if name in _BLHE:
        b, l_, h, e = (int(x) for x in q)
        s = int(k[1])
    else:  # [B, H, L, E]
        b, h, l_, e = (int(x) for x in q)
        s = int(k[2])
    fwd = 4 * b * h * l_ * s * e
    return fwd * 5 // 2 if backward else fwd


def _conv_flops(dims: list[object]) -> int | None:
    if len(dims) < 2 or not isinstance(dims[0], list) or not isinstance(dims[1], list):
        return None
    x, w = [int(v) for v in dims[0]], [int(v) for v in dims[1]]
    if len(x) < 3 or len(w) != len(x):
        return None
    return 2 * x[0] * w[0] * _numel(w[1:]) * _numel(x[2:])


def estimate(name: str, dims_text: str | None, types_text: str | None) -> Work:
    """The estimated work of one call of ``name`` with these ``Input Dims`` / ``Input type`` texts."""
    try:
        dims = json.loads(dims_text) if dims_text else []
    except ValueError:
        dims = []
    types = types_text.split(", ") if types_text else []
    tensors = _tensors(dims if isinstance(dims, list) else [], types)
    precision = DTYPE_PRECISION.get(tensors[0][1], "") if tensors else ""
    if not isinstance(dims, list):
        return Work(None, None, "", precision)
    if name in _GEMM:
        return Work(_gemm_flops(name, dims), None, "gemm", precision)
    if name in ("aten::matmul", "aten::linear"):
        return Work(_matmul_flops(name, dims), None, "gemm", precision)
    if _ATTENTION.match(name):
        return Work(_attention_flops(name, dims), None, "attention", precision)
    if _CONV.match(name):
        return Work(_conv_flops(dims), None, "conv", precision)
    elementwise = bool(_ELEMENTWISE.match(name))
    if (elementwise or _NORM.match(name)) and tensors:
        biggest = max(_numel(s) for s, _ in tensors)
        moved = sum(_numel(s) * DTYPE_BYTES[t] for s, t in tensors) + biggest * DTYPE_BYTES[tensors[0][1]]
        return Work(biggest if elementwise else None, moved, "elementwise" if elementwise else "memory", precision)
    return Work(None, None, "", precision)


@dataclass(frozen=True)
class Peak:
    """A GPU's published peak for one precision: FLOP/s (dense, no sparsity) and DRAM bytes/s."""

    gpu: str
    precision: str
    flop_per_s: float
    bytes_per_s: float


def peak_for(gpu_name: str, precision: str) -> Peak | None:
    """The published peak of ``gpu_name`` (a ``deviceProperties`` name) for ``precision`` from
    :data:`~gputop_trace.analysis.roofline.limits.GPU_PEAKS` (FP8 = twice the FP16/BF16 tensor rate on Hopper, as
    the H100/H200 datasheets give it; FP32 is the non-tensor rate); None for an unknown GPU or precision."""
    for fragment, half, fp32, fp64, tbps in GPU_PEAKS:
        if fragment.lower() in gpu_name.lower():
            rate = {"FP16": half, "BF16": half, "FP32": fp32, "FP64": fp64, "FP8": half * 2}.get(precision)
            if rate is None:
                return None
            if precision == "FP8" and fragment == "A100":
                return None  # Ampere has no FP8 tensor cores
            return Peak(gpu_name, precision, rate * 1e12, tbps * 1e12)
    return None
