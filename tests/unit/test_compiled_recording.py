"""torch.compile + CUDA graphs on the project's own H200 recording (tests/data, see its README): the replays
attributed, the fused operations and the Inductor debug output mapped, and findings that fit a program that
already compiles and replays graphs."""

from __future__ import annotations

import json
import tarfile
from functools import cache

import numpy as np
import pytest

from gputop_trace.analysis.compiled.regions import compiled_program, kernel_origins
from gputop_trace.analysis.findings.assemble import find_findings
from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.load.inductor import attach_inductor_dir
from gputop_trace.load.loader import load_file
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.tui.view.details import describe_event
from gputop_trace.tui.view.timeline_data import prepare_timeline
from tests.cli_run import run_cli
from tests.paths import ROOT

DATA = ROOT / "tests" / "data"
TRACE = str(DATA / "compiled_cudagraphs_cuda.json.gz")
#: the advice a program that already compiles and replays CUDA graphs must not get
ALREADY_DONE = ("fuse small ops (torch.compile)", "capture the step in a CUDA graph", "torch.compile or CUDA graphs")


@cache
def _trace() -> Trace:
    return load_file(TRACE, use_cache=False)


@pytest.fixture(scope="module")
def inductor_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("inductor")
    with tarfile.open(DATA / "compiled_cudagraphs_cuda_inductor.tar.gz") as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(out, filter="data")
        else:  # Python before 3.10.12 / 3.11.4: our own archive, no filter
            tar.extractall(out)
    return str(out)


def test_program_facts() -> None:
    t = _trace()
    p = compiled_program(t)
    assert p.uses_compile and p.uses_cuda_graphs
    assert len(p.graph_launches) == 10
    # 4 steps × 2 regions at compile id 0, then 2 steps × 2 regions recompiled (compile id 1)
    assert sorted(zip(p.frame.tolist(), p.compile_id.tolist(), strict=True)) == sorted(
        [(0, 0)] * 4 + [(1, 0)] * 4 + [(0, 1)] * 2 + [(1, 1)] * 2
    )
    assert len(p.compiles) == 2 and len(p.records) == 2


def test_replayed_kernels_are_attributed_to_their_replay() -> None:
    t = _trace()
    k = t.of_kind(Kind.KERNEL)
    o = kernel_origins(t, k)
    replayed = o.replay >= 0
    assert int(replayed.sum()) == 45  # 4 × 6 + 4 × 3 in steps 0-3, 6 + 3 in step 5
    assert set(t.event_name(int(a)) for a in o.replay[replayed].tolist()) == {"cudaGraphLaunch"}
    first = np.flatnonzero(o.replay_no == 0)
    assert [int(o.node[i]) for i in first] == [0, 1, 2, 3, 4, 5]
    assert {int(o.replay_size[i]) for i in first} == {6}
    assert {t.event_name(int(o.region[i])) for i in first} == {"Torch-Compiled Region: 0/0"}
    assert "triton_per_fused_addmm_gelu_native_layer_norm_0" in {t.event_name(int(k[i])) for i in first}


def test_launcher_table_names_the_replay_not_the_wrapper() -> None:
    rows = {r.name: r for r in kernel_table(_trace(), group_by="launcher")}
    assert not any(n.startswith("## Call CompiledFxGraph") for n in rows)
    assert rows["Torch-Compiled Region: 0/0 › CUDA graph replay"].count == 24
    assert rows["Torch-Compiled Region: 1/0 › CUDA graph replay"].count == 12
    assert rows["Torch-Compiled Region: 0/1 › CUDA graph replay"].count == 6
    assert rows["Torch-Compiled Region: 1/1 › CUDA graph replay"].count == 3
    region = {r.name: r.count for r in kernel_table(_trace(), group_by="region")}
    assert sum(region.values()) == len(_trace().of_kind(Kind.KERNEL))


def test_fused_operations_in_kernels_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "kernels", TRACE, "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["kernels"]}
    ind = rows["triton_per_fused_addmm_gelu_native_layer_norm_0"]["inductor"]
    assert ind["kind"] == "persistent reduction"
    assert ind["fused_ops"] == ["addmm", "gelu", "native_layer_norm"]
    # the warm-up launches of step 4 carry the launcher's kernel file args
    assert [a["kernel_backend"] for a in ind["launch_args"]] == ["triton"]
    assert ind["launch_args"][0]["kernel_file"].endswith(ind["launch_args"][0]["kernel_hash"] + ".py")
    assert all(r["inductor"] is None for n, r in rows.items() if n.startswith("sm80_xmma"))


def test_findings_fit_the_program() -> None:
    f = find_findings(_trace())
    kinds = [x.kind for x in f]
    assert kinds[0] == "recompilation"
    assert {"graph_breaks", "replay_cover", "profile_caveat", "outside_compiled"} <= set(kinds)
    assert kinds[-1] == "profile_caveat"
    for x in f:
        for words in ALREADY_DONE:
            assert words not in x.detail, (x.kind, x.detail)
    rec = f[0]
    assert "compiled 2 times" in rec.title and "recorded 2 CUDA graphs" in rec.title and "0/1, 1/1" in rec.title
    # the 1.8 s the GPU sat idle while Dynamo/Inductor compiled is told here, not as host overhead
    assert rec.evidence["gpu_idle_ns"] > 1_700_000_000
    assert all(x.evidence.get("cause") != "cpu_bound" or x.time_ns < 50_000_000 for x in f)
    breaks = next(x for x in f if x.kind == "graph_breaks")
    assert breaks.evidence["regions_per_step"] == [2] * 6
    outside = next(x for x in f if x.kind == "outside_compiled")
    # the 1 ms sleep of every step runs outside the compiled regions (compilation time is not counted as eager)
    assert outside.evidence["kernels_outside"] == 0
    assert 0.25 <= outside.evidence["host_outside_ns"] / outside.evidence["step_ns"] < 0.5
    assert outside.title.endswith("of step time (12.3 ms) is spent outside torch.compile regions")
    cover = next(x for x in f if x.kind == "replay_cover")
    assert [_trace().event_name(s["step"]) for s in cover.evidence["steps"]] == ["step_4", "step_5"]


def test_group_by_source_and_node(capsys: pytest.CaptureFixture[str], inductor_dir: str) -> None:
    code, out, _ = run_cli(capsys, "kernels", TRACE, "--json", "--group-by", "source", "--inductor-dir", inductor_dir)
    assert code == 0
    rows = {r["name"]: r["count"] for r in json.loads(out)["kernels"]}
    assert rows["record_references.py:201 in forward: x = self.a2(self.a(x))"] == 12
    assert rows["record_references.py:203 in torch_dynamo_resume_in_forward_at_202: return self.b(x).softmax(-1)"] == 6
    assert rows["(not an Inductor kernel)"] == 45
    code, out, _ = run_cli(capsys, "kernels", TRACE, "--json", "--group-by", "node", "--inductor-dir", inductor_dir)
    names = [r["name"] for r in json.loads(out)["kernels"]]
    assert any(n.startswith("add_tensor_1, add, erf, mul") for n in names)
    code, out, _ = run_cli(capsys, "kernels", TRACE, "--json", "--inductor-dir", inductor_dir)
    ind = {r["name"]: r["inductor"] for r in json.loads(out)["kernels"]}
    g = ind["triton_per_fused_addmm_gelu_native_layer_norm_0"]
    assert g["graphs"] == ["0_inference", "2_inference"]
    assert "var_mean" in g["post_grad_nodes"] and g["source_nodes"][:2] == ["input_2", "input_3"]


def test_group_by_node_needs_the_debug_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "kernels", TRACE, "--group-by", "node")
    assert code == 2 and "--inductor-dir" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "kernels", TRACE, "--inductor-dir", str(DATA))
    # The paragraph is wrapped to the terminal's width, so where a line breaks depends on the folder's path.
    assert code == 2 and "no output_code.py in it" in " ".join(err.split())


def test_details_pane(inductor_dir: str) -> None:
    t = attach_inductor_dir(_trace(), inductor_dir)
    data = prepare_timeline(t)
    k = t.of_kind(Kind.KERNEL)
    tri = next(int(e) for e in k if t.event_name(int(e)) == "triton_per_fused_addmm_gelu_native_layer_norm_0")
    rows = dict(describe_event(data, tri)[1])
    assert (
        rows["compiled"]
        == "torch.compile persistent reduction kernel of addmm, gelu, native_layer_norm (Inductor kernel 0)"
    )
    assert rows["replay"] == "CUDA graph replay 1 of 10 · kernel 3 of 6 in it · Torch-Compiled Region: 0/0"
    assert rows["source"] == "record_references.py:201 in forward: x = self.a2(self.a(x))"
    assert "model__0_inference_0.0/output_code.py:66" in rows["output code"]
    launch = int(t.launch_of[tri])
    rows = dict(describe_event(data, launch)[1])
    assert rows["replays"].startswith("CUDA graph replay 1 of 10: 6 GPU ops over ")


def test_each_replay_is_one_band_over_its_kernels() -> None:
    from gputop_trace.analysis.busy import device_busy
    from gputop_trace.analysis.intervals import total, union

    t = _trace()
    bands = np.array([e for e in t.of_kind(Kind.GPU_RANGE) if t.event_name(int(e)) == "CUDA graph replay"])
    assert len(bands) == 10
    k = t.of_kind(Kind.KERNEL)
    for b in bands.tolist():
        launch = int(t.launch_of[b])
        assert t.event_name(launch) == "cudaGraphLaunch"
        mine = k[t.launch_of[k] == launch]
        # the band spans its replay's kernels on their stream, one row above them
        assert int(t.start_ns[b]) == int(t.start_ns[mine].min()) and int(t.end_ns[b]) == int(t.end_ns[mine].max())
        assert set(t.lane[mine].tolist()) == {int(t.lane[b])}
        assert int(t.depth[b]) == 0 and set(t.depth[mine].tolist()) == {1}
    # a band is an annotation, not GPU work: busy time is the kernels' and copies' own
    (busy,) = device_busy(t)
    gpu = t.of_kind(Kind.KERNEL, Kind.MEMCPY, Kind.MEMSET)
    assert busy.busy_ns == total(*union(t.start_ns[gpu], t.end_ns[gpu]))
    rows = dict(describe_event(prepare_timeline(t), int(bands[0]))[1])
    assert rows["what"] == "CUDA-graph replay band (its kernels run one row below) on GPU 0 · stream 7"
    assert rows["replays"].startswith("CUDA graph replay 1 of 10: 6 GPU ops over ")


def test_cpu_run_still_reports_breaks_and_recompilation() -> None:
    t = load_file(str(DATA / "compiled_cudagraphs_cpu.json.gz"), use_cache=False)
    f = find_findings(t)
    assert [x.kind for x in f] == ["no_gpu_activity", "recompilation", "graph_breaks"]
    assert "compiled 2 times" in f[1].title and "CUDA graph" not in f[1].title
    assert f[2].evidence["regions_per_step"] == [2] * 6
