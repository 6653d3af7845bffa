"""Kernel names for people: the family a kernel belongs to (GEMM, attention, elementwise, reduction, collective,
Triton) and a short label that keeps what tells two instantiations apart (``add·vectorized_elementwise_kernel``).

Pure string functions, no Textual: the command line's tables and the app's panels label kernels with them, and
the families decide the colours of the timeline. Cutting the labels to a width is :mod:`.name_fitting`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
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


_NAMESPACES = re.compile(r"\b(?:[A-Za-z_]\w*::)+")


def kernel_labels(names: Iterable[str]) -> dict[str, str]:
    """:func:`kernel_label` of each name; names whose labels coincide (``Mul·vectorized_elementwise_kernel`` for
    both the ``AUnaryFunctor`` and the ``BinaryFunctor`` instantiation) get their template or parameter list after
    it, namespaces dropped, so that :func:`~gputop_trace.presentation.name_fitting.fit_names` can show where they
    differ."""
    labels = {n: kernel_label(n) for n in dict.fromkeys(names)}
    groups: dict[str, list[str]] = {}
    for n, label in labels.items():
        groups.setdefault(label, []).append(n)
    for label, members in groups.items():
        for n in members if len(members) > 1 else ():
            cut = min((i for i in (n.find("<"), n.find("(")) if i >= 0), default=0)
            labels[n] = f"{label} {_NAMESPACES.sub('', n[cut:]).strip()}"
    return labels


def kernel_display_name(name: str) -> str:
    """The kernel's short name with its hint, for tables (``at::native::vectorized_elementwise_kernel (add)``)."""
    if not _looks_like_cpp(name):
        return name.strip()
    base = short_name(name)
    hint = kernel_hint(name)
    return f"{base} ({hint})" if hint and hint != base else base
