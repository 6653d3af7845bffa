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


GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")


def _piped(*args: str, columns: str | None = None) -> str:
    """``gputop-trace ARGS`` in a child process with stdout a pipe (not a terminal), as ``| grep`` or ``> file``
    see it; ``COLUMNS`` removed unless given."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns:
        env["COLUMNS"] = columns
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", *args], check=False, capture_output=True, text=True, env=env, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_piped_kernel_names_are_whole_and_lines_unpadded(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20.5, command-line side: to a pipe the kernel table was 80 columns wide, names cut to 28 characters
    (`at::native::multi_tensor_ap…`) and every row padded with spaces."""
    from gputop_trace.analysis.kernels import short_name

    _, out, _ = run_cli(capsys, "kernels", GPT, "--json", "--limit", "100")
    names = [short_name(k["name"]) for k in json.loads(out)["kernels"]]
    text = _piped("kernels", GPT, "--limit", "100")
    lines = text.splitlines()
    assert not [ln for ln in lines if ln != ln.rstrip(" ")]
    assert "…" not in text
    for name in names:  # every row's name whole, in its own cell
        assert any(f" {name} " in ln for ln in lines), name
    assert max(len(n) for n in names) > 28
    # --full-names: the whole demangled name of every row on one line
    full = _piped("kernels", GPT, "--full-names", "--limit", "100")
    longest = max((k["name"] for k in json.loads(out)["kernels"]), key=len)
    assert len(longest) > 200 and any(longest in ln for ln in full.splitlines())
    # COLUMNS still asks for a terminal's layout, still without trailing spaces
    narrow = _piped("kernels", GPT, columns="80").splitlines()
    assert max(len(ln) for ln in narrow) <= 80 and not [ln for ln in narrow if ln != ln.rstrip(" ")]


def test_piped_transfers_keep_their_headers_and_ranges() -> None:
    """To a pipe, `transfers` cut its headers (`strm` → `s…`) and range names at 80 columns; now the table is as
    wide as its contents, with the hidden-share and flags columns a wide terminal shows."""
    text = _piped("transfers", JAX)
    lines = text.splitlines()
    (head,) = [ln for ln in lines if ln.split()[:3] == ["at", "dur", "exposed"]]
    assert head.split() == ["at", "dur", "exposed", "dir", "host", "bytes", "strm", "range", "hid", "%", "flags"]
    assert not [ln for ln in lines if ln != ln.rstrip(" ")]
    table = text[text.index("Most exposed copies") : text.index("'at' is the time")]
    assert "…" not in table and "command_buffer::execute" in table
    (by_dir,) = [ln for ln in lines if ln.split()[:2] == ["dir", "host"]]
    assert by_dir.split() == ["dir", "host", "n", "bytes", "time", "exposed", "hid", "%", "GB/s"]


def _stdlib_range_gpu(name: str) -> tuple[float, int, int]:
    """A range's GPU time (µs, union of its ops per instance, summed), its op count and how many of those an
    autograd thread launched, from the raw GPT JSON with the stdlib: the launch calls (by correlation id) that
    start inside an instance on its thread or on a thread Kineto's fwdbwd flows lead to from it."""
    with gzip.open(GPT, "rt") as f:
        ev = json.load(f)["traceEvents"]
    starts = {e["id"]: e["tid"] for e in ev if e.get("cat") == "fwdbwd" and e["ph"] == "s"}
    ends = {e["id"]: e["tid"] for e in ev if e.get("cat") == "fwdbwd" and e["ph"] == "f"}
    backward_of: dict[int, set[int]] = {}
    for i, tid in starts.items():
        if i in ends and ends[i] != tid:
            backward_of.setdefault(tid, set()).add(ends[i])
    calls = {
        e["args"]["correlation"]: e
        for e in ev
        if e.get("cat") in ("cuda_runtime", "cuda_driver") and "correlation" in e.get("args", {})
    }
    ops = [e for e in ev if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X"]
    total, n, other = 0.0, 0, 0
    for r in (e for e in ev if e.get("cat") == "user_annotation" and e["name"] == name):
        threads = {r["tid"]} | backward_of.get(r["tid"], set())
        spans = []
        for k in ops:
            c = calls.get(k["args"].get("correlation"))
            if c is not None and c["tid"] in threads and r["ts"] <= c["ts"] < r["ts"] + r["dur"]:
                spans.append((k["ts"], k["ts"] + k["dur"]))
                n += 1
                other += c["tid"] != r["tid"]
        end = None
        for s, e in sorted(spans):
            if end is None or s > end:
                total += e - s
                end = e
            elif e > end:
                total += e - end
                end = e
    return total, n, other


def test_backward_range_gets_the_gpu_time_of_its_autograd_thread(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 20.4: `backward` showed 2.27 µs of GPU time (401 ms CPU over the run) because its kernels are
    launched from the autograd thread; it gets them now, and the output says how."""
    us, n, other = _stdlib_range_gpu("backward")
    assert n == 288 and other == 285 and 3_000 < us < 4_000
    code, out, _ = run_cli(capsys, "ranges", GPT, "--json")
    assert code == 0
    doc = json.loads(out)
    rows = {r["name"]: r for r in doc["ranges"]}
    bw = rows["backward"]
    assert abs(bw["gpu_ns"] - us * 1000) < 100  # ns rounding of the file's µs, per op edge
    assert bw["gpu_ops"] == n and bw["gpu_ops_autograd"] == other
    assert bw["gpu_ns"] > 1000 * bw["gpu_annotation_ns"]  # Kineto's own band for it is 2.28 µs
    step_us, step_n, _ = _stdlib_range_gpu("step_0")
    assert abs(rows["step_0"]["gpu_ns"] - step_us * 1000) < 100 and rows["step_0"]["gpu_ops"] == step_n
    assert rows["forward"]["gpu_ops_autograd"] == 0
    (th,) = doc["autograd_threads"]
    assert (th["thread"], th["owner_thread"], th["via"]) == (
        "thread 496 (python3)",
        "thread 456 (python3)",
        "Kineto fwdbwd flows",
    )
    assert th["evidence"] == 264  # the fwdbwd arrows from thread 456's forward operators to thread 496's
    code, text, _ = run_cli(capsys, "ranges", GPT)
    flat = " ".join(text.split())
    assert "thread 496 (python3) runs the backward pass of thread 456 (python3)" in flat
    assert "264 Kineto fwdbwd flows tie them" in flat and "backward 285 of 288" in flat
    (line,) = [ln for ln in text.splitlines() if ln.startswith("backward ")]
    assert line.split()[6:8] == ["3.54", "ms"]  # the GPU column


def test_backward_thread_without_flows_counts_for_the_range_around_it(capsys: pytest.CaptureFixture[str]) -> None:
    """HTA's backward_thread.json: no fwdbwd flows and no forward operators, only the autograd thread's
    `autograd::engine::evaluate_function: AddmmBackward0` inside the main thread's `## backward ##`."""
    path = corpus_file("external/call_stack/backward_thread.json")
    code, out, _ = run_cli(capsys, "ranges", path, "--json")
    assert code == 0
    doc = json.loads(out)
    rows = {r["name"]: r for r in doc["ranges"]}
    assert rows["## backward ##"]["gpu_ns"] == 45_000 and rows["## backward ##"]["gpu_ops_autograd"] == 1
    (th,) = doc["autograd_threads"]
    assert (th["thread"], th["owner_thread"]) == ("thread 24922", "thread 3914")
    assert th["via"].startswith("autograd::engine operators")
