"""The fast Chrome loader gives exactly the model of the simple reference loader (standard ``json``, exact
decimals, one event at a time), on every corpus trace and on small files built for edge conditions, whatever
the chunk size the fast loader decodes with."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome import stream as chrome_stream
from tests import chrome_reference
from tests.conftest import SAMPLES, corpus_file
from tests.trace_compare import assert_traces_equal, trace_differences

CORPUS_CHROME = [
    "kineto/h200_gpt_train_small.json.gz",
    "kineto/h200_inductor_compiled.json.gz",
    "kineto/h200_ddp_2gpu/rank0.pt.trace.json.gz",
    "kineto/h200_ddp_2gpu/rank1.pt.trace.json.gz",
    "jax/h200_jax_mlp.perfetto_trace.json.gz",
]


def _examples_cut(t: Trace) -> Trace:
    """Warnings quote the first bad event as it is written in the file; the reference has only the decoded
    event, so the quote is cut (the warning, its counts and everything else still have to match)."""
    warnings = tuple(re.sub(r"first one: .*$", "first one: …", w, flags=re.S) for w in t.meta.warnings)
    return t.with_meta(warnings=warnings)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", CORPUS_CHROME)
def test_fast_loader_matches_reference_on_corpus(rel: str) -> None:
    path = corpus_file(rel)
    fast = chrome.load(path)
    assert len(fast) > 400
    assert_traces_equal(_examples_cut(fast), _examples_cut(chrome_reference.load(path)))


@pytest.mark.corpus
@pytest.mark.parametrize("rel", CORPUS_CHROME[:1] + CORPUS_CHROME[-1:])
def test_chunk_size_does_not_change_the_model(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = corpus_file(rel)
    whole = chrome.load(path)
    monkeypatch.setattr(chrome_stream, "CHUNK", 4096)  # hundreds of chunk boundaries
    assert_traces_equal(chrome.load(path), whole)


def test_leaving_python_events_out_matches_reference() -> None:
    path = str(SAMPLES / "h200_train_step_stack.json.gz")  # recorded with_stack=True
    assert chrome.load(path).count_by_kind()[Kind.PYTHON] > 2000
    fast = chrome.load(path, include_python=False)
    assert_traces_equal(fast, chrome_reference.load(path, include_python=False))
    assert Kind.PYTHON not in fast.count_by_kind()


@pytest.mark.parametrize("name", ["h200_train_step.json.gz", "h200_compiled.json.gz", "h200_train_step_stack.json.gz"])
def test_fast_loader_matches_reference_on_bundled_samples(name: str) -> None:
    path = str(SAMPLES / name)
    assert_traces_equal(chrome.load(path), chrome_reference.load(path))


# ---------------------------------------------------------------------------------------------------------
# synthetic edge files
# ---------------------------------------------------------------------------------------------------------
def _slice(i: int, **kw: Any) -> dict[str, Any]:
    ev: dict[str, Any] = {
        "ph": "X",
        "cat": "cpu_op",
        "name": f"op{i % 7}",
        "pid": 1,
        "tid": 2 + i % 3,
        "ts": 1000 + i * 1.5,
        "dur": 1.25,
        "args": {"External id": i},
    }
    ev.update(kw)
    return ev


def _mixed_events() -> list[dict[str, Any]]:
    evs = [_slice(i) for i in range(400)]
    evs += [
        {"ph": "B", "name": "b1", "pid": 1, "tid": 2, "ts": 10.0},
        {"ph": "E", "pid": 1, "tid": 2, "ts": 20.0},
        {"ph": "B", "name": "never ends", "pid": 1, "tid": 2, "ts": 30.0},
        {"ph": "E", "pid": 1, "tid": 9, "ts": 31.0},
        {"ph": "b", "cat": "a", "id": 5, "name": "async", "pid": 1, "ts": 11.0},
        {"ph": "n", "cat": "a", "id": 5, "name": "mark", "pid": 1, "ts": 12.0},
        {"ph": "e", "cat": "a", "id": 5, "pid": 1, "ts": 15.0},
        {"ph": "b", "cat": "a", "id2": {"local": 1}, "name": "open async", "pid": 1, "ts": 13.0},
        {"ph": "i", "name": "instant", "pid": 1, "tid": 2, "ts": 14.0, "s": "t"},
        {"ph": "I", "name": "instant2", "pid": 1, "tid": 5, "ts": 14.5},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 16.0, "args": {"used": 5, "free": 3.5}},
        {"ph": "C", "name": "mem", "pid": 1, "ts": 17.0, "id": 2, "args": {"value": 7}},
        {"ph": "s", "cat": "fwdbwd", "id": 1, "pid": 1, "tid": 2, "ts": 1000.0, "name": "fwdbwd"},
        {"ph": "f", "cat": "fwdbwd", "id": 1, "pid": 1, "tid": 3, "ts": 1001.5, "bp": "e", "name": "fwdbwd"},
        {"ph": "s", "cat": "x", "id": "s1", "pid": 1, "tid": 2, "ts": 1003.0, "name": "flow"},
        {"ph": "t", "cat": "x", "id": "s1", "pid": 1, "tid": 4, "ts": 1004.0, "name": "flow"},
        {"ph": "f", "cat": "x", "id": "s1", "pid": 1, "tid": 2, "ts": 1005.2, "name": "flow"},
        {"ph": "P", "name": "sample", "pid": 1, "tid": 2, "ts": 3.0},
        {"ph": "X", "cat": "cpu_op", "name": "negative", "pid": 1, "tid": 2, "ts": 40.0, "dur": -3},
        {"ph": "X", "name": "no category", "pid": "a process", "tid": "a thread", "ts": 41.0, "dur": 2},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaMemcpy", "pid": 1, "tid": 2, "ts": 50, "dur": 1,
         "args": {"correlation_id": "77"}},
        {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Pinned)", "pid": 0, "tid": 7, "ts": 51,
         "dur": 1, "args": {"device": 0, "stream": 7, "correlation": 77, "bytes": 4096}},
        {"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": 0, "tid": 7, "ts": 60.0, "dur": 1,
         "args": {"device": 0, "bytes": 10}},
        {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 70.0, "dur": 5.5,
         "args": {"device": 0, "stream": 7, "correlation": 88, "grid": [4, 2, 1], "block": [128, 1, 1],
                  "registers per thread": 64, "shared memory": 1024, "blocks per SM": 0.5,
                  "warps per SM": 2, "est. achieved occupancy %": 12}},
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 2, "ts": 69.0, "dur": 0.5,
         "args": {"correlation": 88}},
        {"ph": "X", "cat": "python_function", "name": "train.py(10): step", "pid": 1, "tid": 2, "ts": 1000,
         "dur": 400, "args": {"Python id": 1}},
        {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce", "pid": 0, "tid": 7, "ts": 80.0, "dur": 9,
         "args": {"device": 0, "stream": 7, "correlation": 89, "grid": [2, 1, 1], "block": [64, 1, 1],
                  "Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024,
                  "Group size": 2, "dtype": "BFloat16", "Process Group Name": "0"}},
        {"ph": "X", "cat": "cpu_op", "name": "text device", "pid": 1, "tid": 2, "ts": 90.0, "dur": 1,
         "args": {"device": "0", "External id": 12345678901234567890123}},
        {"ph": "X", "cat": "cpu_op", "name": "no timestamp", "pid": 1, "tid": 2, "dur": 1},
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "trainer"}},
        {"ph": "M", "name": "process_labels", "pid": 1, "args": {"labels": "rank 0"}},
        {"ph": "M", "name": "process_sort_index", "pid": 1, "args": {"sort_index": 3}},
        {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": " main "}},
        {"ph": "M", "name": "thread_sort_index", "pid": 1, "tid": 2, "args": {"sort_index": 1}},
    ]  # fmt: skip
    # interleave so that every phase meets the others inside one chunk and across chunk boundaries
    return [evs[(i * 37) % len(evs)] for i in range(len(evs))]


def _write(path: Path, doc: Any, *, gz: bool = False) -> str:
    data = json.dumps(doc, indent=1).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return str(path)


def _edge_files(tmp: Path) -> dict[str, str]:
    mixed = _mixed_events()
    jax = [
        {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/device:GPU:0"}},
        {"ph": "M", "pid": 1, "tid": 14, "name": "thread_name", "args": {"name": "Stream #14(Compute)"}},
        {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/host:CPU"}},
        {"ph": "X", "pid": 1, "tid": 14, "name": "fusion", "ts": 10.5, "dur": 3.25,
         "args": {"kernel_details": "regs:32 static_shared:0 dynamic_shared:48 grid:4,1,1 block:128,1,1 occ_pct:50"}},
        {"ph": "X", "pid": 1, "tid": 14, "name": "MemcpyH2D", "ts": 20.0, "dur": 1.0,
         "args": {"memcpy_details": "kind_src:pinned kind_dst:device size:4096 async:1"}},
        {"ph": "X", "pid": 2, "tid": 3, "name": "$train.py:12 step", "ts": 5.0, "dur": 30.0},
        {"ph": "X", "pid": 2, "tid": 3, "name": "cuLaunchKernel", "ts": 9.0, "dur": 1.0},
    ]  # fmt: skip
    return {
        "mixed": _write(tmp / "mixed.json", {"schemaVersion": 1, "traceEvents": mixed, "traceName": "x"}),
        "array": _write(tmp / "array.json", mixed),
        "gzip": _write(tmp / "mixed.json.gz", {"traceEvents": mixed}, gz=True),
        # timestamps too large for a float64 to hold exactly in ns: decoded as decimals
        "exact": str(_raw(tmp / "exact.json", _exact_document(300))),
        "jax": _write(tmp / "jax.json", {"displayTimeUnit": "ns", "traceEvents": jax}),
        "empty": _write(tmp / "empty.json", {"traceEvents": []}),
        "header after events": str(
            _raw(tmp / "trailer.json", b'{"traceEvents": ' + json.dumps(mixed).encode() + b', "distributedInfo": '
                 b'{"rank": 3, "world_size": 4}, "deviceProperties": [{"id": 0, "name": "GPU", "numSms": 132}]}')
        ),
    }  # fmt: skip


def _exact_document(n: int) -> bytes:
    """Slices 1 ns apart at 1.7e15 µs: a float64 cannot hold these timestamps to the ns."""
    evs = [_slice(i, ts=f"@{i}@", dur=0.003) for i in range(n)]
    text = json.dumps({"traceEvents": evs})
    for i in range(n):
        text = text.replace(f'"@{i}@"', f"1700000000000000.{i:03d}")
    return text.encode()


def _raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_fast_loader_matches_reference_on_edge_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = _edge_files(tmp_path)
    for label, path in files.items():
        expected = _examples_cut(chrome_reference.load(path))
        diffs = trace_differences(_examples_cut(chrome.load(path)), expected)
        assert not diffs, f"{label}: {diffs[:5]}"
        without_python = _examples_cut(chrome_reference.load(path, include_python=False))
        diffs = trace_differences(_examples_cut(chrome.load(path, include_python=False)), without_python)
        assert not diffs, f"{label} (no python): {diffs[:5]}"
        monkeypatch.setattr(chrome_stream, "CHUNK", 256)  # a chunk boundary every few events
        diffs = trace_differences(_examples_cut(chrome.load(path)), expected)
        monkeypatch.undo()
        assert not diffs, f"{label} (256-byte chunks): {diffs[:5]}"


def test_edge_files_exercise_what_they_claim(tmp_path: Path) -> None:
    """Guard against the edge files silently losing their point (they must hold what the comparison checks)."""
    files = _edge_files(tmp_path)
    t = chrome.load(files["mixed"])
    kinds = t.count_by_kind()
    assert kinds[Kind.KERNEL] == 2 and kinds[Kind.MEMCPY] == 1 and kinds[Kind.MEMSET] == 1
    assert kinds[Kind.MARKER] >= 3  # instants and the async mark
    assert len(t.kernels) == 2 and len(t.copies) == 2 and len(t.flows) >= 3
    assert len(t.collectives) == 1 and t.names[int(t.collectives.op[0])] == "allreduce"
    assert any("without ts" in w for w in t.meta.warnings)
    assert any("wrong type or out of range" in w for w in t.meta.warnings)
    assert len(t.counters) == 3
    assert any("negative duration" in w for w in t.meta.warnings)
    assert any("never ended" in w for w in t.meta.warnings)
    exact = chrome.load(files["exact"])
    assert exact.meta.t0_ns == 1_700_000_000_000_000_000
    assert sorted(exact.start_ns.tolist())[:3] == [0, 1, 2] and exact.dur_ns[0] == 3
    jax = chrome.load(files["jax"])
    assert jax.meta.format == "jax" and len(jax.kernels) == 1 and len(jax.copies) == 1
    assert chrome.load(files["header after events"]).meta.ranks == (3,)


def test_comparison_reports_a_changed_model(tmp_path: Path) -> None:
    """The comparison itself fails on a one-nanosecond change (it is not a test that cannot fail)."""
    import dataclasses

    path = _edge_files(tmp_path)["mixed"]
    t = chrome.load(path)
    shifted = t.start_ns.copy()
    shifted[5] += 1
    diffs = trace_differences(t, dataclasses.replace(t, start_ns=shifted))
    assert diffs and diffs[0].startswith("trace.start_ns[5]")
    renamed = dataclasses.replace(t, meta=dataclasses.replace(t.meta, producer="other"))
    assert trace_differences(t, renamed) == [f"trace.meta.producer: {t.meta.producer!r} != 'other'"]


@pytest.mark.parametrize(
    "name",
    ["ops_cpu.json.gz", "ops_cuda.json.gz", "compiled_cudagraphs_cuda.json.gz", "compiled_cudagraphs_cpu.json.gz"],
)
def test_fast_loader_matches_reference_on_our_recordings(name: str) -> None:
    """tests/data: record_shapes rows, profile_memory records, torch.compile launcher args, graph replays."""
    path = str(Path(__file__).resolve().parent.parent / "data" / name)
    fast = chrome.load(path)
    assert_traces_equal(fast, chrome_reference.load(path))
    assert len(fast.op_args.event) > 0
