"""``gputop-trace ranges``: JSON contract, options, CSV and text."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_cli
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")


def test_json_rows(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "ranges", GPT, "--json")
    assert code == 0
    doc = json.loads(out)
    rows = {r["name"]: r for r in doc["ranges"]}
    assert set(doc["ranges"][0]) >= {
        "name", "domain", "count", "total_ns", "mean_ns", "gpu_ns", "gpu_ops", "gpu_ops_autograd", "max_depth"
    }  # fmt: skip
    assert all(
        isinstance(r["gpu_ops_autograd"], int) and 0 <= r["gpu_ops_autograd"] <= r["gpu_ops"] for r in rows.values()
    )
    (th,) = doc["autograd_threads"]
    assert set(th) == {"rank", "pid", "thread", "owner_thread", "via", "evidence", "note"}
    assert rows["checkpoint_d2h"]["gpu_ns"] == 23_992_976
    assert rows["layer_1"]["count"] == 3 and rows["layer_1"]["max_depth"] == 2
    totals = [r["total_ns"] for r in doc["ranges"]]
    assert totals == sorted(totals, reverse=True)


def test_sort_and_name_filter(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = run_cli(capsys, "ranges", GPT, "--json", "--sort", "gpu")
    gpu = [r["gpu_ns"] for r in json.loads(out)["ranges"]]
    assert gpu == sorted(gpu, reverse=True)
    _, out, _ = run_cli(capsys, "ranges", GPT, "--json", "--name", "LAYER")
    assert sorted(r["name"] for r in json.loads(out)["ranges"]) == ["layer_0", "layer_1"]


def test_csv_and_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the layout of an 80-column terminal (a pipe is as wide as it needs)
    code, out, _ = run_cli(capsys, "ranges", GPT, "--csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("name,domain,count,total_ns") and len(lines) == 14
    code, out, _ = run_cli(capsys, "ranges", GPT, "--limit", "5")
    assert code == 0 and "Ranges (5 of 13)" in out and "checkpoint_d2h" in out and "annot" in out
    assert max(len(line) for line in out.splitlines()) <= 80
