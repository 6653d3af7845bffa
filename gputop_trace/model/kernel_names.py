"""Kernel names: shortening C++ kernel signatures (shared by the kernel table, the app and the ncu name filter),
recognising collective kernels (shared by the rank analyses and the timeline's kernel colours), and the name two
runs of one kernel share (the run comparison)."""

from __future__ import annotations

import re
from dataclasses import dataclass


def qualified_name(signature: str) -> str:
    """The qualified function name of a demangled signature: no return type, anonymous-namespace parts,
    template arguments or parameters. ``void at::native::(anonymous namespace)::k<4>(int)`` →
    ``at::native::k``; a name that is not a C++ signature comes back stripped of surrounding space."""
    s = signature.strip().replace("(anonymous namespace)::", "").replace("{anonymous}::", "")
    out: list[str] = []
    depth = 0
    for ch in s:
        if ch == "<":
            depth += 1
        elif ch == ">" and depth:
            depth -= 1
        elif depth == 0:
            if ch == "(" and "".join(out).strip():
                break
            out.append(ch)
    core = "".join(out).strip()
    if " " in core and ("(" in s or "<" in s or "::" in s):  # a return type before a C++ signature
        core = core.rsplit(" ", 1)[-1]
    return core or signature.strip()


def function_name(signature: str) -> str:
    """The bare function name (the last component of :func:`qualified_name`), as ncu's
    ``--kernel-name-base function`` matches it: ``vectorized_elementwise_kernel``."""
    core = qualified_name(signature)
    return core.rsplit("::", 1)[-1] if "::" in core else core


#: Triton's specialization suffix (``_0d1d2d3de`` : argument indices with their divisibility flags) and a
#: trailing hexadecimal hash of at least 8 digits holding a digit (``_5f3a9c1e``): both change from one compile to
#: the next while the kernel stays the same.
_TRITON_SIGNATURE = re.compile(r"_(?:\d+(?:de|d|c|e)){2,}\d*$")
_HEX_HASH = re.compile(r"_(?=[0-9a-f]*\d)[0-9a-f]{8,}$")


def normalized_kernel_name(name: str) -> str:
    """The name two runs of the same kernel share: :func:`qualified_name` (no return type, template arguments or
    parameters) without a Triton specialization suffix or a trailing hash. ``void k<128, float>(float*)`` →
    ``k``; ``_attn_fwd_0d1d2d3de4de`` → ``_attn_fwd``; ``fused_mm_3a9c1e5f77`` → ``fused_mm``. Inductor's kernel
    index (``triton_poi_fused_add_0``) is kept: it tells different kernels of one graph apart."""
    core = qualified_name(name)
    for pattern in (_TRITON_SIGNATURE, _HEX_HASH):
        cut = pattern.sub("", core)
        if cut:
            core = cut
    return core


#: Collective operations by the word a name spells them with (lowercase, no separators).
COLLECTIVE_WORDS: dict[str, str] = {
    "allreduce": "all_reduce",
    "allgather": "all_gather",
    "reducescatter": "reduce_scatter",
    "broadcast": "broadcast",
    "alltoall": "all_to_all",
    "sendrecv": "send_recv",
    "reduce": "reduce",
    "send": "send",
    "recv": "recv",
}
# NCCL / RCCL kernels: ``ncclDevKernel_AllReduce_Sum_f32_RING_LL``, ``ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t``
_LIBRARY_OP = re.compile(
    r"(?:nccl|rccl)\w*?(AllReduce|AllGather|ReduceScatter|Broadcast|AllToAll|SendRecv|Reduce|Send|Recv)",
    re.IGNORECASE,
)
# collective kernels outside NCCL/RCCL, by the operation their name says: the custom all-reduces of vLLM
# (``cross_device_reduce_1stage``), TensorRT-LLM (``oneShotAllReduceKernel``) and PyTorch symmetric memory
# (``one_shot_all_reduce_kernel``, ``multimem_all_reduce_kernel``), and other all-gather / all-to-all kernels
_CUSTOM_OP: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("all_reduce", re.compile(r"all_?reduce|cross_device_reduce", re.IGNORECASE)),
    ("all_gather", re.compile(r"all_?gather", re.IGNORECASE)),
    ("reduce_scatter", re.compile(r"reduce_?scatter", re.IGNORECASE)),
    ("all_to_all", re.compile(r"all_?to_?all", re.IGNORECASE)),
    ("broadcast", re.compile(r"broadcast_kernel", re.IGNORECASE)),
)
# communication kernels whose name does not say the operation
_OTHER_COMMUNICATION = re.compile(r"nccl|rccl|cross_device|\bnvshmem|one_shot_all|two_shot_all|multimem", re.IGNORECASE)


def collective_op(name: str) -> str | None:
    """The collective a kernel (demangled or raw name) stands for, one of the values of :data:`COLLECTIVE_WORDS`
    or ``"other"`` for a communication kernel whose name does not say which; None when it is not a collective."""
    m = _LIBRARY_OP.search(name)
    if m:
        return COLLECTIVE_WORDS[m.group(1).lower()]
    for op, pattern in _CUSTOM_OP:
        if pattern.search(name):
            return op
    if _OTHER_COMMUNICATION.search(name):
        return "other"
    return None


# ---- torch.compile (Inductor) kernels -------------------------------------------------------------------------

#: Inductor's kernel categories, by the three letters its kernel names start with (``triton_red_…``): the
#: ``@triton_heuristics.<category>`` decorator of the generated source, cut to three letters.
INDUCTOR_KINDS: dict[str, str] = {
    "poi": "pointwise",
    "red": "reduction",
    "per": "persistent reduction",
    "coo": "cooperative reduction",
    "tem": "template",
    "for": "foreach",
    "spl": "split scan",
    "unk": "unknown",
}
#: ATen operator names with underscores that Inductor writes into fused kernel names (``fused_native_layer_norm``),
#: so a name's words can be split back into operators; other words are one operator each.
_ATEN_WORDS = frozenset(
    [
        "native_layer_norm",
        "prepare_softmax_online",
        "native_layer_norm_backward",
        "native_batch_norm",
        "native_batch_norm_backward",
        "native_group_norm",
        "native_group_norm_backward",
        "native_dropout",
        "native_dropout_backward",
        "_native_batch_norm_legit",
        "_native_batch_norm_legit_functional",
        "_native_batch_norm_legit_no_training",
        "layer_norm",
        "batch_norm",
        "group_norm",
        "_softmax",
        "_softmax_backward_data",
        "_log_softmax",
        "_log_softmax_backward_data",
        "log_softmax",
        "_to_copy",
        "_unsafe_view",
        "_unsafe_index",
        "_unsafe_index_put",
        "index_put",
        "index_select",
        "index_add",
        "index_copy",
        "index_fill",
        "scatter_add",
        "scatter_reduce",
        "slice_scatter",
        "select_scatter",
        "diagonal_scatter",
        "as_strided_scatter",
        "as_strided",
        "constant_pad_nd",
        "reflection_pad2d",
        "replication_pad2d",
        "embedding_dense_backward",
        "gelu_backward",
        "silu_backward",
        "sigmoid_backward",
        "tanh_backward",
        "threshold_backward",
        "hardtanh_backward",
        "hardswish_backward",
        "leaky_relu",
        "leaky_relu_backward",
        "clamp_min",
        "clamp_max",
        "var_mean",
        "nll_loss_forward",
        "nll_loss_backward",
        "nll_loss2d_forward",
        "nll_loss2d_backward",
        "mse_loss",
        "smooth_l1_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "max_pool2d_with_indices",
        "max_pool2d_with_indices_backward",
        "avg_pool2d",
        "avg_pool2d_backward",
        "adaptive_avg_pool2d",
        "_adaptive_avg_pool2d",
        "_adaptive_avg_pool2d_backward",
        "upsample_nearest2d",
        "upsample_bilinear2d",
        "upsample_nearest2d_backward",
        "upsample_bilinear2d_backward",
        "convolution_backward",
        "full_like",
        "zeros_like",
        "ones_like",
        "empty_like",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "empty_strided",
        "rand_like",
        "randn_like",
        "lift_fresh_copy",
        "logical_and",
        "logical_or",
        "logical_not",
        "logical_xor",
        "bitwise_and",
        "bitwise_or",
        "bitwise_not",
        "bitwise_xor",
        "masked_fill",
        "masked_scatter",
        "_foreach_add",
        "_foreach_mul",
        "_foreach_addcdiv",
        "_foreach_addcmul",
        "_foreach_sqrt",
        "_foreach_div",
        "_foreach_lerp",
        "_foreach_copy",
        "_fused_adam",
        "_fused_adamw",
        "scaled_dot_product_attention",
        "_scaled_dot_product_flash_attention",
        "_scaled_dot_product_efficient_attention",
        "_scaled_dot_product_cudnn_attention",
        "grid_sampler_2d",
        "split_with_sizes",
        "_local_scalar_dense",
        "inductor_random",
        "inductor_seeds",
        "inductor_lookup_seed",
        "squeeze_copy",
        "unsqueeze_copy",
        "view_copy",
        "permute_copy",
        "expand_copy",
        "slice_copy",
        "select_copy",
        "_weight_norm_interface",
        "_weight_norm_interface_backward",
        "rms_norm",
        "_fused_rms_norm",
        "_fused_rms_norm_backward",
        "mul_rn",
        "div_rn",
    ]
)
_MAX_WORD_PARTS = max(w.count("_") + 1 for w in _ATEN_WORDS)
_INDUCTOR_NAME = re.compile(
    r"^(?P<backend>triton|cpp)_(?:(?P<kind>[a-z]{3})_)?(?:fused_?)?(?P<ops>.*?)_?(?P<index>\d+)$",
)


@dataclass(frozen=True)
class InductorKernel:
    """What a torch.compile (Inductor) kernel's name says: ``kind`` a value of :data:`INDUCTOR_KINDS` (``"C++"``
    for a CPU kernel), ``ops`` the operators fused into it in the order the name lists them (Inductor's
    ``original_aten`` names, or what ``descriptive_names`` chose), ``index`` its number in the generated module
    and ``backend`` ``"triton"`` or ``"cpp"``."""

    kind: str
    ops: tuple[str, ...]
    index: int
    backend: str

    @property
    def label(self) -> str:
        """``reduction: addmm, gelu, native_layer_norm`` — the kind and the fused operators in words."""
        return f"{self.kind}: {', '.join(self.ops)}" if self.ops else self.kind


def split_fused_ops(words: str) -> tuple[str, ...]:
    """The operators of a fused name's word list (``addmm_gelu_native_layer_norm`` → addmm, gelu,
    native_layer_norm; ``_softmax_relu`` → _softmax, relu): known multi-word ATen names first, longest match."""
    parts = words.split("_")
    out: list[str] = []
    i = 0
    while i < len(parts):
        if parts[i] == "" and i + 1 < len(parts):  # a leading underscore: ``_softmax``
            start, lead = i + 1, "_"
        else:
            start, lead = i, ""
        best = 1
        for n in range(min(_MAX_WORD_PARTS, len(parts) - start), 1, -1):
            if lead + "_".join(parts[start : start + n]) in _ATEN_WORDS:
                best = n
                break
        word = lead + "_".join(parts[start : start + best])
        if word and word != "_":
            out.append(word)
        i = start + best
    return tuple(out)


def inductor_kernel(name: str) -> InductorKernel | None:
    """Decode a torch.compile (Inductor) kernel name: ``triton_red_fused_addmm_gelu_native_layer_norm_0`` →
    reduction of addmm, gelu, native_layer_norm (kernel 0); ``cpp_fused__softmax_relu_0`` → a C++ kernel of
    _softmax, relu. A Triton specialization suffix (``_0d1d2de``) is ignored. None for any other name."""
    core = normalized_kernel_name(name)
    m = _INDUCTOR_NAME.match(core)
    if m is None:
        return None
    backend, kind = m.group("backend"), m.group("kind")
    if backend == "triton":
        if kind is None or kind not in INDUCTOR_KINDS:
            return None
        kind_words = INDUCTOR_KINDS[kind]
    else:
        if kind is not None and not core.startswith("cpp_fused"):
            return None
        kind_words = "C++"
    ops = m.group("ops")
    if backend == "cpp" and kind is not None:  # ``cpp_fused_add_0``: the three letters were an operator
        ops = f"{kind}_{ops}" if ops else kind
    return InductorKernel(kind=kind_words, ops=split_fused_ops(ops), index=int(m.group("index")), backend=backend)
