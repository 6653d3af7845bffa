"""Issue 20 on the command line, on real corpus files: JAX memsets carry their bytes (14)."""

from __future__ import annotations

import gzip
import json
import re

import pytest

from tests.cli_run import run_cli
from tests.conftest import corpus_file

JAX = corpus_file("jax/h200_jax_mlp.perfetto_trace.json.gz")

pytestmark = pytest.mark.corpus


def _jax_gpu_memsets() -> list[tuple[int, int]]:
    """``(start µs × 1000 rounded, num_bytes)`` of every memset on a ``/device:GPU`` process, read with the stdlib
    (the host's ``Memset`` calls carry the same details string but are CPU events)."""
    with gzip.open(JAX, "rt") as f:
        events = json.load(f)["traceEvents"]
    gpu_pids = {
        e["pid"]
        for e in events
        if e.get("ph") == "M" and e.get("name") == "process_name" and e["args"]["name"].startswith("/device:GPU")
    }
    return [
        (e["ts"], int(re.search(r"num_bytes:(\d+)", e["args"]["Memset_details"]).group(1)))  # type: ignore[union-attr]
        for e in events
        if e.get("ph") == "X" and e["pid"] in gpu_pids and "Memset_details" in (e.get("args") or {})
    ]


def test_jax_memsets_show_their_bytes(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20.14: ``Memset_details: "kind:unknown num_bytes:4 async:1"`` gives 4 B per memset, not 0 B."""
    expected = _jax_gpu_memsets()
    assert len(expected) == 25 and sum(b for _, b in expected) == 100
    code, out, _ = run_cli(capsys, "transfers", JAX, "--json")
    assert code == 0
    doc = json.loads(out)
    memsets = [c for c in doc["copies"] if c["kind"] == "memset"]
    assert len(memsets) == len(expected)
    assert sorted(c["bytes"] for c in memsets) == sorted(b for _, b in expected)
    assert all(c["async"] is True for c in memsets)  # async:1
    (row,) = [r for r in doc["by_direction"] if r["direction"] == "memset"]
    assert row["count"] == 25 and row["bytes"] == 100
    code, text, _ = run_cli(capsys, "transfers", JAX)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("memset")]
    assert line.split()[2:4] == ["25", "100"] and "B" in line.split()[4]


DDP = corpus_file("kineto/h200_ddp_2gpu")


def test_straggler_verdict_names_the_operator_not_the_step(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20.12: rank 1 is late because its host generates data in `aten::randn` (15–21 ms a step, what the
    Gaps panel names for its idle gaps); the verdict said only `step_<n>`."""
    code, text, _ = run_cli(capsys, "ranks", DDP)
    assert code == 0
    flat = " ".join(text.split())
    assert "Meanwhile its host was in `step_<n> › aten::randn`" in flat
    code, out, _ = run_cli(capsys, "ranks", DDP, "--json")
    doc = json.loads(out)
    top = doc["stragglers"]["host_activity"][0]
    assert top["activity"] == "step_<n> › aten::randn"
    # most of rank 0's waiting (100 ms over 30 collectives) falls while rank 1 is in aten::randn
    wait = next(r for r in doc["ranks"] if r["rank"] == 0)["collective_wait_ns"]
    assert 0.6 * wait < top["others_wait_ns"] <= wait
    assert "`step_<n> › aten::randn`" in doc["verdict"]
    # the Gaps panel's attribution of rank 1's long gaps agrees
    code, out, _ = run_cli(capsys, "gaps", DDP, "--rank", "1", "--json")
    longest = json.loads(out)["devices"][0]["gaps"][:4]
    assert {g["cause_event"]["name"] for g in longest} == {"aten::randn"}
