"""Kernel names for people: the family a kernel belongs to (GEMM, attention, elementwise, reduction, collective,
Triton) and a short label that keeps what tells two instantiations apart (``add·vectorized_elementwise_kernel``).

Pure string functions, no Textual; the families decide the colours of the timeline.
"""

from __future__ import annotations

import re
from enum import IntEnum

from gputop_trace.analysis.kernels import short_name
from gputop_trace.model.kernel_names import collective_op


class Family(IntEnum):
    """What kind of work a kernel does, guessed from its name."""

    OTHER = 0
    GEMM = 1
    ATTENTION = 2
    ELEMENTWISE = 3
    REDUCTION = 4
    COLLECTIVE = 5
    TRITON = 6


FAMILY_LABEL: dict[Family, str] = {
    Family.OTHER: "other",
    Family.GEMM: "GEMM",
    Family.ATTENTION: "attention",
    Family.ELEMENTWISE: "elementwise",
    Family.REDUCTION: "reduction",
    Family.COLLECTIVE: "collective",
    Family.TRITON: "triton",
}

# checked in this order, after the collectives: the first family whose pattern matches wins
_PATTERNS: tuple[tuple[Family, re.Pattern[str]], ...] = (
    (
        Family.ATTENTION,
        re.compile(
            r"flash|fmha|attention|attn|sdpa|mha_|_mha|xformers|paged_?attention|fused_multihead|"
            r"cudnn::fusion::compute_dot_do_o|convert_dq_to",
            re.I,
        ),
    ),
    (Family.TRITON, re.compile(r"^triton|\btriton_", re.I)),
    (
        Family.GEMM,
        re.compile(
            r"gemm|gemv|matmul|\bmma\b|xmma|wgmma|hmma|cutlass|cublas|nvjet|sm\d+_xmma|ampere_|volta_|turing_|"
            r"hopper_|\bdot_?(general|kernel)|conv(olution)?[_\d]|implicit_?convolve|\bgemmk|splitkreduce|"
            r"dgrad|wgrad|fprop_|cudnn.*conv",
            re.I,
        ),
    ),
    (
        Family.REDUCTION,
        re.compile(
            r"reduce|reduction|softmax|norm|argmax|argmin|\bsum\b|_sum_|cumsum|scan|topk|sort|nll_loss|"
            r"cross_entropy|mean_|_mean|var_|welford|histogram|unique|GammaBeta",
            re.I,
        ),
    ),
    (
        Family.ELEMENTWISE,
        re.compile(
            r"elementwise|pointwise|vectorized|unrolled|copy|fill|memset|cast|gather|scatter|index|cat_|concat|"
            r"transpose|permute|\bloop_|fusion|fused_|wrapped_|tanh|gelu|relu|silu|sigmoid|exp|add|mul|sub|div|"
            r"where|clamp|multi_tensor_apply|adam|embedding|dropout|masked|arange|rand|philox",
            re.I,
        ),
    ),
)


def kernel_family(name: str) -> Family:
    """The family of a kernel from its (demangled or raw) name; :attr:`Family.OTHER` when nothing matches.
    Collectives are the kernels :func:`~gputop_trace.model.kernel_names.collective_op` recognises."""
    if collective_op(name) is not None:
        return Family.COLLECTIVE
    for fam, pat in _PATTERNS:
        if pat.search(name):
            return fam
    return Family.OTHER


# Hints that tell instantiations of one template apart: the functor or operation inside the template arguments.
_HINT = re.compile(
    r"\b(?:CUDAFunctor_|Functor_)(\w+?)\b"
    r"|\b([A-Za-z]\w*?)(?:Functor|_functor|_kernel_cuda|CUDAKernelImpl|_kernel_impl|Ops)\b"
)
_FIRST_TEMPLATE_ARG = re.compile(r"<\s*(?:[\w:]*::)?([A-Za-z_]\w*)")
_GENERIC_TAIL = re.compile(r"^(?:Kernel\d*|kernel\d*|device_kernel|global_kernel|kernel_entry)$")
_GENERIC_HINTS = frozenset(
    {
        "Binary",
        "Unary",
        "AUnary",
        "BUnary",
        "BinaryOpScalar",
        "BinaryOpList",
        "func_wrapper",
        "gpu",
        "CUDA",
        "Reduce",
        "Op",
        "Tensor",
    }
)


def kernel_hint(name: str) -> str:
    """The operation a templated kernel applies (``add``, ``Mul``, ``sum``, ``FusedAdamMath``), or for a
    generic wrapper such as ``cutlass::Kernel2<cutlass_80_simt_sgemm_…>`` its first template argument; ``""``
    when the name has no template arguments."""
    if "<" not in name:
        return ""
    args = name[name.index("<") :]
    for m in _HINT.finditer(args):
        cand = m.group(1) or m.group(2) or ""
        if cand and cand not in _GENERIC_HINTS:
            return cand
    tail = short_name(name).rsplit("::", 1)[-1]
    if _GENERIC_TAIL.match(tail):
        first = _FIRST_TEMPLATE_ARG.match(args)
        if first:
            return first.group(1)
    return ""


def _looks_like_cpp(name: str) -> bool:
    return "(" in name or "<" in name or "::" in name


def kernel_label(name: str) -> str:
    """A short label for a kernel: the last part of its short name, prefixed with its hint when there is one
    (``add·vectorized_elementwise_kernel``). Names that are not C++ signatures are kept as they are."""
    if not _looks_like_cpp(name):
        return name.strip()
    base = short_name(name)
    tail = base.rsplit("::", 1)[-1] or base
    hint = kernel_hint(name)
    if hint and _GENERIC_TAIL.match(tail):
        return hint
    return f"{hint}·{tail}" if hint and hint != tail else tail


def kernel_display_name(name: str) -> str:
    """The kernel's short name with its hint, for tables (``at::native::vectorized_elementwise_kernel (add)``)."""
    if not _looks_like_cpp(name):
        return name.strip()
    base = short_name(name)
    hint = kernel_hint(name)
    return f"{base} ({hint})" if hint and hint != base else base


def _cut(name: str, width: int, start: int) -> str:
    """``name`` in ``width`` columns: its head, ``…``, then the part from ``start`` (cut at the end with ``…``
    when it still does not fit)."""
    head = min(start, max(1, (width - 1) // 3))
    rest = name[max(start, head) :]
    room = width - head - 1
    if len(rest) > room:
        rest = rest[: max(1, room - 1)] + "…"
    return name[:head] + "…" + rest


def fit_names(names: list[str], width: int, *, keep_head: bool = False) -> list[str]:
    """Each name in at most ``width`` columns, cut so that names that differ still read differently: a name that
    is too long keeps its head and its tail (``nvjet_sm90_ts…_bz_coopA_NNT``, where kernel names differ most;
    ``keep_head``: its head alone, as lane names read best, ``Stream #14(C…``); a label led by its hint
    (``add·vectorized_elementwise_kernel``) keeps the hint and is cut at the end; names that still collide show,
    after the head, the stretch from where they start to differ (``Hos…ads/554``, ``Hos…ads/631``)."""
    if width < 4:
        return [n[:width] for n in names]

    def first_cut(n: str) -> str:
        if len(n) <= width:
            return n
        if "·" in n or keep_head:
            return n[: width - 1] + "…"
        return _cut(n, width, len(n) - (width - 1 - max(1, (width - 1) // 3)))

    out = [first_cut(n) for n in names]
    groups: dict[str, set[str]] = {}
    for n, label in zip(names, out, strict=True):
        groups.setdefault(label, set()).add(n)
    for label, members in groups.items():
        if len(members) < 2:
            continue
        common = len(_common_prefix(sorted(members)))
        at = max(0, common - 4)  # a few characters of context before the first difference
        fixed = {n: _cut(n, width, at) if len(n) > width else n for n in members}
        out = [fixed.get(n, o) if o == label else o for n, o in zip(names, out, strict=True)]
    return out


def _common_prefix(names: list[str]) -> str:
    first, last = names[0], names[-1]  # sorted: the common prefix of the extremes is everyone's
    i = 0
    while i < min(len(first), len(last)) and first[i] == last[i]:
        i += 1
    return first[:i]
