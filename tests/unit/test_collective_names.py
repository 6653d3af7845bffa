"""One recognition of collective kernels: the rank analyses (collective_op, find_collectives) and the timeline's
kernel family agree, and the custom all-reduce kernels of vLLM / TensorRT-LLM / PyTorch symmetric memory count as
all-reduce collectives."""

from __future__ import annotations

import pytest

from gputop_trace.analysis.ranks.collectives import find_collectives
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.presentation.kernel_labels import Family, kernel_family
from tests.synthetic import Synth

CUSTOM_ALL_REDUCE = (
    "void one_shot_all_reduce_kernel<float, 8>(float*, float*, unsigned long)",
    "void c10d::symmetric_memory::multimem_all_reduce_kernel<c10::BFloat16, 2, 16>(c10::BFloat16*, unsigned long)",
    "void vllm::cross_device_reduce_1stage<float, 2>(vllm::RankData*, vllm::RankSignals, int)",
)
NOT_COLLECTIVES = (
    "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float>, "
    "unsigned int, float, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float>, unsigned int, float, 4>)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, at::detail::Array<char*, 3>)",
    "void at::native::elementwise_kernel<128, 2>(int)",
)


@pytest.mark.parametrize("name", CUSTOM_ALL_REDUCE)
def test_custom_all_reduce_kernels_are_all_reduce_collectives(name: str) -> None:
    assert collective_op(name) == "all_reduce"
    assert kernel_family(name) == Family.COLLECTIVE


@pytest.mark.parametrize("name", NOT_COLLECTIVES)
def test_reduction_and_elementwise_kernels_are_not_collectives(name: str) -> None:
    assert collective_op(name) is None
    assert kernel_family(name) != Family.COLLECTIVE


def test_find_collectives_counts_the_custom_all_reduces() -> None:
    s = Synth()
    st = s.stream()
    t = 0
    for name in (*CUSTOM_ALL_REDUCE, *NOT_COLLECTIVES, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage)"):
        s.kernel(st, t, 1_000, name)
        t += 2_000
    trace = s.build()
    coll = find_collectives(trace)
    names = [trace.event_name(int(e)) for e in coll.event.tolist()]
    assert sorted(names) == sorted((*CUSTOM_ALL_REDUCE, "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage)"))
    assert {trace.event_name(int(e)): op for e, op in zip(coll.event.tolist(), coll.op, strict=True)} == {
        **dict.fromkeys(CUSTOM_ALL_REDUCE, "all_reduce"),
        "ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage)": "all_gather",
    }
