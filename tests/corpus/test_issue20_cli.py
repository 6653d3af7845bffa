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
