"""torch.compile on the real corpus: the compiled H200 trace's Triton kernels decoded, the Triton example's launcher
args carried, and findings that do not tell a compiled program to use torch.compile."""

from __future__ import annotations

import json

import pytest

from gputop_trace.analysis.findings.assemble import find_findings
from gputop_trace.analysis.kernels import kernel_table
from gputop_trace.analysis.steps import find_steps
from gputop_trace.load.loader import load_file
from gputop_trace.model.kinds import Kind
from gputop_trace.tui.view.details import describe_event
from gputop_trace.tui.view.timeline_data import prepare_timeline
from tests.cli_run import run_cli
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

COMPILED = corpus_file("kineto/h200_inductor_compiled.json.gz")
TRITON = corpus_file("external/triton_example/triton_example.json.gz")


def test_fused_operations_of_the_compiled_trace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "kernels", COMPILED, "--json")
    assert code == 0
    rows = {r["name"]: r for r in json.loads(out)["kernels"]}
    red = rows["triton_red_fused_addmm_gelu_native_layer_norm_0"]
    assert red["count"] == 48
    assert red["inductor"]["kind"] == "reduction"
    assert red["inductor"]["fused_ops"] == ["addmm", "gelu", "native_layer_norm"]
    assert red["inductor"]["launch_args"] == []  # this recording's launcher ops carry no kernel_file args
    assert sum(r["inductor"] is not None for r in rows.values()) == 1


def test_no_advice_to_compile_a_compiled_program() -> None:
    t = load_file(COMPILED)
    for f in find_findings(t):
        assert "fuse small ops (torch.compile)" not in f.detail, f.detail
        assert "torch.compile or CUDA graphs" not in f.detail, f.detail
    # it is compiled but replays no CUDA graph: capturing one is still fair advice
    cpu_bound = [f for f in find_findings(t) if f.evidence.get("cause") == "cpu_bound"]
    assert cpu_bound and "the program is already compiled" in cpu_bound[0].detail


def test_compiled_regions_replace_the_wrapper_as_launcher() -> None:
    rows = {r.name: r.count for r in kernel_table(load_file(COMPILED), group_by="region")}
    assert rows == {"Torch-Compiled Region: 0/0": 144, "(outside compiled regions)": 2}


def test_triton_launcher_args(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "kernels", TRITON, "--json")
    assert code == 0
    (row,) = json.loads(out)["kernels"]
    ind = row["inductor"]
    assert ind["kind"] == "pointwise" and ind["fused_ops"] == ["add", "cos", "sin"]
    assert ind["launch_args"] == [
        {
            "kernel_file": "/tmp/torchinductor_bcoutinho/qa/cqaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggfbuu.py",
            "kernel_hash": "cqaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggfbuu",
            "kernel_backend": "triton",
        }
    ]
    t = load_file(TRITON)
    k = int(t.of_kind(Kind.KERNEL)[0])
    rows = dict(describe_event(prepare_timeline(t), k)[1])
    assert rows["compiled"] == "torch.compile pointwise kernel of add, cos, sin (Inductor kernel 0)"
    assert "hash cqaokwf2bph4egogzevc22vluasiyuui4i54zpemp6knbsggfbuu · backend triton" in rows["kernel file"]


def test_time_outside_the_compiled_region_is_a_finding() -> None:
    """The 2 ms sleep, the `.item()` syncs and the eager `aten::sum` of every `infer_N` step run outside the one
    compiled region per step: 67.2 ms of the steps' 77.2 ms (a plain JSON scan gives 67,212 µs of 77,163 µs)."""
    t = load_file(COMPILED)
    (steps,) = find_steps(t)
    assert [t.event_name(int(e)) for e in steps.events] == [f"infer_{i}" for i in range(6)]
    f = find_findings(t)
    kinds = [x.kind for x in f]
    assert "graph_breaks" not in kinds and "recompilation" not in kinds and "replay_cover" not in kinds
    outside = next(x for x in f if x.kind == "outside_compiled")
    ev = outside.evidence
    assert ev["kernels_outside"] == 2 and 0.87 <= ev["host_outside_ns"] / ev["step_ns"] < 0.875
    assert outside.title == "87.1% of step time (67.2 ms) is spent outside torch.compile regions"


def test_the_profile_note_names_the_devices_own_tracer() -> None:
    """The note on short kernels points CUDA traces to Nsight Systems, and the ROCm MI250 trace (71% of its 14
    kernels under 10 µs) to rocprofv3, not to an NVIDIA tool."""
    (cuda,) = [f for f in find_findings(load_file(COMPILED)) if f.kind == "profile_caveat"]
    assert "Nsight Systems (gputop-trace record --nsys)" in cuda.detail
    amd = load_file(corpus_file("external/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz"))
    (rocm,) = [f for f in find_findings(amd) if f.kind == "profile_caveat"]
    assert rocm.evidence["short_kernels"] == 10 and rocm.evidence["kernels"] == 14
    assert "rocprofv3" in rocm.detail and "Nsight" not in rocm.detail and "--nsys" not in rocm.detail


def test_the_triton_step_is_measured_inside_the_recording(capsys: pytest.CaptureFixture[str]) -> None:
    """The Triton example's ``ProfilerStep#1`` sits on another process (pid 3100453) than the work and is recorded
    as 13.3 s long, while the recording ends 1.84 ms into it (``Record Window End``) and the last activity,
    ``cudaDeviceSynchronize``, ends 1.53 ms into it (both read from the JSON with the standard library). The step
    is measured to that last activity: 11.6% of it is outside the compiled region, not the "100.0% of step time
    (13.3 s)" the uncut range gave, and the summary says the step was cut."""
    import gzip
    from decimal import Decimal
    from pathlib import Path

    from gputop_trace.analysis.compiled.regions import compiled_program
    from gputop_trace.analysis.findings.compiled import _host_outside_ns

    raw = json.loads(gzip.decompress(Path(TRITON).read_bytes()), parse_float=Decimal)["traceEvents"]
    (step,) = [e for e in raw if e.get("name") == "ProfilerStep#1"]
    (sync,) = [e for e in raw if e.get("name") == "cudaDeviceSynchronize"]
    (window,) = [e for e in raw if e.get("name") == "Record Window End"]
    assert (step["pid"], sync["pid"]) == (3100453, 1670242)
    ns = Decimal(1000)
    assert int((window["ts"] - step["ts"]) * ns) == 1_837_333
    assert int((sync["ts"] + sync["dur"] - step["ts"]) * ns) == 1_530_844
    assert int(step["dur"] * ns) == 13_336_315_805

    t = load_file(TRITON)
    (st,) = find_steps(t)
    assert st.dur_ns.tolist() == [1_530_844] and st.range_dur_ns.tolist() == [13_336_315_805]
    assert _host_outside_ns(t, compiled_program(t), [st]) == (177_880, 1_530_844)  # 11.6%, under the 25% bar

    code, out, _ = run_cli(capsys, "summary", TRITON, "--json")
    assert code == 0
    doc = json.loads(out)
    # the step's critical path is the compiled region's host time (issue 30); nothing else to fix but the caveat
    assert [f["kind"] for f in doc["findings"]] == ["critical_path", "profile_caveat"]
    (row,) = doc["steps"]
    assert row["step_ns"] == [1_530_844] and row["mean_ns"] == 1_530_844
    (cut,) = row["cut"]
    assert {k: cut[k] for k in ("name", "step_ns", "range_ns", "cut_start", "cut_end")} == {
        "name": "ProfilerStep#1",
        "step_ns": 1_530_844,
        "range_ns": 13_336_315_805,
        "cut_start": False,
        "cut_end": True,
    }
    note = (
        "ProfilerStep#1 runs 13.3 s past the end of the recording (which ends 1.84 ms into it), so it is measured "
        "to the last activity recorded in it: 1.53 ms of the 13.3 s its range says"
    )
    assert row["note"] == note and row["left_out"] == []

    code, out, _ = run_cli(capsys, "summary", TRITON)
    assert code == 0
    text = " ".join(out.split())
    assert "of step time" not in text and "outside torch.compile regions" not in text
    assert (
        "What to fix first 1. ProfilerStep#1: 82.1% of its critical path is host work in `Torch-Compiled Region: 0/0`;"
        " making it 2x faster saves 629 µs"
    ) in text
    assert "2. Where this profile misleads: 100.0% of its 1 kernels run under 10.0 µs" in text
    assert f"step time: 1.53 ms mean over 1 step note: {note}." in text
