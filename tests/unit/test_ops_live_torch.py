"""``ops`` against ``key_averages()`` of a profile recorded here and now with the installed PyTorch (CPU build in
CI, ``GPUTOP_REQUIRE_TORCH=1``): the same run, exported as a Chrome trace and read back, gives the same table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gputop_trace.analysis.operators.table import op_table
from gputop_trace.load.loader import load_paths


def _record(out: Path) -> Any:
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 8))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randn(32, 64)
    # no with_stack: PyTorch's own key_averages() sometimes fails to decode a Python frame name recorded from another
    # thread of the test process (UnicodeDecodeError inside torch/autograd/profiler.py, seen under pytest-xdist in
    # CI); Python frames as keys are checked on the recorded references (tests/unit/test_ops_reference.py)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True) as prof:
        for i in range(2):
            with record_function(f"step_{i}"):
                loss = model(x).square().mean()
                loss.backward()
                opt.step()
                opt.zero_grad(set_to_none=True)
    prof.export_chrome_trace(str(out))
    return prof


@pytest.mark.parametrize("group_by", ["name", "shape"])
def test_ops_equals_key_averages_of_a_fresh_recording(torch_required: None, tmp_path: Path, group_by: str) -> None:
    path = tmp_path / "live.json"
    prof = _record(path)
    by_shape = group_by == "shape"
    theirs = prof.key_averages(group_by_input_shape=by_shape)
    trace = load_paths([str(path)], use_cache=False)
    ours = {(r.name, r.is_device, r.shapes if by_shape else None): r for r in op_table(trace, group_by=group_by)}
    assert len(theirs) > 10
    for e in theirs:
        key = (e.key, str(e.device_type) != "DeviceType.CPU", str(e.input_shapes) if by_shape else None)
        assert key in ours, f"key_averages has {key}, ops does not"
        r = ours.pop(key)
        assert r.count == e.count, key
        assert abs(r.cpu_total_ns / 1000 - e.cpu_time_total) <= e.count, key
        assert abs(r.self_cpu_ns / 1000 - e.self_cpu_time_total) <= e.count, key
        assert r.cpu_mem == e.cpu_memory_usage and r.self_cpu_mem == e.self_cpu_memory_usage, key
    assert not ours, f"ops has keys key_averages does not: {sorted(ours)[:5]}"
