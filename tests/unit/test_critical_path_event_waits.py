"""The inferred event-wait edges of the critical path (``analysis/critical_path_edges.event_wait_edges``): whole-array
passes, equal to the rule applied one wait at a time (the reference below, as the module first computed it, which
took minutes on an export with 700 k waits) on random graphs built to hit its edges (ties in time, runs of
launches on one stream longer than the look-back, records after the wait, edges replaced by later ones), and on
every step of the corpus traces that hold waits."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from gputop_trace.analysis.critical_path import graph as critical_path_graph
from gputop_trace.analysis.critical_path.edges import event_wait_edges
from gputop_trace.analysis.critical_path.model import ROLE_COLL, ROLE_COPY, ROLE_CPU, ROLE_KERNEL, ROLE_LAUNCH
from gputop_trace.analysis.critical_path.path import _critical_paths
from gputop_trace.model.arrays import I64
from gputop_trace.model.trace import Trace
from tests.corpus_traces import corpus_trace

WAIT, RECORD = 8, 16


def _reference(
    tr: Trace,
    name_flags: np.ndarray,
    ev: I64,
    role: I64,
    cs: I64,
    ce: I64,
    snode: I64,
    enode: I64,
    n_t: I64,
    x2: I64,
    local: object,
    lane_of: I64,
) -> int:
    """Fill ``x2`` with inferred event-wait edges; returns how many."""
    api = np.flatnonzero(role == ROLE_LAUNCH)
    if not len(api):
        return 0
    flags = name_flags[tr.name[ev[api]]]
    is_wait = (flags & 8) != 0
    if not is_wait.any():
        return 0
    is_rec = (flags & 16) != 0
    gpu = np.flatnonzero((role == ROLE_KERNEL) | (role == ROLE_COPY) | (role == ROLE_COLL))
    if not len(gpu):
        return 0
    launch_ev = tr.launch_of[ev[gpu]]
    has = launch_ev >= 0
    gpu, launch_ev = gpu[has], launch_ev[has]
    if not len(gpu):
        return 0
    l_start = tr.start_ns[launch_ev]
    l_thread = tr.lane[launch_ev]
    o = np.lexsort((l_start, l_thread))
    gpu, l_start, l_thread = gpu[o], l_start[o], l_thread[o]
    all_order = np.argsort(l_start, kind="stable")
    all_start, all_gpu = l_start[all_order], gpu[all_order]
    count = 0
    for wi in api[is_wait].tolist():
        th = int(tr.lane[ev[wi]])
        w_start = int(tr.start_ns[ev[wi]])
        lo = int(np.searchsorted(l_thread, th, side="left"))
        hi = int(np.searchsorted(l_thread, th, side="right"))
        k = lo + int(np.searchsorted(l_start[lo:hi], w_start, side="right"))
        if k >= hi:
            continue
        target = int(gpu[k])
        # the latest event record on this thread before the wait
        on_thread = api[(lane_of[api] == lane_of[wi]) & is_rec & (cs[api] <= cs[wi])]
        ref = int(tr.start_ns[ev[int(on_thread[-1])]]) if len(on_thread) else w_start
        q = int(np.searchsorted(all_start, ref, side="left")) - 1
        found = -1
        for step_back in range(64):
            if q - step_back < 0:
                break
            cand = int(all_gpu[q - step_back])
            if lane_of[cand] != lane_of[target]:
                found = cand
                break
        if found < 0:
            continue
        if ce[found] > cs[target]:
            continue
        sn = int(snode[target])
        en = int(enode[found])
        if x2[sn] < 0 or n_t[en] > n_t[int(x2[sn])]:
            x2[sn] = en
            count += 1
    return count


def _random_case(rng: np.random.Generator, n: int, streams: int, span: int) -> tuple[Any, ...]:
    """A step of ``n`` nodes: launch calls on three threads (a third of them waits, a sixth records), GPU operations
    on ``streams`` streams launched by some of them, times in ``[0, span)`` (small spans make ties)."""
    role = rng.choice([ROLE_LAUNCH, ROLE_LAUNCH, ROLE_KERNEL, ROLE_COPY, ROLE_COLL, ROLE_CPU], size=n).astype(np.int64)
    ev = np.arange(n, dtype=np.int64)
    api = role == ROLE_LAUNCH
    gpu = (role == ROLE_KERNEL) | (role == ROLE_COPY) | (role == ROLE_COLL)
    lane = np.where(api, rng.integers(0, 3, n), 10 + rng.integers(0, streams, n))
    name = np.where(api, rng.choice([0, 1, 1, 2, 3, 3], size=n), 0)  # 1: wait, 2: record
    name_flags = np.array([0, WAIT, RECORD, 0], dtype=np.int64)
    start = rng.integers(0, span, n)
    cs = start.copy()
    ce = cs + rng.integers(0, max(2, span // 20), n)
    api_idx = np.flatnonzero(api)
    launch_of = np.full(n, -1, dtype=np.int64)
    if len(api_idx):
        pick = rng.random(n) < 0.8
        launch_of[gpu & pick] = rng.choice(api_idx, size=int((gpu & pick).sum()))
    tr = SimpleNamespace(name=name, lane=lane, start_ns=start, launch_of=launch_of)
    snode = 2 * ev
    enode = snode + 1
    n_t = np.empty(2 * n, dtype=np.int64)
    n_t[snode], n_t[enode] = cs, ce
    return tr, name_flags, ev, role, cs, ce, snode, enode, n_t, lane.astype(np.int64)


def _both(case: tuple[Any, ...], x2: I64) -> None:
    tr, name_flags, ev, role, cs, ce, snode, enode, n_t, lane_of = case
    want, got = x2.copy(), x2.copy()
    n_want = _reference(tr, name_flags, ev, role, cs, ce, snode, enode, n_t, want, None, lane_of)
    n_got = event_wait_edges(tr, name_flags, ev, role, cs, ce, snode, enode, n_t, got, None, lane_of)
    assert np.array_equal(got, want)
    assert n_got == n_want


@pytest.mark.parametrize("seed", range(60))
def test_equal_to_one_wait_at_a_time_on_random_steps(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 400))
    streams = int(rng.choice([1, 2, 4]))
    span = int(rng.choice([8, 100, 10_000]))
    case = _random_case(rng, n, streams, span)
    _both(case, np.full(2 * n, -1, dtype=np.int64))
    prior = np.full(2 * n, -1, dtype=np.int64)  # edges set before (another rule): replaced only by later ends
    some = rng.random(2 * n) < 0.2
    prior[some] = 2 * rng.integers(0, n, int(some.sum())) + 1
    _both(case, prior)


def test_the_look_back_stops_after_64_launches_on_the_waiting_stream() -> None:
    """A record followed by 63, then 64, launches on the stream that waits: the operation of the other stream is
    found within the look-back, then not."""
    for run, expect in ((63, 1), (64, 0)):
        n = 3 + run + 2
        role = np.full(n, ROLE_KERNEL, dtype=np.int64)
        role[[0, 1, 2]] = ROLE_LAUNCH  # 0: a launch (on thread 0) of the other stream's op, 1: record, 2: wait
        lane = np.full(n, 11, dtype=np.int64)
        lane[[0, 1, 2]] = 0
        other, waiting = 3, n - 1
        lane[other] = 12
        launches = np.arange(n, dtype=np.int64)
        launches[[0, 1, 2]] = -1
        # launch times: the other stream's op at 1, then ``run`` ops of the waiting stream, all before the record
        start = np.zeros(n, dtype=np.int64)
        start[other] = 1
        start[4 : 4 + run] = np.arange(2, 2 + run)
        start[1] = 1000  # the record, then the wait, then the waiting op
        start[2] = 1001
        start[waiting] = 1002
        launch_of = np.full(n, -1, dtype=np.int64)
        launch_of[3:] = np.arange(3, n)  # each GPU op is its own launch call here: launch time = its start
        role[3:] = ROLE_KERNEL
        # GPU ops launched from thread 0: their launch events are themselves, on lane 0 for the launch lookup
        tr = SimpleNamespace(
            name=np.array([0, 2, 1] + [0] * (n - 3)),
            lane=np.where(np.arange(n) >= 3, 0, lane),
            start_ns=start,
            launch_of=launch_of,
        )
        lane_of = lane.copy()
        cs = start.copy()
        ce = cs + 1
        ce[other] = 2
        snode = 2 * np.arange(n, dtype=np.int64)
        n_t = np.empty(2 * n, dtype=np.int64)
        n_t[snode], n_t[snode + 1] = cs, ce
        case: tuple[Any, ...] = (
            tr,
            np.array([0, WAIT, RECORD]),
            np.arange(n),
            role,
            cs,
            ce,
            snode,
            snode + 1,
            n_t,
            lane_of,
        )
        x2 = np.full(2 * n, -1, dtype=np.int64)
        _both(case, x2)
        got = x2.copy()
        flags = case[1]
        assert (
            event_wait_edges(case[0], flags, np.arange(n), role, cs, ce, snode, snode + 1, n_t, got, None, lane_of)
            == expect
        )
        assert (got[2 * waiting] == 2 * other + 1) == bool(expect)


@pytest.mark.corpus
@pytest.mark.parametrize(
    ("rel", "edges"),
    [
        ("external/negative_queue_length_values_check/rank0.json.gz", True),
        ("kineto/h200_gpt_train_small.json.gz", True),
        # 236 waits (118 in the steps analysed); before none of them was an operation launched on another stream
        ("nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite", False),
        ("nsys/MohanadOdema__DLProf__nsys_profile.sqlite", True),
    ],
)
def test_equal_to_one_wait_at_a_time_on_corpus_steps(rel: str, edges: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []

    def checked(*args: Any) -> int:
        x2 = args[9]
        want = x2.copy()
        tr, flags, ev, role, cs, ce, sn, en, n_t, _x2, local, lane_of = args
        n_want = _reference(tr, flags, ev, role, cs, ce, sn, en, n_t, want, local, lane_of)
        n = event_wait_edges(*args)
        assert np.array_equal(x2, want)
        assert n == n_want
        calls.append(n)
        return n

    monkeypatch.setattr(critical_path_graph, "event_wait_edges", checked)
    _critical_paths(corpus_trace(rel), None, None, True, True)  # not the per-trace results cache: build the graphs
    assert calls  # the rule ran on the trace's steps
    assert (sum(calls) > 0) == edges
