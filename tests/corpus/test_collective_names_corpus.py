"""The timeline's kernel colours and the rank analyses agree on which kernels of the real Kineto traces are
collectives (one recognition: gputop_trace.model.kernel_names.collective_op)."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.load.loader import load_paths
from gputop_trace.model.kernel_names import collective_op
from gputop_trace.model.kinds import Kind
from gputop_trace.presentation.kernel_labels import Family
from gputop_trace.tui.view.timeline_data import kernel_name_families
from tests.conftest import CORPUS

pytestmark = pytest.mark.corpus

KINETO = sorted(
    str(p.relative_to(CORPUS))
    for folder in ("kineto", "external")
    for p in (CORPUS / folder).rglob("*.json*")
    if p.name != "benchmark_simple_add_et.json.gz"  # an execution trace, not a Kineto trace
)


@pytest.mark.parametrize("rel", KINETO)
def test_palette_family_and_collective_op_agree(rel: str) -> None:
    trace = load_paths([str(CORPUS / rel)])
    families = kernel_name_families(trace)
    for nid in np.unique(trace.name[trace.of_kind(Kind.KERNEL)]).tolist():
        name = trace.names[nid]
        assert (families[nid] == Family.COLLECTIVE) == (collective_op(name) is not None), name


def test_the_ddp_trace_has_all_reduce_collectives() -> None:
    trace = load_paths([str(CORPUS / "kineto/h200_ddp_2gpu")])
    ops = {collective_op(trace.names[n]) for n in np.unique(trace.name[trace.of_kind(Kind.KERNEL)]).tolist()}
    assert "all_reduce" in ops
