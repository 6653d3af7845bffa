"""``gputop-trace gaps``: JSON contract (file time base), CSV, text, options and errors."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from tests.cli_run import run_cli as _run
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")


def test_json_lists_gaps_longest_first_in_the_files_time_base(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "gaps", GPT, "--gap-threshold", "1ms", "--json")
    assert code == 0
    doc = json.loads(out)
    assert (doc["schema_version"], doc["command"], doc["threshold_ns"]) == (2, "gaps", 1_000_000)
    (dev,) = doc["devices"]
    assert (dev["rank"], dev["device"], dev["pid"]) == (0, 0, 0)
    assert abs(dev["idle_ns"] - 45_012_545) <= 1_000
    assert [g["cause"] for g in dev["gaps"]] == ["data_loading", "data_loading"]
    streams = {r["stream"]: r for r in doc["streams"]}
    assert set(streams) == {7, 13}
    assert streams[7]["host_wait_ns"] + streams[7]["kernel_wait_ns"] + streams[7]["other_ns"] == streams[7]["idle_ns"]
    first, second = dev["gaps"]
    assert first["dur_ns"] > second["dur_ns"]
    # the 8.6 ms gap starts where the first 4-byte DtoH copy (loss.item() in log_loss) ends, in file µs × 1000
    with gzip.open(GPT, "rt") as fh:
        events = json.load(fh)["traceEvents"]
    dtoh = sorted(
        (e for e in events if e.get("name") == "Memcpy DtoH (Device -> Pinned)"), key=lambda e: float(e["ts"])
    )[0]
    assert second["start_ns"] == round(float(dtoh["ts"]) * 1000) + round(float(dtoh["dur"]) * 1000)
    assert second["range"] == "log_loss" and second["launch"]["name"] == "cudaMemcpyAsync"
    assert second["launch"]["thread"] == 456
    assert second["cause_event"]["name"] == "data_load"
    assert set(second["breakdown_ns"]) == {"sync", "os", "data", "cpu", "untraced"}
    assert dev["by_cause"]["data_loading"] == {
        "count": 2,
        "total_ns": first["dur_ns"] + second["dur_ns"],
        "label": "data loading",
    }


def test_threshold_units_and_default(capsys: pytest.CaptureFixture[str]) -> None:
    _, out, _ = _run(capsys, "gaps", GPT, "--json")
    assert json.loads(out)["threshold_ns"] == 20_000
    _, out, _ = _run(capsys, "gaps", GPT, "--json", "--gap-threshold", "50us")
    doc = json.loads(out)
    assert doc["threshold_ns"] == 50_000
    assert all(g["dur_ns"] >= 50_000 for g in doc["devices"][0]["gaps"])
    code, _, err = _run(capsys, "gaps", GPT, "--gap-threshold", "5 parsecs")
    assert code == 2 and "unit" in err


def test_csv_has_one_row_per_gap(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "gaps", GPT, "--csv", "--gap-threshold", "100us")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("rank,device,pid,start_ns,dur_ns,cause")
    _, js, _ = _run(capsys, "gaps", GPT, "--json", "--gap-threshold", "100us")
    assert len(lines) - 1 == len(json.loads(js)["devices"][0]["gaps"])


def test_text_output_shows_causes_and_the_longest_gaps(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the layout of an 80-column terminal (a pipe is as wide as it needs)
    code, out, _ = _run(capsys, "gaps", GPT, "--limit", "3")
    assert code == 0
    assert "GPU 0" in out and "Idle time by cause" in out and "data loading" in out
    assert "Longest gaps (3 of 301)" in out and "host loading data in data_load" in out
    longest = out[out.index("Longest gaps") :]
    # the table's cause cell uses the same words as the app (analysis.causes.CAUSE_SHORT)
    assert re.search(r"data loading +host loading data in data_load", longest) and "data load " not in longest
    for line in out.splitlines():
        assert len(line) <= 80


def test_device_filter_and_missing_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(capsys, "gaps", GPT, "--device", "3")  # a GPU the trace does not have: a typo, said so
    assert code == 2 and "--device 3: this trace has no GPU 3; its GPUs are 0." in " ".join(err.split())
    code, out, _ = _run(capsys, "gaps", corpus_file("kineto/h200_ddp_2gpu"), "--rank", "1", "--json")
    assert [d["rank"] for d in json.loads(out)["devices"]] == [1]
    code, _, err = _run(capsys, "gaps", corpus_file("kineto/h200_ddp_2gpu"), "--rank", "1", "--device", "0")
    assert code == 2 and "no GPU 0 on rank 1; its GPUs on rank 1 are 1." in " ".join(err.split())
    code, _, err = _run(capsys, "gaps", corpus_file("kineto/h200_ddp_2gpu"), "--rank", "5")
    assert code == 2 and "no rank 5; its ranks are 0, 1." in " ".join(err.split())
    code, _, err = _run(capsys, "gaps", "/nonexistent/trace.json")
    assert code == 2 and "error" in err
