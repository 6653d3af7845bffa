"""``gputop-trace transfers``: JSON contract, CSV and text on the real GPT trace."""

from __future__ import annotations

import json

import pytest

from tests.cli_run import run_cli
from tests.conftest import corpus_file

pytestmark = pytest.mark.corpus

GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")


def test_json_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "transfers", GPT, "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["command"] == "transfers" and doc["source"]["format"] == "kineto"
    assert len(doc["copies"]) == 49 and doc["uvm"] == []
    assert doc["exposed_ns"] == doc["devices"][0]["exposed_ns"]
    flags = {f["flag"]: f for f in doc["flags"]}
    assert set(flags) == {"pageable_async", "copy_on_compute_stream"}
    pa = flags["pageable_async"]
    assert pa["count"] == 4 and "pin" in pa["fix"].lower()
    top = pa["examples"][0]
    assert (top["direction"], top["host_memory"], top["bytes"], top["range"]) == (
        "DtoH",
        "pageable",
        33554432,
        "checkpoint_d2h",
    )
    # file time base: µs × 1000, a Kineto trace starts around 5.2e15 ns
    assert top["start_ns"] > 5_000_000_000_000_000 and top["dur_ns"] == 23_992_976
    assert {r["direction"] for r in doc["by_direction"]} == {"HtoD", "DtoH", "memset"}
    for c in doc["copies"]:
        assert c["overlap_ns"] + c["exposed_ns"] == c["dur_ns"]
        assert c["direction"] in ("HtoD", "DtoH", "DtoD", "PtoP", "memset")


def test_csv_and_text(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")  # the layout of an 80-column terminal (a pipe is as wide as it needs)
    code, out, _ = run_cli(capsys, "transfers", GPT, "--csv")
    lines = out.strip().splitlines()
    assert code == 0 and lines[0].startswith("rank,device,stream,start_ns,dur_ns") and len(lines) == 50
    code, out, _ = run_cli(capsys, "transfers", GPT, "--limit", "3")
    assert code == 0
    assert "async copy from pageable memory: 4 copies" in out
    assert "Most exposed copies (3 of 49)" in out and "checkpoint_d2h" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_device_filter(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "transfers", GPT, "--device", "0", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["copies"] and {c["device"] for c in doc["copies"]} == {0}
    code, out, err = run_cli(capsys, "transfers", GPT, "--device", "1", "--json")
    assert code == 2 and out == "" and "this trace has no GPU 1" in err
