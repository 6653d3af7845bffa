"""The compiled what-if replay (analysis/critical_path/_replay.c) gives the node times of the numpy/Python reference
(analysis/critical_path/walk.py) on random graphs with equal-time hops (where the ordered pass must finish a
predecessor that comes later in time order first), on graphs whose max-plus scan does not settle, and on every step
of corpus traces with items halved and removed; a cycle is refused, never answered."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.analysis.critical_path import walk
from gputop_trace.analysis.critical_path.context import noted_step_windows, path_context
from gputop_trace.analysis.critical_path.graph import build_step_graph
from gputop_trace.analysis.critical_path.model import StepGraph
from tests.conftest import require_compiled
from tests.corpus_traces import corpus_trace


@pytest.fixture(autouse=True)
def _needs_compiled() -> None:
    require_compiled(walk._compiled is not None, "the compiled critical-path replay (_replay)")


def _random_graph(rng: np.random.Generator, nn: int, lanes: int, idx: type) -> StepGraph:
    """Nodes in a random topological order (their rank), lanes contiguous and each in rank order; x1/x2 point to
    earlier-ranked nodes. Weights of 0-2 ns, so that many hops join nodes of equal recorded time."""
    rank = rng.permutation(nn)
    lane_of = rng.integers(0, lanes, nn)
    order = np.lexsort((rank, lane_of))  # lane blocks, each in rank order
    rank, lane_of = rank[order], lane_of[order]
    node_of_rank = np.empty(nn, dtype=np.int64)
    node_of_rank[rank] = np.arange(nn)
    first = np.ones(nn, dtype=bool)
    first[1:] = lane_of[1:] != lane_of[:-1]
    x1: np.ndarray = np.full(nn, -1, dtype=idx)
    x2: np.ndarray = np.full(nn, -1, dtype=idx)
    for n in range(nn):
        if rank[n] and rng.random() < 0.5:
            x1[n] = node_of_rank[rng.integers(0, rank[n])]
        if rank[n] and rng.random() < 0.3:
            x2[n] = node_of_rank[rng.integers(0, rank[n])]
    wc, w1, r = (rng.integers(0, 3, nn).astype(np.int64) for _ in range(3))
    g = StepGraph.__new__(StepGraph)
    fields = {"s": 1000, "t": np.zeros(nn, dtype=np.int64), "first": first, "x1": x1, "x2": x2}
    fields |= {"wc": wc, "w1": w1, "r": r, "lane": lane_of.astype(np.int32)}
    g.__dict__.update(fields)
    g.__dict__["t"] = _reference(g, wc, w1, r)  # the recorded times: the graph's own replay
    return g


def _reference(g: StepGraph, wc: np.ndarray, w1: np.ndarray, r: np.ndarray) -> np.ndarray:
    """A plain memoised longest path, independent of both replays."""
    nn = len(g.first)
    out: list[int | None] = [None] * nn

    def value(n: int) -> int:
        stack = [n]
        while stack:
            m = stack[-1]
            preds = ([] if g.first[m] else [m - 1]) + [int(x) for x in (g.x1[m], g.x2[m]) if x >= 0]
            todo = [p for p in preds if out[p] is None]
            if todo:
                stack.append(todo[0])
                continue
            stack.pop()
            lane = g.s + int(wc[m]) if g.first[m] else int(out[m - 1]) + int(wc[m])  # type: ignore[arg-type]
            best = max([lane] + ([int(out[int(g.x1[m])]) + int(w1[m])] if g.x1[m] >= 0 else []))  # type: ignore[arg-type]
            best = max([best] + ([int(out[int(g.x2[m])])] if g.x2[m] >= 0 else []))  # type: ignore[arg-type]
            out[m] = best + int(r[m])
        return int(out[n])  # type: ignore[arg-type]

    return np.array([value(n) for n in range(nn)], dtype=np.int64)


@pytest.mark.parametrize("idx", [np.int32, np.int64])
@pytest.mark.parametrize("seed", range(6))
def test_compiled_replay_equals_the_reference_on_random_graphs(seed: int, idx: type) -> None:
    rng = np.random.default_rng(seed)
    g = _random_graph(rng, int(rng.integers(1, 400)), int(rng.integers(1, 7)), idx)
    for _ in range(4):
        wc, w1, r = (np.where(rng.random(len(x)) < 0.3, 0, x) for x in (g.wc, g.w1, g.r))
        want = _reference(g, wc, w1, r)
        assert np.array_equal(walk.replay_graph(g, wc, w1, r), want)  # compiled
        assert np.array_equal(walk._replay_numpy(g, wc, w1, r), want)  # the fallback's scans
        assert np.array_equal(walk._replay_ordered(g, wc, w1, r), want)  # the fallback's ordered pass


def test_a_chain_hopping_between_lanes_at_every_node_is_replayed_exactly() -> None:
    """Two lanes where each node waits for the other lane's previous node: the max-plus scan settles one hop per
    pass, so the fallback needs its ordered pass; the compiled replay does it in one."""
    n = 200
    first = np.zeros(2 * n, dtype=bool)
    first[[0, n]] = True
    x1 = np.full(2 * n, -1, dtype=np.int32)
    x1[n + 1 : 2 * n] = np.arange(0, n - 1)  # lane B's node i waits for lane A's node i - 1
    x1[1:n] = np.arange(n, 2 * n - 1)  # lane A's node i waits for lane B's node i - 1
    rng = np.random.default_rng(7)
    g = StepGraph.__new__(StepGraph)
    wc, w1, r = (rng.integers(0, 9, 2 * n).astype(np.int64) for _ in range(3))
    g.__dict__.update(s=0, first=first, x1=x1, x2=np.full(2 * n, -1, dtype=np.int32), wc=wc, w1=w1, r=r)
    g.__dict__["t"] = _reference(g, wc, w1, r)
    w1b = w1 * 3
    want = _reference(g, wc, w1b, r)
    assert np.array_equal(walk.replay_graph(g, wc, w1b, r), want)
    assert np.array_equal(walk._replay_numpy(g, wc, w1b, r), want)


def test_a_cycle_is_refused() -> None:
    g = StepGraph.__new__(StepGraph)
    first = np.array([True, True])
    g.__dict__.update(s=0, first=first, x1=np.array([1, 0], dtype=np.int32), x2=np.array([-1, -1], dtype=np.int32))
    z = np.zeros(2, dtype=np.int64)
    out = np.empty(2, dtype=np.int64)
    assert walk._compiled is not None
    assert walk._compiled.replay(first, g.x1, g.x2, z, z, z, 0, out) == -1
    g.__dict__["t"] = z
    with pytest.raises(AssertionError, match="cycle"):
        walk._replay_ordered(g, z, z, z)


@pytest.mark.corpus
@pytest.mark.parametrize(
    "rel",
    [
        "external/negative_queue_length_values_check/rank0.json.gz",  # 6 streams, event waits: the scan does not settle
        "kineto/h200_ddp_2gpu",  # collectives joined across ranks
        "kineto/h200_gpt_train_small.json.gz",
    ],
)
def test_compiled_replay_equals_the_reference_on_corpus_steps(rel: str) -> None:
    trace = corpus_trace(rel)
    ctx = path_context(trace)
    rng = np.random.default_rng(0)
    steps = 0
    for rk, _i, _name, s, e, _note in noted_step_windows(trace, ctx):
        g = build_step_graph(ctx, rk, s, e)
        if g is None:
            continue
        steps += 1
        assert np.array_equal(walk.replay_graph(g, g.wc, g.w1, g.r), g.t)
        for div in (2, 1 << 62):  # halved, gone: as the what-ifs do, on a random tenth of the weights
            wc, w1, r = (np.where(rng.random(len(x)) < 0.1, x // div, x) for x in (g.wc, g.w1, g.r))
            assert np.array_equal(walk.replay_graph(g, wc, w1, r), walk._replay_numpy(g, wc, w1, r))
    assert steps
