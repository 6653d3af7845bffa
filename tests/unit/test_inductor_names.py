"""torch.compile (Inductor) kernel names decoded: kind and fused operators (model/kernel_names)."""

from __future__ import annotations

import pytest

from gputop_trace.model.kernel_names import inductor_kernel, split_fused_ops


@pytest.mark.parametrize(
    ("name", "kind", "ops", "index"),
    [
        ("triton_red_fused_addmm_gelu_native_layer_norm_0", "reduction", ("addmm", "gelu", "native_layer_norm"), 0),
        (
            "triton_per_fused_addmm_gelu_native_layer_norm_0",
            "persistent reduction",
            ("addmm", "gelu", "native_layer_norm"),
            0,
        ),
        (
            "triton_per_fused__softmax_addmm_exp_native_layer_norm_prepare_softmax_online_relu_sub_0",
            "persistent reduction",
            ("_softmax", "addmm", "exp", "native_layer_norm", "prepare_softmax_online", "relu", "sub"),
            0,
        ),
        ("triton_poi_fused_add_cos_sin_0", "pointwise", ("add", "cos", "sin"), 0),
        ("triton_tem_fused_addmm_12", "template", ("addmm",), 12),
        ("triton_for_fused_3", "foreach", (), 3),
        ("triton_spl_fused_cumsum_1", "split scan", ("cumsum",), 1),
        ("triton_poi__7", "pointwise", (), 7),
        # older Triton appended the specialization signature to the name
        ("triton_poi_fused_add_0_0d1d2de", "pointwise", ("add",), 0),
        ("cpp_fused__softmax_native_layer_norm_relu_0", "C++", ("_softmax", "native_layer_norm", "relu"), 0),
        ("cpp_fused_add_2", "C++", ("add",), 2),
    ],
)
def test_inductor_names_decode(name: str, kind: str, ops: tuple[str, ...], index: int) -> None:
    k = inductor_kernel(name)
    assert k is not None
    assert (k.kind, k.ops, k.index) == (kind, ops, index)


@pytest.mark.parametrize(
    "name",
    [
        "sm80_xmma_gemm_f32f32_f32f32_f32_tn_n_tilesize64x64x8_stage3_warpsize1x4x1_ffma_aligna4_alignc4_execute_kernel__5x_cublas",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float> >(int)",
        "_attn_fwd_0d1d2d3de4de",  # a hand-written Triton kernel
        "triton_xyz_fused_add_0",  # not a category Inductor writes
        "triton_red_fused_add",  # no kernel index
        "triton_",
    ],
)
def test_other_kernel_names_are_not_inductor(name: str) -> None:
    assert inductor_kernel(name) is None


def test_label_says_kind_and_ops() -> None:
    k = inductor_kernel("triton_red_fused_addmm_gelu_native_layer_norm_0")
    assert k is not None and k.label == "reduction: addmm, gelu, native_layer_norm"


def test_unknown_words_are_one_operator_each() -> None:
    assert split_fused_ops("mul_weird_op_native_layer_norm") == ("mul", "weird", "op", "native_layer_norm")
