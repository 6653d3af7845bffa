"""Transfer overlap on the real corpus: the planted copies of the GPT trace, found with the right numbers."""

from __future__ import annotations

from functools import cache

import pytest

from gputop_trace.analysis.transfers import transfer_overlap
from gputop_trace.load.loader import load_paths
from gputop_trace.model.trace import Trace
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus


@cache
def _gpt() -> Trace:
    return load_paths([corpus_file("kineto/h200_gpt_train_small.json.gz")])


def test_the_pageable_checkpoint_copy_is_24_ms_fully_exposed_and_flagged() -> None:
    rep = transfer_overlap(_gpt())
    (ckpt,) = [r for r in rep.copies if r.range_name == "checkpoint_d2h"]
    assert (ckpt.direction, ckpt.host_memory, ckpt.bytes) == ("DtoH", "pageable", 32 * 1024 * 1024)
    assert ckpt.dur_ns == 23_992_976 and ckpt.exposed_ns == ckpt.dur_ns
    assert ckpt.api == "cudaMemcpyAsync" and ckpt.is_async is True
    assert "pageable_async" in ckpt.flags
    assert abs(ckpt.bytes_per_s / 1e9 - 1.40) < 0.01


def test_the_pageable_input_copies_run_on_the_compute_stream() -> None:
    t = _gpt()
    rep = transfer_overlap(t)
    pageable_in = [r for r in rep.copies if r.direction == "HtoD" and r.host_memory == "pageable"]
    assert len(pageable_in) == 3
    assert {r.stream for r in pageable_in} == {7} and {r.range_name for r in pageable_in} == {"data_load"}
    assert all("pageable_async" in r.flags for r in pageable_in)
    # the first one runs before any kernel of the step; the next two sit between kernels of stream 7
    assert sum("copy_on_compute_stream" in r.flags for r in pageable_in) == 2
    flags = {f.flag: f for f in rep.flags}
    assert set(flags) == {"pageable_async", "copy_on_compute_stream"}
    assert flags["pageable_async"].count == 4


def test_the_side_stream_pinned_copies_are_not_hidden_at_all() -> None:
    rep = transfer_overlap(_gpt())
    side = [r for r in rep.copies if r.stream == 13]
    assert len(side) == 3
    assert all((r.direction, r.host_memory, r.flags) == ("HtoD", "pinned", ()) for r in side)
    # they were issued inside data_load while the GPU had nothing else running: 0 ns hidden
    assert sum(r.overlap_ns for r in side) == 0
    row = next(r for r in rep.by_direction if (r.direction, r.host_memory) == ("HtoD", "pinned"))
    assert row.count == 3 and row.hidden_pct == 0.0


def test_device_exposed_copy_time() -> None:
    rep = transfer_overlap(_gpt())
    (dev,) = rep.devices
    assert dev.copies == 49  # 10 memcpy + 39 memset
    assert dev.exposed_ns == dev.copy_ns  # no copy overlapped a kernel on another stream
    assert 24_000_000 < dev.exposed_ns < 24_100_000


def test_ddp_input_copies_are_pinned_and_on_the_compute_stream() -> None:
    t = load_paths([corpus_file("kineto/h200_ddp_2gpu")])
    rep = transfer_overlap(t, rank=1)
    inputs = [r for r in rep.copies if r.direction == "HtoD"]
    assert len(inputs) == 5  # one 8 MiB input batch per step
    assert all(r.host_memory == "pinned" and r.rank == 1 and r.bytes == 8 * 1024 * 1024 for r in inputs)
    assert not any("pageable_async" in r.flags for r in rep.copies)


def test_jax_copies_take_direction_memory_kinds_and_async_from_the_details() -> None:
    t = load_paths([corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")])
    rep = transfer_overlap(t)
    dirs = {(r.direction, r.host_memory) for r in rep.by_direction}
    assert {("HtoD", "pinned"), ("DtoH", "pinned"), ("DtoD", None), ("memset", None)} <= dirs
    # JAX's details say async:1 for every copy; none of them has a launch flow
    assert all(r.is_async is True and r.api is None for r in rep.copies if r.kind == "memcpy")
