"""Property-based tests of the Chrome loader (hypothesis, bounded budget for CI; see docs/fuzzing.md for the
long run): generated traces load exactly, and arbitrary damage never escapes as anything but TraceError."""

from __future__ import annotations

import gzip
import json
import os
import re
from decimal import Decimal
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gputop_trace.errors import TraceError
from gputop_trace.parsers import chrome

BUDGET = int(os.environ.get("GPUTOP_FUZZ_EXAMPLES", "60"))
SETTINGS = settings(
    max_examples=BUDGET,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

names = st.text(min_size=0, max_size=24)
micro = st.decimals(min_value=0, max_value=10**9, places=3, allow_nan=False, allow_infinity=False)
events = st.lists(
    st.fixed_dictionaries(
        {
            "ph": st.just("X"),
            "name": names,
            "cat": st.sampled_from(["cpu_op", "kernel", "cuda_runtime", "user_annotation", "gpu_memcpy", ""]),
            "pid": st.integers(0, 3),
            "tid": st.integers(0, 5),
            "ts": micro,
            "dur": micro,
        },
        optional={"args": st.fixed_dictionaries({"correlation": st.integers(0, 50), "device": st.integers(0, 1)})},
    ),
    min_size=0,
    max_size=60,
)


_NUM = re.compile(r'"@@([0-9.Ee+-]+)@@"')


def _plain(o: object) -> object:
    if isinstance(o, dict):
        return {k: _plain(v) for k, v in o.items()}
    if isinstance(o, list):
        return [_plain(v) for v in o]
    if isinstance(o, Decimal):
        return f"@@{o}@@"
    return o


def _write(tmp: Path, evs: list[dict[str, object]], *, array: bool, gz: bool) -> Path:
    """The events as JSON with the decimals' exact digits as numbers."""
    text = _NUM.sub(r"\1", json.dumps(_plain(evs if array else {"traceEvents": evs})))
    data = text.encode()
    p = tmp / ("t.json.gz" if gz else "t.json")
    p.write_bytes(gzip.compress(data) if gz else data)
    return p


@SETTINGS
@given(evs=events, array=st.booleans(), gz=st.booleans())
def test_generated_traces_load_every_event_exactly(tmp_path: Path, evs: list[dict[str, object]], array: bool,
                                                   gz: bool) -> None:  # fmt: skip
    p = _write(tmp_path, evs, array=array, gz=gz)
    t = chrome.load(str(p))
    assert len(t) == len(evs)
    want = sorted((int(Decimal(str(e["ts"])) * 1000), int(Decimal(str(e["dur"])) * 1000)) for e in evs)
    got = sorted(zip((t.start_ns + t.meta.t0_ns).tolist(), t.dur_ns.tolist(), strict=True))
    assert got == want
    assert sorted(t.names[i] for i in t.name.tolist()) == sorted(str(e["name"]) for e in evs)


@SETTINGS
@given(
    evs=events.filter(lambda x: len(x) > 0),
    cut=st.floats(0, 1),
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(0, 255)), max_size=4),
    gz=st.booleans(),
)
def test_damaged_traces_load_or_fail_cleanly(tmp_path: Path, evs: list[dict[str, object]], cut: float,
                                            flips: list[tuple[float, int]], gz: bool) -> None:  # fmt: skip
    p = _write(tmp_path, evs, array=False, gz=gz)
    data = bytearray(p.read_bytes())
    for where, byte in flips:
        data[min(len(data) - 1, int(where * len(data)))] = byte
    data = data[: max(1, int(cut * len(data)))]
    p.write_bytes(bytes(data))
    try:
        t = chrome.load(str(p))
    except TraceError as e:
        assert e.message
        return
    assert 0 <= len(t) <= len(evs) + len(flips) + 1
    assert (t.dur_ns >= 0).all()
