"""Chrome flow points are chained per id in time order (a file may write a flow's end first), as int64 numbers
when every id is a plain int that fits; any other id (a string, a bool, a float, one past int64, none) makes the
binder group them by Python equality."""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from gputop_trace.model.kinds import FlowKind
from gputop_trace.parsers.chrome import fast
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome.flows import _int_ids


def test_plain_int_ids_become_one_int64_array() -> None:
    got = _int_ids([3, -1, 2**63 - 1, 3])
    assert got is not None and got.dtype == np.int64 and got.tolist() == [3, -1, 2**63 - 1, 3]


def test_any_other_id_keeps_the_grouping_by_equality() -> None:
    for other in ("7", True, 1.5, None, 2**63):
        assert _int_ids([1, other, 2]) is None, other
    assert _int_ids([]) is None


def test_a_flow_written_end_first_still_points_from_its_start_to_its_end(tmp_path: Path) -> None:
    """MTIA traces write each backward op's ``f`` before the forward op's ``s``: the arrow must still go from
    the forward slice to the backward one (flow points are chained in time order, not file order)."""
    events = [
        {"ph": "X", "cat": "cpu_op", "name": "backward_op", "pid": 1, "tid": 2, "ts": 500, "dur": 50},
        {"ph": "f", "cat": "fwdbwd", "id": 7, "pid": 1, "tid": 2, "ts": 500, "bp": "e", "name": "fwdbwd"},
        {"ph": "X", "cat": "cpu_op", "name": "forward_op", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
        {"ph": "s", "cat": "fwdbwd", "id": 7, "pid": 1, "tid": 1, "ts": 100, "name": "fwdbwd"},
    ]
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for pure in ("1", "0"):
        os.environ[fast.PURE_PYTHON_ENV] = pure
        try:
            trace = chrome.load(str(path))
        finally:
            del os.environ[fast.PURE_PYTHON_ENV]
        fb = np.flatnonzero(trace.flows.kind == FlowKind.FWDBWD)
        assert len(fb) == 1
        src, dst = int(trace.flows.src[fb[0]]), int(trace.flows.dst[fb[0]])
        assert (trace.names[trace.name[src]], trace.names[trace.name[dst]]) == ("forward_op", "backward_op")
