"""Steps are measured inside the recording (analysis/steps.py): a step range that runs past the end of the
recording is cut at the last activity recorded on its rank, a step range with nothing recorded in it is left out,
and every figure built on steps (the summary's step time, the torch.compile findings) reads the cut duration."""

from __future__ import annotations

import json

import pytest

from gputop_trace.analysis.findings.assemble import find_findings
from gputop_trace.analysis.steps import find_steps, steps_note
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import Lane
from gputop_trace.model.trace import Trace
from gputop_trace.report.summary import steps_json
from tests.synthetic import Synth

LONG_NS = 10_000_000_000  # a step range recorded as 10 s long


def _bookkeeping(s: Synth, at: int) -> None:
    """Kineto's ``Record Window End`` mark: the profiler's own event, on a lane of no thread."""
    lane = s.lane(("other", "events"), Lane(kind=LaneKind.OTHER, name="events"))
    s.ev(lane, Kind.MARKER, "Record Window End", at, 0)


def _three_steps() -> Trace:
    """step_1 ends inside the recording 600 µs after its last event (kept whole: untraced host time at its end);
    step_2 runs 10 s past a recording that ends at 4 ms, its last activity ends at 2.5 ms; step_3 starts at 3 ms,
    after the last activity, and also runs past the end."""
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "step_1", 0, 1_000_000)
    s.ev(th, Kind.CPU_OP, "aten::mm", 100_000, 300_000)
    s.ev(th, Kind.RANGE, "step_2", 1_000_000, LONG_NS + 3_000_000)
    s.ev(th, Kind.CPU_OP, "aten::mm", 1_200_000, 1_300_000)
    s.ev(th, Kind.RANGE, "step_3", 3_000_000, 5_000_000)
    _bookkeeping(s, 4_000_000)
    return s.build()


def test_a_step_past_the_end_of_the_recording_is_cut_at_its_last_activity() -> None:
    t = _three_steps()
    (st,) = find_steps(t)
    assert [t.event_name(int(e)) for e in st.events] == ["step_1", "step_2"]
    assert st.start_ns.tolist() == [0, 1_000_000]
    assert st.dur_ns.tolist() == [1_000_000, 1_500_000]  # step_2: 1.0 ms → the end of aten::mm at 2.5 ms
    assert st.range_dur_ns.tolist() == [1_000_000, LONG_NS + 3_000_000]
    assert st.cut.tolist() == [False, True]
    assert [t.event_name(int(e)) for e in st.left_out] == ["step_3"]
    assert st.recording_end_ns == 4_000_000
    assert steps_note(t, st) == (
        "step_2 runs 10.0 s past the end of the recording (which ends 3.00 ms into it), so it is measured to the "
        "last activity recorded in it: 1.50 ms of the 10.0 s its range says; 1 step left out (step_3): nothing "
        "was recorded in it before the recording ended"
    )
    (row,) = steps_json(t)
    assert row["step_ns"] == [1_000_000, 1_500_000] and row["mean_ns"] == 1_250_000 and row["max_ns"] == 1_500_000
    assert row["cut"] == [
        {
            "name": "step_2",
            "step_ns": 1_500_000,
            "range_ns": LONG_NS + 3_000_000,
            "start_ns": 1_000_000,
            "end_ns": 2_500_000,
            "range_start_ns": 1_000_000,
            "range_end_ns": LONG_NS + 4_000_000,
            "cut_start": False,
            "cut_end": True,
            "reason": (steps_note(t, st) or "").split("; ")[0],
        }
    ]
    assert row["names"] == ["step_1", "step_2"] and row["range_ns"] == [1_000_000, LONG_NS + 3_000_000]
    assert row["start_ns"] == [0, 1_000_000] and row["recording_end_ns"] == 4_000_000
    assert row["recording_start_ns"] is None  # the file marks only the recording's end
    assert row["left_out"] == ["step_3"] and row["note"] == steps_note(t, st)


def test_steps_inside_the_recording_are_left_as_recorded() -> None:
    """Without a range past the end nothing changes and nothing is said; a rank of annotation ranges only has
    nothing to measure its steps against, so they stay as recorded too."""
    s = Synth()
    th = s.thread()
    s.ev(th, Kind.RANGE, "step_1", 0, 1_000_000)
    s.ev(th, Kind.CPU_OP, "aten::mm", 100_000, 300_000)
    _bookkeeping(s, 2_000_000)
    lone = s.thread(tid=2, pid=2, rank=1)
    s.ev(lone, Kind.RANGE, "step_1", 0, LONG_NS)
    t = s.build()
    kept, alone = find_steps(t)
    assert kept.dur_ns.tolist() == [1_000_000] and not kept.cut.any() and steps_note(t, kept) is None
    assert alone.rank == 1 and alone.dur_ns.tolist() == [LONG_NS] and alone.recording_end_ns is None
    assert steps_note(t, alone) is None


def _compiled_step() -> Trace:
    """One ProfilerStep#1 recorded as 10 s long on a recording that ends 1.0 ms after it starts; one compiled
    region of 600 µs, its kernel, and a 100 µs sync that ends 899 µs into the step, the last activity."""
    s = Synth("kineto")
    th = s.thread()
    gpu = s.stream()
    s.ev(th, Kind.RANGE, "ProfilerStep#1", 1_000, LONG_NS)
    s.ev(th, Kind.CPU_OP, "Torch-Compiled Region: 0/0", 2_000, 600_000)
    call = s.launch(th, 300_000, 10_000)
    s.kernel(gpu, 320_000, 5_000, "triton_poi_fused_add_0", launch=call)
    s.ev(th, Kind.API, "cudaDeviceSynchronize", 800_000, 100_000)
    _bookkeeping(s, 1_001_000)
    return s.build()


def test_time_outside_compiled_regions_is_a_share_of_the_cut_step() -> None:
    """The step is 899 µs (its start to the sync's end), not 10 s: 299 µs of it outside the region, 33.3%."""
    t = _compiled_step()
    (st,) = find_steps(t)
    assert st.dur_ns.tolist() == [899_000] and st.cut.tolist() == [True]
    (f,) = [x for x in find_findings(t) if x.kind == "outside_compiled"]
    assert f.evidence["step_ns"] == 899_000 and f.evidence["host_outside_ns"] == 299_000
    assert f.title == "33.3% of step time (299 µs) is spent outside torch.compile regions"


def test_summary_says_the_step_was_cut(capsys: pytest.CaptureFixture[str], tmp_path: object) -> None:
    """A Kineto file whose one step runs past its recording: the summary's step time is the cut one, and a note
    under it says so."""
    from pathlib import Path

    from tests.cli_run import run_cli

    events = [
        {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 2, "tid": 2, "ts": 1000.0,
         "dur": 10_001_000.0},
        {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1001.0, "dur": 500.0},
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1100.0, "dur": 5.0,
         "args": {"device": 0, "stream": 7}},
        {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 2000.0},
    ]  # fmt: skip
    path = Path(str(tmp_path)) / "cut.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": events}))
    code, out, _ = run_cli(capsys, "summary", str(path), "--json")
    assert code == 0
    (row,) = json.loads(out)["steps"]
    assert row["step_ns"] == [501_000]  # 1000 µs → the end of aten::mm at 1501 µs
    (cut,) = row["cut"]
    assert {k: cut[k] for k in ("name", "step_ns", "range_ns")} == {
        "name": "ProfilerStep#1",
        "step_ns": 501_000,
        "range_ns": 10_001_000_000,
    }
    assert cut["cut_end"] and not cut["cut_start"] and cut["end_ns"] == 1_501_000  # file time: the end of aten::mm
    assert cut["reason"].startswith("ProfilerStep#1 runs 10.0 s past the end of the recording")
    code, out, _ = run_cli(capsys, "summary", str(path))
    text = " ".join(out.split())
    assert "step time: 501 µs mean over 1 step" in text
    assert (
        "note: ProfilerStep#1 runs 10.0 s past the end of the recording (which ends 1.00 ms into it), so it is "
        "measured to the last activity recorded in it: 501 µs of the 10.0 s its range says." in text
    )
