"""A profile with no GPU activity says where the host time went (issue 31, 1): the summary's host table and its
first finding name the operators by self CPU time, with ``ops``' own figures; a GPU trace's summary does not
build the operator table at all (``host`` is null)."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_cli
from tests.paths import CORPUS, SAMPLES

CPU_ONLY = str(CORPUS / "external/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz")


@pytest.mark.corpus
def test_the_cpu_only_rank_says_where_its_host_time_went(capsys: pytest.CaptureFixture[str]) -> None:
    """Rank 34 of 300 recorded only CPU events: ten ``gloo:all_reduce`` ranges on two threads (2.14 s in all),
    one ``ProfilerStep#551`` (210 ms) and four ``aten::empty``. The host table is ``ops``' rows, most self CPU
    first, and its shares add up to 100 %."""
    code, out, _ = run_cli(capsys, "summary", "--json", CPU_ONLY)
    assert code == 0
    doc = json.loads(out)
    host = doc["host"]
    code, out, _ = run_cli(capsys, "ops", "--json", CPU_ONLY)
    ops = json.loads(out)["ops"]
    assert [(r["name"], r["count"], r["self_cpu_ns"], r["cpu_total_ns"]) for r in host["top_ops"]] == [
        (r["name"], r["count"], r["self_cpu_ns"], r["cpu_total_ns"]) for r in ops
    ]
    assert [r["name"] for r in host["top_ops"]] == ["gloo:all_reduce", "ProfilerStep*", "aten::empty"]
    assert host["operators"] == 3 and host["self_cpu_total_ns"] == sum(r["self_cpu_ns"] for r in ops)
    assert [r["pct"] for r in host["top_ops"]] == [91.042, 8.958, 0.0]
    assert doc["steps"][0]["step_ns"] == [210_109_162]
    (f,) = doc["findings"]
    assert f["kind"] == "no_gpu_activity" and "a CPU run" in f["detail"]
    assert "Where it went, by self CPU time: gloo:all_reduce 91.0%, ProfilerStep* 9.0%, aten::empty 0.0%" in f["detail"]
    code, out, _ = run_cli(capsys, "summary", CPU_ONLY)
    text = " ".join(out.split())
    assert "Host time by operator (all 3 by self CPU; % of 2.35 s)" in text
    assert "gloo:all_reduce 10 2.14 s 2.14 s 91.0" in text and "step time: 210 ms mean over 1 step" in text
    ranges = text[text.index("Top 2 ranges by CPU time") :]
    assert "range n CPU" in ranges and "gloo:all_reduce 10 2.14 s ProfilerStep#551 1 210 ms" in ranges
    assert "GPU" not in ranges  # no GPU columns of zeros for a profile without a GPU


def test_a_gpu_summary_builds_no_operator_table(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host table costs an operator table: only a profile with no GPU activity pays for it."""
    from gputop_trace.analysis.operators import host_time as host_ops

    def boom(*_: object, **__: object) -> None:
        raise AssertionError("the operator table was built for a GPU trace")

    monkeypatch.setattr(host_ops, "op_table", boom)
    (sample,) = sorted(SAMPLES.glob("*.json.gz"))[:1]
    code, out, err = run_cli(capsys, "summary", "--json", str(sample))
    assert code == 0, err
    doc = json.loads(out)
    assert doc["devices"] and doc["host"] is None
