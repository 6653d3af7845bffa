"""``kernel_table(trace, top=N)`` (what the summary asks for: its top kernels) is exactly the first N rows of the
whole table, on real traces, for every grouping and at the edges of N (issue 29: the summary builds 10 rows, not
one per kernel name)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gputop_trace.analysis.kernels import GroupBy, KernelRow, kernel_table
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from tests.conftest import corpus_file

TRACES = (
    "external/negative_queue_length_values_check/rank0.json.gz",
    "kineto/h200_gpt_train_small.json.gz",
    "kineto/h200_inductor_compiled.json.gz",
    "nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite",
    "external/trace_filter/sampled_rank-0.json.gz",
)


def _row(r: KernelRow) -> tuple[Any, ...]:
    """A row's figures (NaN occupancy compared as text) and its events as a tuple."""
    fields = {k: v for k, v in vars(r).items() if k != "events"}
    return (repr(sorted(fields.items())), tuple(r.events.tolist()))


@pytest.fixture(scope="module", params=TRACES)
def trace(request: pytest.FixtureRequest) -> Trace:
    return load_paths([corpus_file(request.param)], use_cache=False)


@pytest.mark.corpus
@pytest.mark.parametrize("group_by", [GroupBy.NAME, GroupBy.LAUNCHER, GroupBy.GEOMETRY])
@pytest.mark.parametrize("merge_devices", [False, True])
def test_top_rows_are_the_first_rows_of_the_whole_table(trace: Trace, group_by: GroupBy, merge_devices: bool) -> None:
    full = kernel_table(trace, group_by=group_by, merge_devices=merge_devices)
    assert full, "every trace here has kernels"
    for n in sorted({0, 1, 3, 10, len(full) - 1, len(full), len(full) + 5}):
        top = kernel_table(trace, group_by=group_by, merge_devices=merge_devices, top=n)
        assert [_row(r) for r in top] == [_row(r) for r in full[:n]], n


@pytest.mark.corpus
def test_top_rows_keep_their_share_of_all_kernels(trace: Trace) -> None:
    """``pct`` stays the share of every kernel's time (not of the rows built), as in the whole table."""
    top = kernel_table(trace, top=3)
    k = trace.of_kind(Kind.KERNEL)
    total = int(trace.dur_ns[k].sum())
    for r in top:
        assert r.pct == pytest.approx(100.0 * r.total_ns / total)
    assert np.isclose(sum(r.pct for r in kernel_table(trace)), 100.0)
