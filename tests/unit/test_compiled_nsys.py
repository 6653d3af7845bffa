"""CUDA-graph replays in an Nsight Systems export (synthetic, node-level graph trace): kernels attributed to their
``cudaGraphLaunch``, the graph id shown, and no advice to capture CUDA graphs."""

from __future__ import annotations

from pathlib import Path

from gputop_trace.analysis.compiled.regions import compiled_program, kernel_origins
from gputop_trace.analysis.findings.compiled import launch_fix
from gputop_trace.model.kinds import Kind
from gputop_trace.parsers.nsys import loader as nsys
from gputop_trace.tui.view.details import describe_event
from gputop_trace.tui.view.timeline_data import prepare_timeline
from tests.fixtures.nsys_synth import SynthExport

MAIN = 10


def test_nsys_graph_kernels(tmp_path: Path) -> None:
    ex = SynthExport()
    ex.process("python3")
    ex.thread(MAIN, "python3")
    ex.gpu(0)
    ex.runtime(1000, 1100, tid=MAIN, corr=40, name="cudaGraphLaunch_v10000")
    for j, start in enumerate((2000, 3000, 4000)):
        ex.kernel(start, start + 500, corr=40, name=f"void k{j}<int>(int *)", graph_id=12, graph_node=90 + j)
    ex.runtime(5000, 5100, tid=MAIN, corr=41, name="cudaLaunchKernel_v7000")
    ex.kernel(6000, 6500, corr=41)
    t = nsys.load(str(ex.write(tmp_path / "g.sqlite")))
    prog = compiled_program(t)
    assert prog.uses_cuda_graphs and not prog.uses_compile and len(prog.graph_launches) == 1
    k = t.of_kind(Kind.KERNEL)
    o = kernel_origins(t, k, prog)
    assert o.replay.tolist().count(int(prog.graph_launches[0])) == 3 and (o.replay < 0).sum() == 1
    assert sorted(o.node[o.replay >= 0].tolist()) == [0, 1, 2]
    second = int(k[(o.replay >= 0) & (o.node == 1)][0])
    rows = dict(describe_event(prepare_timeline(t), second)[1])
    assert rows["replay"] == "CUDA graph replay 1 of 1 · kernel 2 of 3 in it"
    assert rows["CUDA graph"] == "graph id 12, node 91"
    assert t.kernels.graph_node.tolist() == [90, 91, 92, -1]  # the kernel outside the graph has no node
    # the program already replays graphs: the launch advice says to capture more of the step, not to start
    assert "already replays CUDA graphs" in launch_fix(prog)
    assert "capture the step in a CUDA graph" not in launch_fix(prog)
