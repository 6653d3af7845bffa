"""Which torch.compile region launched a kernel, on hand-built traces: the last-starting region that encloses the
launch call, also when a region nested in it (a resumed frame, a compiled callee) has already returned."""

from __future__ import annotations

from gputop_trace.analysis.compiled.regions import kernel_origins
from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.model.kinds import Kind
from tests.synthetic import Synth


def test_a_launch_after_a_nested_region_returned_belongs_to_the_outer_region() -> None:
    s = Synth()
    th, st = s.thread(), s.stream()
    s.ev(th, Kind.CPU_OP, "Torch-Compiled Region: 0/0", 0, 1000)
    s.ev(th, Kind.CPU_OP, "Torch-Compiled Region: 1/0", 100, 200)  # nested, returns at 300
    s.ev(th, Kind.CPU_OP, "Torch-Compiled Region: 2/0", 400, 50)  # a second nested one, returns at 450
    for start, name in ((150, "in_1"), (350, "in_0_between"), (420, "in_2"), (600, "in_0_after"), (1500, "eager")):
        s.kernel(st, start + 10, 5, name, launch=s.launch(th, start, 5))
    t = s.build()
    k = t.of_kind(Kind.KERNEL)
    o = kernel_origins(t, k)
    got = {t.event_name(int(e)): (t.event_name(int(r)) if r >= 0 else None) for e, r in zip(k, o.region, strict=True)}
    assert got == {
        "in_1": "Torch-Compiled Region: 1/0",
        "in_0_between": "Torch-Compiled Region: 0/0",
        "in_2": "Torch-Compiled Region: 2/0",
        "in_0_after": "Torch-Compiled Region: 0/0",
        "eager": None,
    }
    rows = {r.name: r.count for r in kernel_table(t, group_by="region")}
    assert rows == {
        "Torch-Compiled Region: 0/0": 2,
        "Torch-Compiled Region: 1/0": 1,
        "Torch-Compiled Region: 2/0": 1,
        "(outside compiled regions)": 1,
    }
