"""Steps against the ranges that recorded them (issue 31, items 3b, 3c and 4).

Every step of every corpus trace is checked against its step range as the file records it (read from the raw
JSON, not through the loader): the reported duration is the range's unless the summary lists the step as cut,
and then the reason holds in the file itself (the profiler's own ``Record Window End`` mark, or the end of its
``PyTorch Profiler`` span, lies before the range's end). The hand-trimmed ``call_stack`` trace (item 4: 413.451 ms
recorded, 395.354 ms reported before) has no profiler mark at all, so nothing says its recording stopped before
its one step did: the step is its range. The Triton trace's step range runs 13.3 s past the recording: its span
and its top-ranges row count only the recorded part and say so (3b). A step that starts before the recording's
start is cut there, with the reason (3c, a synthetic Kineto file: the corpus has none).
"""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tests.cli_run import run_cli
from tests.paths import CORPUS

#: Kineto / JAX / external Chrome traces (nsys exports in the corpus have no step ranges)
_NOT_TRACES = ("benchmark_simple_add_et", "memory_timeline")
_NS = Decimal(1000)


def _ns(us: Decimal) -> int:
    """A file time in µs to the nearest ns (some files write ``20387.973999999998``)."""
    return round(us * _NS)


def _chrome_files() -> list[str]:
    if not CORPUS.is_dir():
        return []
    files = [p for sub in ("kineto", "jax", "external") for p in sorted((CORPUS / sub).rglob("*.json*"))]
    return [str(p.relative_to(CORPUS)) for p in files if not any(n in p.name for n in _NOT_TRACES)]


@cache
def _raw(rel: str) -> list[dict[str, Any]]:
    data = (CORPUS / rel).read_bytes()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    doc = json.loads(data, parse_float=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    return [e for e in events if isinstance(e, dict)]


def _summary(capsys: pytest.CaptureFixture[str], path: str, *extra: str) -> Any:
    code, out, err = run_cli(capsys, "summary", path, *extra)
    assert code == 0, err
    return json.loads(out) if "--json" in extra else " ".join(out.split())


@pytest.mark.corpus
@pytest.mark.parametrize("rel", _chrome_files())
def test_every_step_is_its_recorded_range_unless_a_true_reason_is_given(
    rel: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = _summary(capsys, str(CORPUS / rel), "--json")
    raw = _raw(rel)
    marks_end = [
        (e["ts"] + e.get("dur", 0)) * _NS
        for e in raw
        if e.get("name") == "Record Window End" or str(e.get("name", "")).startswith("PyTorch Profiler (")
    ]
    checked = 0
    for row in doc["steps"]:
        cut = {c["name"]: c for c in row["cut"]}
        for name, start, step, whole in zip(
            row["names"], row["start_ns"], row["step_ns"], row["range_ns"], strict=True
        ):
            c = cut.get(name)
            at = start if c is None else c["range_start_ns"]
            same = [e for e in raw if e.get("name") == name and e.get("ph") == "X" and _ns(e["ts"]) == at]
            assert same, f"{name}: no range of that name starts at {at} ns in the file"
            assert whole in [_ns(e["dur"]) for e in same], f"{name}: range {whole} ns, not the file's"
            checked += 1
            if c is None:
                assert step == whole, f"{name}: {step} ns reported, {whole} ns recorded, and no reason given"
                continue
            assert c["reason"] and (c["reason"] in row["note"] or "cut the same way" in row["note"])
            assert c["range_end_ns"] == at + whole
            if c["cut_end"]:  # the profiler's own mark says the recording ended before the range did
                assert marks_end and max(marks_end) < c["range_end_ns"]
                assert c["end_ns"] < c["range_end_ns"] and row["recording_end_ns"] == int(max(marks_end))
    assert checked == sum(r["count"] for r in doc["steps"])


@pytest.mark.corpus
def test_a_hand_trimmed_step_with_no_profiler_mark_is_its_range(capsys: pytest.CaptureFixture[str]) -> None:
    """Item 4: ``call_stack/backward_thread.json`` keeps one step range (413.451 ms) and a few events of its
    backward pass, the last a kernel ending 395.354 ms into the step; the tool used to take that kernel's end for
    the end of the recording and cut the step there (-18.097 ms). The file has no ``PyTorch Profiler`` span and no
    ``Record Window End`` mark: nothing says the recording stopped before the profiler closed the step."""
    path = str(CORPUS / "external/call_stack/backward_thread.json")
    (row,) = _summary(capsys, path, "--json")["steps"]
    assert row["names"] == ["ProfilerStep#552"] and row["step_ns"] == row["range_ns"] == [413_451_000]
    assert row["cut"] == [] and row["note"] is None and row["recording_end_ns"] is None
    text = _summary(capsys, path)
    assert "step time: 413 ms mean over 1 step" in text and "past the end of the recording" not in text


@pytest.mark.corpus
def test_the_triton_span_and_top_ranges_count_only_the_recording(capsys: pytest.CaptureFixture[str]) -> None:
    """Item 3b: the step range runs 13.3 s past a recording that the profiler's ``Record Window End`` closes
    355.658 ms after its ``PyTorch Profiler`` span starts; the span and the range row use the steps' cut."""
    path = str(CORPUS / "external/triton_example/triton_example.json.gz")
    doc = _summary(capsys, path, "--json")
    assert doc["span_as_recorded_ns"] == 13_690_136_806
    assert doc["span_ns"] == 355_658_334  # the profiler's span start → Record Window End
    (rng,) = doc["top_ranges"]
    assert rng["name"] == "ProfilerStep#1" and rng["total_ns"] == doc["steps"][0]["step_ns"][0] == 1_530_844
    assert rng["cut"] == 1 and rng["recorded_total_ns"] == 13_336_315_805
    assert doc["span_note"] == (
        "1 annotation range (ProfilerStep#1) runs outside the recording: cut to it as the steps are, in the span "
        "and in the range times; as recorded they make the span 13.7 s"
    )
    text = _summary(capsys, path)
    assert "span: 356 ms note: 1 annotation range (ProfilerStep#1) runs outside the recording" in text
    assert "ProfilerStep#1 1 1.53 ms" in text and "13.3 s 0 ns" not in text


def _kineto(tmp_path: Path, events: list[dict[str, Any]]) -> str:
    span = {"ph": "X", "cat": "Trace", "name": "PyTorch Profiler (0)", "pid": "Spans", "tid": "PyTorch Profiler",
            "ts": 10_000.0, "dur": 5_000.0}  # fmt: skip
    end = {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 15_100.0}
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": [span, end, *events]}))
    return str(path)


def test_a_step_that_starts_before_the_recording_is_cut_at_its_start(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 3c: the profiler's span starts at 10 ms; step_0 is recorded from 8 ms (2 ms before it) to 11 ms,
    step_1 from 11 ms to 13 ms, and step_9 lies wholly before the recording (nothing recorded in it)."""
    ops = [
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10_500.0 + 1000 * i, "dur": 300.0}
        for i in range(3)
    ]
    steps = [
        {"ph": "X", "cat": "user_annotation", "name": n, "pid": 1, "tid": 1, "ts": ts, "dur": dur}
        for n, ts, dur in (("step_9", 7_000.0, 500.0), ("step_0", 8_000.0, 3_000.0), ("step_1", 11_000.0, 2_000.0))
    ]
    path = _kineto(tmp_path, steps + ops)
    (row,) = _summary(capsys, path, "--json")["steps"]
    assert row["names"] == ["step_0", "step_1"] and row["step_ns"] == [1_000_000, 2_000_000]
    assert row["range_ns"] == [3_000_000, 2_000_000] and row["recording_start_ns"] == 10_000_000
    (cut,) = row["cut"]
    assert cut["cut_start"] and not cut["cut_end"]
    assert (cut["start_ns"], cut["range_start_ns"], cut["end_ns"]) == (10_000_000, 8_000_000, 11_000_000)
    reason = (
        "step_0 starts 2.00 ms before the recording started, so it is measured from the start of the recording: "
        "1.00 ms of the 3.00 ms its range says"
    )
    assert cut["reason"] == reason and row["left_out"] == ["step_9"]
    assert row["note"] == f"{reason}; 1 step left out (step_9): nothing was recorded in it while the recording ran"
    text = _summary(capsys, path)
    assert "step time: 1.50 ms mean over 2 steps" in text and f"note: {reason};" in text
