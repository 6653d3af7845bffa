"""The pure parts of the run comparison: kernel-name normalisation, warm-up steps, the verdict and its words."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.analysis.diff.attribution import t95
from gputop_trace.analysis.diff.steps import step_key, warmup_steps
from gputop_trace.analysis.diff.verdict import MIN_STEPS, bootstrap_median_ci, step_verdict
from gputop_trace.model.kernel_names import normalized_kernel_name


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>>(int, float)",
         "at::native::vectorized_elementwise_kernel"),
        ("void at::native::vectorized_elementwise_kernel<8, at::native::FillFunctor<c10::BFloat16>>(int)",
         "at::native::vectorized_elementwise_kernel"),
        ("_attn_fwd_0d1d2d3de4de5de", "_attn_fwd"),
        ("add_kernel_0d1d2d3", "add_kernel"),
        ("fused_mm_3a9c1e5f77", "fused_mm"),
        ("triton_poi_fused_add_0", "triton_poi_fused_add_0"),
        ("conv_2d", "conv_2d"),
        ("ncclDevKernel_AllReduce_Sum_f32_RING_LL", "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
    ],
)  # fmt: skip
def test_normalized_kernel_names_line_up_across_runs(name: str, want: str) -> None:
    assert normalized_kernel_name(name) == want


def test_leading_long_steps_are_warm_up() -> None:
    assert warmup_steps(np.array([300, 200, 100, 100, 101, 99], dtype=np.int64)).tolist() == [
        True, True, False, False, False, False,
    ]  # fmt: skip
    assert not warmup_steps(np.array([140, 100, 100, 100], dtype=np.int64)).any()
    assert not warmup_steps(np.array([900, 100], dtype=np.int64)).any()  # too few steps to tell


def test_step_key_hides_the_number() -> None:
    assert step_key("ProfilerStep#12") == "ProfilerStep#<n>"
    assert step_key("train_step_3") == "train_step_<n>"


def test_the_bootstrap_is_seeded() -> None:
    x = np.array([1.01, 0.99, 1.03, 0.98, 1.02, 1.00])
    assert bootstrap_median_ci(x) == bootstrap_median_ci(x)
    lo, hi = bootstrap_median_ci(x)
    assert lo <= float(np.median(x)) <= hi


def test_a_steady_three_percent_speed_up_is_beyond_noise() -> None:
    base = np.array([100.0, 102, 98, 101, 99, 100, 103, 97])
    test = base * np.array([0.97, 0.968, 0.972, 0.969, 0.971, 0.97, 0.969, 0.971])
    v = step_verdict(base, test)
    assert v.kind == "faster" and v.beyond_noise
    assert v.sentence.startswith("TEST is 3.0 % faster per step (95 % CI ")
    assert v.sentence.endswith(": beyond noise.")


def test_noise_larger_than_the_change_is_no_difference() -> None:
    base = np.array([100.0, 100, 100, 100, 100, 100])
    test = np.array([95.0, 106, 99, 104, 97, 102])
    v = step_verdict(base, test)
    assert v.kind == "no_difference" and not v.beyond_noise
    assert v.sentence.startswith(f"No difference beyond noise (± {v.noise_pct:.1f} %)")


def test_too_few_steps_and_no_steps_give_no_verdict() -> None:
    few = step_verdict(np.ones(MIN_STEPS - 1), np.ones(MIN_STEPS - 1) * 1.1)
    assert few.kind == "too_few_steps" and "at least 5 are needed" in few.sentence
    span = step_verdict(np.array([100.0]), np.array([110.0]), whole_span="BASE")
    assert span.kind == "whole_span" and span.sentence.startswith("No step ranges in BASE: the whole spans")
    assert span.change_pct == pytest.approx(10.0)


def test_identical_inputs_say_so() -> None:
    v = step_verdict(np.ones(6), np.ones(6), identical=True)
    assert v.kind == "identical" and "identical" in v.sentence


def test_t_critical_values() -> None:
    assert t95(1) == pytest.approx(12.706)
    assert t95(4) == pytest.approx(2.776)
    assert t95(1000) == pytest.approx(1.96)
