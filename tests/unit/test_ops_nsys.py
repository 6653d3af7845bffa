"""``ops`` on an Nsight Systems export of a run under ``emit_nvtx`` (corpus: GindaChen/nsys-ai, H100, 16k NVTX
operator ranges): one row per operator without the per-call ``op_id`` suffix, and the device time of each operator
is the work launched by the runtime calls inside it (checked here against a plain time-containment count). Also:
a rank of a merged multi-rank Kineto job gives the table of its own file (shape strings re-interned)."""

from __future__ import annotations

from collections import Counter, defaultdict

import numpy as np
import pytest

from gputop_trace.analysis.operators.table import op_table
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import GPU_BUSY_KINDS, Kind
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

NSYS = corpus_file("nsys/GindaChen__nsys-ai__h100_2gpu_1s.sqlite")


def test_emit_nvtx_ranges_make_the_operator_table() -> None:
    trace = load_paths([NSYS])
    rows = {r.name: r for r in op_table(trace) if not r.is_device}
    ranges = trace.of_kind(Kind.RANGE)
    calls = Counter(trace.event_name(int(i)).split(", op_id")[0].split(", seq")[0] for i in ranges)
    assert rows["aten::mm"].count == calls["aten::mm"] > 100
    assert rows["aten::copy_"].count == calls["aten::copy_"]
    assert not any(", op_id" in name for name in rows)
    # device time of an operator: the GPU work whose launch call lies innermost inside one of its ranges
    own: dict[str, int] = defaultdict(int)
    gpu = trace.of_kind(*GPU_BUSY_KINDS)
    launch = trace.launch_of[gpu]
    for op, call in zip(gpu[launch >= 0].tolist(), launch[launch >= 0].tolist(), strict=True):
        same = ranges[trace.lane[ranges] == trace.lane[call]]
        t = trace.start_ns[call]
        around = same[
            (trace.start_ns[same] <= t) & (trace.start_ns[same] + trace.dur_ns[same] >= t + trace.dur_ns[call])
        ]
        if len(around):
            inner = around[np.argmax(trace.start_ns[around])]
            own[trace.event_name(int(inner)).split(", op_id")[0]] += int(trace.dur_ns[op])
    for name in ("aten::mm", "aten::copy_", "aten::mul", "aten::bmm"):
        assert rows[name].self_device_ns == own[name] > 0, name
    assert rows["aten::mm"].self_cpu_ns < rows["aten::mm"].cpu_total_ns


def test_a_rank_of_a_merged_job_gives_the_table_of_its_own_file() -> None:
    """Merging ranks re-interns the shape strings: rank 0's table from the two-rank job equals its file's."""
    from gputop_trace.analysis.operators.tree import build_op_tree

    job = load_paths([corpus_file("kineto/h200_ddp_2gpu")])
    alone = load_paths([corpus_file("kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz")])
    assert len(job.op_args) > len(alone.op_args) > 0

    def table(trace: object, tree: object = None) -> dict[tuple[str, str | None], tuple[int, int]]:
        rows = op_table(trace, group_by="shape", tree=tree)  # type: ignore[arg-type]
        return {(r.name, r.shapes): (r.count, r.self_device_ns) for r in rows}

    assert table(job, build_op_tree(job, 0)) == table(alone)


def test_ops_on_an_nsys_export_says_why_there_are_no_flops(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31, 3e: nsys exports have no operator shapes: ``ops`` says so in one line of text under the table,
    with no empty FLOPs/rate columns, and its JSON says why in ``flops_unavailable`` (per-op flops null); a Kineto
    trace with shapes has its FLOPs columns and ``flops_unavailable`` null."""
    import json

    from gputop_trace.report.ops_json import NSYS_NO_FLOPS_LINE
    from tests.cli_run import run_cli

    monkeypatch.setenv("COLUMNS", "80")
    code, out, _ = run_cli(capsys, "ops", NSYS)
    assert code == 0
    lines = out.splitlines()
    assert NSYS_NO_FLOPS_LINE in lines and len(NSYS_NO_FLOPS_LINE) <= 80
    header = next(line for line in lines if line.startswith("operator"))
    assert "FLOP" not in header and "rate" not in header
    doc = json.loads(run_cli(capsys, "ops", "--json", NSYS)[1])
    assert "no operator input shapes with their types" in doc["flops_unavailable"]
    assert doc["ops"] and all(op["flops"] is None and op["achieved_flop_per_s"] is None for op in doc["ops"])
    kineto = corpus_file("kineto/h200_gpt_train_small.json.gz")
    doc = json.loads(run_cli(capsys, "ops", "--json", kineto)[1])
    assert doc["flops_unavailable"] is None and any(op["flops"] for op in doc["ops"])
    monkeypatch.setenv("COLUMNS", "160")
    code, out, _ = run_cli(capsys, "ops", kineto)
    assert "FLOPs" in out and NSYS_NO_FLOPS_LINE not in out
