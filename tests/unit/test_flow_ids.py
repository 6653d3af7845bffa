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


def _links(path: Path, pure: str) -> list[tuple[str, str]]:
    os.environ[fast.PURE_PYTHON_ENV] = pure
    try:
        trace = chrome.load(str(path))
    finally:
        del os.environ[fast.PURE_PYTHON_ENV]
    keep = np.flatnonzero(trace.flows.kind != FlowKind.LAUNCH)
    return sorted(
        (trace.names[trace.name[int(trace.flows.src[k])]], trace.names[trace.name[int(trace.flows.dst[k])]])
        for k in keep
    )


def _op(name: str, tid: int, ts: int) -> dict[str, object]:
    return {"ph": "X", "cat": "cpu_op", "name": name, "pid": 1, "tid": tid, "ts": ts, "dur": 50}


def _point(ph: str, ident: object, tid: int, ts: int, cat: str = "fwdbwd") -> dict[str, object]:
    e: dict[str, object] = {"ph": ph, "cat": cat, "id": ident, "pid": 1, "tid": tid, "ts": ts, "name": cat}
    if ph == "f":
        e["bp"] = "e"
    return e


def test_a_reused_flow_id_begins_a_new_flow_after_its_finish(tmp_path: Path) -> None:
    """Issue 31, 3d: a profiler that reuses an id writes ``s``…``f`` twice with it; the second ``s`` begins a new
    flow: two arrows (each forward op to its backward op), never one from the first backward op to the second
    forward op. A flow with steps (``s``, ``t``, ``f``) keeps its chain, and the file order does not matter."""
    for ident in (7, "0x7"):
        events = [
            _op("fwd_a", 1, 100),
            _op("bwd_a", 2, 500),
            _op("fwd_b", 1, 1000),
            _op("bwd_b", 2, 1500),
            _op("step_c", 3, 2000),
            _op("end_c", 2, 2500),
            _point("s", ident, 1, 100),
            _point("f", ident, 2, 500),
            _point("s", ident, 1, 1000),
            _point("t", ident, 2, 1500),
            _point("t", ident, 3, 2000),
            _point("f", ident, 2, 2500),
        ]
        expected = [("bwd_b", "step_c"), ("fwd_a", "bwd_a"), ("fwd_b", "bwd_b"), ("step_c", "end_c")]
        for order in (events, events[::-1]):
            path = tmp_path / "reuse.json"
            path.write_text(json.dumps({"traceEvents": order}))
            for pure in ("1", "0"):
                assert _links(path, pure) == expected, (ident, pure)


def test_without_a_finish_between_the_points_of_one_id_still_chain(tmp_path: Path) -> None:
    """Only a finish then a start breaks the chain: two starts in a row (a flow without its finish) and two
    finishes in a row chain as before, so traces that never reuse an id read as they did."""
    events = [
        _op("a", 1, 100),
        _op("b", 2, 300),
        _op("c", 3, 500),
        _point("s", 9, 1, 100),
        _point("s", 9, 2, 300),
        _point("f", 9, 3, 500),
    ]
    path = tmp_path / "two_starts.json"
    path.write_text(json.dumps({"traceEvents": events}))
    for pure in ("1", "0"):
        assert _links(path, pure) == [("a", "b"), ("b", "c")]
