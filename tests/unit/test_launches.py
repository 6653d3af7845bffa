"""Launch behaviour: launch duration, launch delay, the three flags, and queue depth per stream."""

from __future__ import annotations

import numpy as np
import pytest

from gputop_trace.analysis.launches import DELAY_OUTLIER_NS, SLOW_LAUNCH_NS, launch_behaviour
from gputop_trace.load.loader import load_paths
from tests.conftest import corpus_file
from tests.synthetic import Synth

US = 1_000


def test_launch_duration_and_delay_clipped_at_zero() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    a = s.launch(th, 0, 5 * US)
    s.kernel(st7, 12 * US, 20 * US, launch=a)  # 7 µs after the call returned
    b = s.launch(th, 40 * US, 5 * US)
    s.kernel(st7, 43 * US, 20 * US, launch=b)  # started before its call returned
    s.kernel(st7, 100 * US, 1 * US)  # no launch known: not in the report
    rep = launch_behaviour(s.build())
    assert len(rep) == 2
    assert rep.launch_ns.tolist() == [5 * US, 5 * US]
    assert rep.delay_ns.tolist() == [7 * US, 0]


def test_flags_delay_outliers_slow_launches_and_kernels_shorter_than_their_launch() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    a = s.launch(th, 0, 5 * US)
    s.kernel(st7, 5 * US + DELAY_OUTLIER_NS + 1, 50 * US, "late", launch=a)
    b = s.launch(th, 300 * US, SLOW_LAUNCH_NS + 1)
    s.kernel(st7, 400 * US, 100 * US, "slow-launched", launch=b)
    c = s.launch(th, 600 * US, 8 * US)
    s.kernel(st7, 610 * US, 2 * US, "tiny", launch=c)
    t = s.build()
    rep = launch_behaviour(t)
    names = [t.event_name(int(i)) for i in rep.op]

    def flagged(idx: np.ndarray) -> list[str]:
        return [names[int(i)] for i in idx]

    assert flagged(rep.delay_outliers) == ["late"]
    assert flagged(rep.slow_launches) == ["slow-launched"]
    assert flagged(rep.shorter_than_launch) == ["tiny"]


def test_a_graph_launch_counts_once_and_its_nodes_are_not_flagged() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    g = s.launch(th, 0, 200 * US, "cudaGraphLaunch")
    for i in range(4):
        s.kernel(st7, 300 * US + i * 10 * US, 2 * US, f"node{i}", launch=g)
    rep = launch_behaviour(s.build())
    assert len(rep) == 4
    assert len(rep.slow_launches) == 1
    assert len(rep.delay_outliers) == 0 and len(rep.shorter_than_launch) == 0


def test_queue_depth_rises_at_launch_and_falls_at_gpu_start() -> None:
    s = Synth()
    th, st7 = s.thread(), s.stream()
    for i in range(3):  # three launches queued back to back, the GPU starts them later
        la = s.launch(th, i * 10 * US, 2 * US)
        s.kernel(st7, 100 * US + i * 50 * US, 40 * US, launch=la)
    (q,) = launch_behaviour(s.build()).streams
    assert q.stream == 7 and q.launches == 3 and q.max_depth == 3
    assert q.depth.tolist() == [1, 2, 3, 2, 1, 0]
    # depth 1 for 10 µs, 2 for 10, 3 for 80, 2 for 50, 1 for 50, over 200 µs
    assert q.mean_depth == pytest.approx((10 + 20 + 240 + 100 + 50) / 200)


def test_empty() -> None:
    s = Synth()
    s.kernel(s.stream(), 0, 1)
    rep = launch_behaviour(s.build())
    assert len(rep) == 0 and rep.streams == []


@pytest.mark.corpus
def test_corpus_launches() -> None:
    t = load_paths([corpus_file("kineto/h200_inductor_compiled.json.gz")])
    rep = launch_behaviour(t)
    assert len(rep) == 150
    worst = int(np.argmax(rep.launch_ns))
    # one cudaLaunchKernel takes 11.6 ms (first launch of a reduction kernel)
    assert t.event_name(int(rep.api[worst])) == "cudaLaunchKernel" and rep.launch_ns[worst] > 10_000_000
    j = load_paths([corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")])
    jrep = launch_behaviour(j)
    # XLA launches command buffers as CUDA graphs: one cuGraphLaunch per step for many ops
    assert len(jrep.slow_launches) == len(np.unique(jrep.api)) < len(jrep)
