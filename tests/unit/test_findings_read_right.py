"""Issue 20.3 on the command line: findings listed most time at stake first (text and JSON ``priority``), no stray
markup in their words, counts with their noun in the right number, event kinds in words rather than the model's
names. The app's side (Findings panel, first screen, Markdown export): tests/tui/test_tui_issue20_words.py."""

from __future__ import annotations

import itertools
import json
import re

import pytest

from gputop_trace.units import plural
from tests.cli_run import run_cli
from tests.conftest import corpus_file

DDP = corpus_file("kineto/h200_ddp_2gpu")
GPT = corpus_file("kineto/h200_gpt_train_small.json.gz")
OSRT_ONLY = corpus_file("nsys/h200_nsys2022.4_nvtx_osrt_only.sqlite")


def test_plural_says_one_kernel_and_two_kernels() -> None:
    assert plural(1, "kernel") == "1 kernel"
    assert plural(0, "kernel") == "0 kernels"
    assert plural(1234, "copy", "copies") == "1,234 copies"
    assert plural(1, "copy", "copies") == "1 copy"
    assert plural(2, "kernel launch call") == "2 kernel launch calls"


@pytest.mark.corpus
def test_ddp_findings_are_listed_most_time_at_stake_first(capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's case: rank 1 GPU 1's 95.2 ms of idle (70.2 % of its span) was listed before rank 0's 100 ms of
    collective waiting (69.5 %); the documented order is time at stake."""
    code, out, _ = run_cli(capsys, "summary", DDP, "--json")
    assert code == 0
    fs = json.loads(out)["findings"]
    assert [f["priority"] for f in fs] == list(range(1, len(fs) + 1))
    assert all(a["time_ns"] >= b["time_ns"] for a, b in itertools.pairwise(fs))
    assert fs[0]["kind"] == "collective_wait" and fs[0]["time_ns"] > fs[1]["time_ns"] > 90_000_000
    assert fs[0]["severity"] < fs[1]["severity"]  # the old order (by share) would have swapped them
    code, text, _ = run_cli(capsys, "summary", DDP)
    flat = " ".join(text.split())
    first, second = flat.index("1. Rank 0 waits 100 ms"), flat.index("2. rank 1 GPU 1:")
    assert first < second


@pytest.mark.corpus
def test_pageable_copy_finding_has_no_stray_star(capsys: pytest.CaptureFixture[str]) -> None:
    code, text, _ = run_cli(capsys, "summary", GPT)
    assert code == 0
    flat = " ".join(text.split())
    assert "An asynchronous copy (a MemcpyAsync call) to or from pageable" in flat
    assert "*" not in flat
    # the event counts in words: no "cpu_op 2,904", no "1 kernels"
    assert "417 kernels" in flat and "2,904 CPU operators" in flat and "56 annotation ranges" in flat
    assert "cpu_op" not in flat and not re.search(r"\b1 (kernels|events|gaps|copies|steps)\b", flat)


@pytest.mark.corpus
def test_no_gpu_finding_names_the_kinds_in_words(capsys: pytest.CaptureFixture[str]) -> None:
    """An nsys export with only OS runtime calls: "1 CUDA API call, 15,547 OS runtime calls, 10 profiler overhead
    events", not "1 api, 15547 osrt, 10 overhead"."""
    code, text, _ = run_cli(capsys, "summary", OSRT_ONLY)
    assert code == 0
    flat = " ".join(text.split())
    assert "The profile holds 1 CUDA API call, 15,547 OS runtime calls, 10 profiler overhead events" in flat
    assert not re.search(r"\d (osrt|overhead|api|range)\b", flat)
    code, out, _ = run_cli(capsys, "summary", OSRT_ONLY, "--json")
    (f,) = json.loads(out)["findings"]
    assert f["evidence"]["events"] == {"api": 1, "osrt": 15547, "overhead": 10}  # the JSON keeps its stable keys
