"""Shape-based estimates of the attention calls under ``scaled_dot_product_attention`` (the kernels' own entry
points take [B, L, H, E], the ``sdpa`` forms [B, H, L, E]: both layouts give the same work), and the shape key of
an ``emit_nvtx`` range name whose sizes are followed by PyTorch's ``input_op_ids``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_trace.analysis.operators.flops import estimate
from gputop_trace.analysis.operators.table import nvtx_key, op_table
from gputop_trace.load.loader import load_paths
from tests.conftest import corpus_file

H200 = str(Path(__file__).resolve().parents[1] / "data" / "ops_cuda.json.gz")


def _flops(path: str) -> dict[str, int | None]:
    return {r.name: r.flops for r in op_table(load_paths([path], use_cache=False), python=False)}


def test_efficient_attention_calls_count_the_work_of_their_sdpa() -> None:
    """H200 reference: 6 causal calls of B=4, H=4, L=S=128, E=64 (4·B·H·L·S·E each; backward 2.5×)."""
    flops = _flops(H200)
    fwd = 6 * 4 * 4 * 4 * 128 * 128 * 64
    for name in (
        "aten::scaled_dot_product_attention",
        "aten::_scaled_dot_product_efficient_attention",
        "aten::_efficient_attention_forward",  # [4, 128, 4, 64]: [B, L, H, E]
    ):
        assert flops[name] == fwd, name
    for name in ("aten::_scaled_dot_product_efficient_attention_backward", "aten::_efficient_attention_backward"):
        assert flops[name] == fwd * 5 // 2, name


@pytest.mark.corpus
def test_cudnn_attention_calls_count_the_work_of_their_sdpa() -> None:
    flops = _flops(corpus_file("kineto/h200_gpt_train_small.json.gz"))
    for call, sdpa in (
        ("aten::_cudnn_attention_forward", "aten::_scaled_dot_product_cudnn_attention"),
        ("aten::_cudnn_attention_backward", "aten::_scaled_dot_product_cudnn_attention_backward"),
    ):
        work = flops[sdpa]
        assert work is not None and work > 0 and flops[call] == work, call


def test_flash_attention_backward_takes_grad_out_first_in_b_l_h_e() -> None:
    q = "[2, 512, 8, 64]"
    dims = f"[{q}, {q}, {q}, {q}, {q}, [2, 8, 512]]"
    types = "c10::BFloat16, c10::BFloat16, c10::BFloat16, c10::BFloat16, c10::BFloat16, float"
    work = estimate("aten::_flash_attention_backward", dims, types)
    assert work.kind == "attention" and work.precision == "BF16"
    assert work.flops == 4 * 2 * 8 * 512 * 512 * 64 * 5 // 2


def test_emit_nvtx_sizes_followed_by_input_op_ids_give_the_shape_key() -> None:
    """With record_shapes, emit_nvtx writes ``, input_op_ids = [...]`` after the sizes of an op fed by others."""
    name = "aten::mm, seq = 7, op_id = 42, sizes = [[512, 256], [256, 768]], input_op_ids = [(40,0), (41,0)]"
    assert nvtx_key(name) == ("aten::mm", "[[512, 256], [256, 768]]")
    assert nvtx_key("aten::add, op_id = 3, sizes = [[2, 3], []]") == ("aten::add", "[[2, 3], []]")
    assert nvtx_key("aten::mm, seq = 7, op_id = 42") == ("aten::mm", "[]")
