"""Broken Chrome traces from crashed runs, old exporters and hand edits: every case either loads what can be
recovered with a named warning, or fails with a clean TraceError — never a traceback, never a hang."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model import Kind
from gputop_trace.parsers import chrome

X = b'{"ph":"X","name":"ok","pid":1,"tid":1,"ts":5,"dur":2}'

# (case, file bytes, expected number of events or None for a clean error, a phrase every warning list must hold)
CASES: list[tuple[str, bytes, int | None, str | None]] = [
    ("utf8_bom", b"\xef\xbb\xbf" + b'{"traceEvents":[' + X + b"]}", 1, None),
    ("invalid_utf8", b'{"traceEvents":[{"ph":"X","name":"a\xff\xfeb","pid":1,"tid":1,"ts":1,"dur":2},' + X + b"]}", 2,
     "not valid UTF-8"),
    ("control_chars", b'{"traceEvents":[{"ph":"X","name":"a\x01\x1b[31mred","pid":1,"tid":1,"ts":1,"dur":2}]}', 1,
     "raw control characters"),
    ("nan_ts", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":NaN,"dur":2},' + X + b"]}", 1,
     "were skipped"),
    ("infinity_dur", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":3,"dur":Infinity},' + X + b"]}", 2,
     "not strict JSON"),
    ("huge_ints", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":'
     b"123456789012345678901234567890}}," + X + b"]}", 2, "beyond 64 bits"),
    ("huge_pid", b'{"traceEvents":[{"ph":"X","name":"a","pid":99999999999999999999999,"tid":1,"ts":1,"dur":2}]}', 1,
     "out of range"),
    ("negative_dur", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":-2},' + X + b"]}", 2,
     "negative duration"),
    ("zero_dur", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":0},' + X + b"]}", 2, None),
    ("b_without_e", b'{"traceEvents":[{"ph":"B","name":"a","pid":1,"tid":1,"ts":1},' + X + b"]}", 2, "never ended"),
    ("e_without_b", b'{"traceEvents":[{"ph":"E","pid":1,"tid":1,"ts":1},' + X + b"]}", 1, "no matching begin"),
    ("out_of_order", b'{"traceEvents":[' + X + b',{"ph":"E","pid":1,"tid":1,"ts":30},'
     b'{"ph":"B","name":"a","pid":1,"tid":1,"ts":10}]}', 2, None),
    ("duplicate_correlation", b'{"traceEvents":['
     b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":1,"dur":2,"args":{"correlation":7}},'
     b'{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":4,"dur":2,"args":{"correlation":7}},'
     b'{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":5,"dur":2,"args":{"correlation":7,"device":0}}]}', 3,
     None),
    ("wrong_types", b'{"traceEvents":[{"ph":"X","name":5,"pid":[1],"tid":{"a":1},"ts":"12.5","dur":"x",'
     b'"args":{"correlation":"abc","grid":"big"}},{"ph":3},' + X + b"]}", 2, "were skipped"),
    ("args_not_object", b'{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":1,'
     b'"args":"oops"}]}', 1, "wrong type"),
    ("ts_missing", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"dur":2},' + X + b"]}", 1, "without ts"),
    ("unknown_phase", b'{"traceEvents":[{"ph":"O","name":"snap","pid":1,"tid":1,"ts":1,"id":"0x1"},' + X + b"]}", 1,
     "phases this viewer does not draw"),
    ("empty_trace_events", b'{"traceEvents":[]}', 0, "holds no events"),
    ("deep_nesting_in_args", b'{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1,"args":'
     + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}]}", None, None),
    ("deep_nesting_top", b"[" * 1_000_000 + b"]" * 1_000_000, None, None),
    ("not_events_array", b"[1, 2, 3]", None, None),
    ("object_without_events", b'{"a": 1}', None, None),
]  # fmt: skip


@pytest.mark.parametrize(("case", "data", "expected", "warning"), CASES, ids=[c[0] for c in CASES])
def test_broken_chrome_input(tmp_path: Path, case: str, data: bytes, expected: int | None, warning: str | None) -> None:
    p = tmp_path / f"{case}.json"
    p.write_bytes(data)
    if expected is None:
        with pytest.raises(TraceError) as err:
            chrome.load(str(p))
        assert str(p) in err.value.message
        return
    t = chrome.load(str(p))
    assert len(t) == expected
    if warning is not None:
        assert any(warning in w for w in t.meta.warnings), t.meta.warnings


def test_one_line_trace_of_many_megabytes(tmp_path: Path) -> None:
    ev = b",".join(
        b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.125,"dur":1.5,"args":{"device":0}}'
        % (i % 97, i)
        for i in range(200_000)
    )
    p = tmp_path / "oneline.json"
    p.write_bytes(b'{"traceEvents":[' + ev + b"]}")
    assert p.stat().st_size > 16 << 20  # bigger than one decoding chunk, all on one line
    t = chrome.load(str(p))
    assert len(t) == 200_000
    assert t.count_by_kind() == {Kind.KERNEL: 200_000}
    assert int(t.dur_ns.min()) == 1500


def test_a_single_event_larger_than_a_chunk(tmp_path: Path) -> None:
    big = b'{"ph":"X","name":"big","pid":1,"tid":1,"ts":1,"dur":1,"args":{"blob":"' + b"x" * (20 << 20) + b'"}}'
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents":[' + X + b"," + big + b"," + X + b"]}")
    t = chrome.load(str(p))
    assert len(t) == 3
