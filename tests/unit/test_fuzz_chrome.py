"""Property-based tests of the Chrome loader (hypothesis, bounded budget for CI; see docs/fuzzing.md for the
long run): generated traces load exactly; arbitrary damage, and any JSON value in any field the loader reads,
either load into a sound model (on which the summary analyses run) or fail with a TraceError; names made of any
characters never put anything unsafe on the terminal."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gputop_trace.cli.main import main
from gputop_trace.parsers.chrome import loader as chrome
from tests.fixtures.fuzz import SETTINGS, check_summary, load_soundly_or_refuse
from tests.fixtures.hostile import unsafe_characters

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
    t = load_soundly_or_refuse(chrome.load, str(p))
    assert t is None or len(t) <= len(evs) + len(flips) + 1


# any JSON value (nested, huge numbers, non-finite floats, any text) in every field the loader reads
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=8,
)
EVENT_KEYS = ["ph", "name", "cat", "pid", "tid", "ts", "dur", "id", "id2", "s", "bp", "args"]
ARG_KEYS = ["External id", "correlation", "device", "stream", "grid", "block", "registers per thread",
            "shared memory", "blocks per SM", "warps per SM", "est. achieved occupancy %", "bytes", "Collective name",
            "In msg nelems", "Out msg nelems", "Group size", "Process Group Name", "dtype", "name", "sort_index",
            "labels", "correlation_id", "memcpy_details", "kernel_details"]  # fmt: skip
plausible = {
    "ph": st.sampled_from(list("XBEiIstfbenCMO")),
    "cat": st.sampled_from(
        [
            "kernel",
            "gpu_memcpy",
            "gpu_memset",
            "cuda_runtime",
            "cpu_op",
            "user_annotation",
            "gpu_user_annotation",
            "python_function",
            "ac2g",
            "",
        ]
    ),
    "name": st.sampled_from(
        [
            "process_name",
            "thread_name",
            "k",
            "Memcpy HtoD (Pageable -> Device)",
            "cudaLaunchKernel",
            "MemcpyD2H",
            "/device:GPU:0",
        ]
    ),
    "ts": st.floats(0, 1e7),
    "dur": st.floats(0, 1e4),
    "pid": st.integers(0, 3),
    "tid": st.integers(0, 3),
}


@st.composite
def wild_event(draw: st.DrawFn) -> dict[str, Any]:
    ev: dict[str, Any] = {}
    for key in EVENT_KEYS:
        how = draw(st.sampled_from(["absent", "plausible", "wild"]))
        if how == "plausible" and key in plausible:
            ev[key] = draw(plausible[key])
        elif how == "wild":
            ev[key] = draw(json_values)
    if draw(st.booleans()):
        ev["args"] = {k: draw(json_values) for k in draw(st.lists(st.sampled_from(ARG_KEYS), max_size=5))}
    return ev


@SETTINGS
@given(evs=st.lists(wild_event(), max_size=25), header=st.dictionaries(st.text(max_size=8), json_values, max_size=3),
       gz=st.booleans())  # fmt: skip
def test_any_value_in_any_field_loads_soundly_or_fails_cleanly(tmp_path: Path, evs: list[dict[str, Any]],
                                                               header: dict[str, Any], gz: bool) -> None:  # fmt: skip
    header.pop("traceEvents", None)
    data = json.dumps({**header, "traceEvents": evs}).encode()  # NaN and Infinity as Python writes them
    p = tmp_path / ("t.json.gz" if gz else "t.json")
    p.write_bytes(gzip.compress(data) if gz else data)
    load_soundly_or_refuse(chrome.load, str(p))


names_any = st.text(min_size=1, max_size=30)  # every code point: controls, escapes, bidi, surrogates


@SETTINGS
@given(kernels=st.lists(names_any, min_size=1, max_size=6), ranges=st.lists(names_any, max_size=4),
       thread=names_any, process=names_any)  # fmt: skip
def test_no_name_puts_anything_unsafe_on_the_terminal(tmp_path: Path, kernels: list[str], ranges: list[str],
                                                      thread: str, process: str) -> None:  # fmt: skip
    evs: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": process}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": thread}},
    ]
    for i, k in enumerate(kernels):
        evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10 * i,
                    "dur": 2, "args": {"correlation": i + 1}})  # fmt: skip
        evs.append({"ph": "X", "cat": "kernel", "name": k, "pid": 0, "tid": 7, "ts": 10 * i + 3, "dur": 4,
                    "args": {"correlation": i + 1, "device": 0, "stream": 7}})  # fmt: skip
    for i, r in enumerate(ranges):
        evs.append({"ph": "X", "cat": "user_annotation", "name": r, "pid": 1, "tid": 1, "ts": 10 * i, "dur": 9})
    p = tmp_path / "t.json"
    p.write_text(json.dumps({"traceEvents": evs}))  # lone surrogates as \\udXXX escapes, as broken exporters do
    for command in ("summary", "kernels", "ranges", "gaps"):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([command, str(p)])
        assert code == 0, err.getvalue()
        shown = out.getvalue() + err.getvalue()
        assert unsafe_characters(shown) == [], (command, shown)


# ---- found by fuzzing (docs/fuzzing.md): each fixed bug keeps its smallest example ---------------------------
def test_found_by_fuzzing_event_counts_in_evidence_are_not_event_indices(tmp_path: Path) -> None:
    """A trace without GPU activity, cut short: the finding's evidence {"events": {"api": 1}} was read as event
    index 1 (an IndexError, exit code 70; with two events, a wrong event in the JSON)."""
    p = tmp_path / "t.json"
    p.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "", "cat": "cuda_runtime", "pid": 0, "tid": 0, "ts": 0.0, '
                  b'"dur": 0.0}, {"ph": "X", "name": "", "cat": "cpu_')  # fmt: skip
    doc = check_summary(chrome.load(str(p)), str(p))
    (finding,) = doc["findings"]
    assert finding["evidence"] == {"events": {"api": 1}}
