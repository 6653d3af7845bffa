"""Chrome traces with one event larger than the loader's decoding window. The broken and hostile Chrome inputs
(truncation, encodings, numbers, structure, wrong types in every field) are cases of the bad-input matrix,
tests/test_bad_input_matrix.py."""

from __future__ import annotations

from pathlib import Path

from gputop_trace.parsers.chrome import loader as chrome

X = b'{"ph":"X","name":"ok","pid":1,"tid":1,"ts":5,"dur":2}'


def test_a_single_event_larger_than_a_chunk(tmp_path: Path) -> None:
    big = b'{"ph":"X","name":"big","pid":1,"tid":1,"ts":1,"dur":1,"args":{"blob":"' + b"x" * (20 << 20) + b'"}}'
    p = tmp_path / "big.json"
    p.write_bytes(b'{"traceEvents":[' + X + b"," + big + b"," + X + b"]}")
    t = chrome.load(str(p))
    assert len(t) == 3
