"""The compiled scanner (``parsers/chrome/_fastscan.c``, optional) and the pure-Python decoder (the reference and
the fallback) give exactly the same model on every Chrome, JAX and external trace of the corpus, on the bundled
samples and on the edge files of the reference-loader tests, whatever the chunk size; and the compiled path is
really the one that ran (it is not a comparison of the Python path with itself)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

import numpy as np
import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome import fast, parallel_scan
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome import stream as chrome_stream
from tests.chrome_reference import load as reference_load
from tests.conftest import CORPUS, SAMPLES, require_compiled, require_corpus
from tests.corpus.test_reference_loader import _edge_files, _raw
from tests.trace_compare import trace_differences

#: the scanner is optional (a machine without a C compiler gets the pure-Python path), so these comparisons skip where
#: it was not built; CI builds it and sets GPUTOP_REQUIRE_SCANNER=1, so a build that silently failed fails here
require_compiled(fast.available(), "the compiled scanner (_fastscan)", module=True)

CHROME_FILES = sorted(
    str(p.relative_to(CORPUS))
    for sub in ("kineto", "jax", "external")
    for p in (CORPUS / sub).rglob("*.json*")
    if p.name.endswith((".json", ".json.gz"))
)


def _both(
    path: str, monkeypatch: pytest.MonkeyPatch, include_python: bool = True
) -> tuple[Trace, Trace, dict[str, int]]:
    monkeypatch.setenv(fast.PURE_PYTHON_ENV, "1")
    pure = chrome.load(path, include_python=include_python)
    monkeypatch.delenv(fast.PURE_PYTHON_ENV)
    before = dict(fast.stats)
    compiled = chrome.load(path, include_python=include_python)
    used = {k: fast.stats[k] - before[k] for k in before}
    return pure, compiled, used


@pytest.fixture
def _fresh_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv(fast.PURE_PYTHON_ENV, raising=False)
    yield


def test_the_corpus_list_holds_every_kind_of_chrome_trace() -> None:
    require_corpus()
    assert len(CHROME_FILES) >= 18
    assert any(f.startswith("external/") for f in CHROME_FILES) and any(f.startswith("jax/") for f in CHROME_FILES)


@pytest.mark.corpus
@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize("rel", CHROME_FILES)
def test_compiled_and_python_paths_give_the_same_model(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = str(CORPUS / rel)
    try:
        pure, compiled, used = _both(path, monkeypatch)
    except TraceError as e:  # an execution trace (not a Chrome trace): both paths refuse it with one message
        monkeypatch.setenv(fast.PURE_PYTHON_ENV, "1")
        with pytest.raises(TraceError) as pure_error:
            chrome.load(path)
        assert str(pure_error.value) == str(e)
        return
    assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    if rel.startswith("kineto/") or "negative_queue" in rel:  # strict JSON with fields of the expected types
        assert used == {"scanned": used["scanned"], "fallback": 0} and used["scanned"] >= 1, used
    pure, compiled, _ = _both(path, monkeypatch, include_python=False)
    assert not trace_differences(compiled, pure)[:8]


@pytest.mark.corpus
@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize(
    "rel", ["kineto/h200_gpt_train_small.json.gz", "jax/h200_jax_mlp.perfetto_trace.json.gz",
            "external/negative_queue_length_values_check/rank0.json.gz", "external/amd_trace/"
            "mi250_minitoy_train_ROCm6_2_kineto.json.gz", "external/mtia_trace_single_rank/mtia_rank_0.json.gz"]
)  # fmt: skip
def test_small_chunks_mix_every_phase_and_still_agree(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # 4 KiB chunks: metadata, flows, counters and slices meet in one chunk; many more chunk boundaries
    monkeypatch.setattr(chrome_stream, "CHUNK", 4096)
    pure, compiled, used = _both(str(CORPUS / rel), monkeypatch)
    assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    # chunks with an args field of another type ("device": "0" in JAX and ROCm traces) go to the Python path,
    # the others are scanned: both kinds meet in one file here
    assert used["scanned"] >= 1, used


@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize("name", sorted(p.name for p in Path(SAMPLES).glob("*.json.gz")))
def test_bundled_samples_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pure, compiled, used = _both(str(Path(SAMPLES) / name), monkeypatch)
    assert not trace_differences(compiled, pure)[:8]
    assert used["scanned"] >= 1


@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize("chunk", [256, 1 << 20])
def test_edge_files_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # wrong types, missing ts, negative durations, epoch timestamps, B/E and async pairs, counters, trailers
    monkeypatch.setattr(chrome_stream, "CHUNK", chunk)
    for label, path in _edge_files(tmp_path).items():
        for include_python in (True, False):
            pure, compiled, _ = _both(path, monkeypatch, include_python=include_python)
            diffs = trace_differences(compiled, pure)
            assert not diffs, f"{label} ({chunk}-byte chunks): {diffs[:5]}"


@pytest.mark.usefixtures("_fresh_env")
def test_scanner_leaves_what_it_cannot_read_exactly_to_the_python_path() -> None:
    for text in (
        b'[{"ph":"X","ts":"12","dur":1}]',  # a string where a number belongs: the lenient path repairs it
        b'[{"ph":"X","ts":1e3}]',  # exponent form
        b'[{"ph":"X","ts":NaN}]',
        b'[{"ph":"X","name":"\\ud800","ts":1}]',  # a lone surrogate
        b'[{"ph":"X","name":"\xff","ts":1}]',  # invalid UTF-8
        b'[{"ph":"X","ts":1,"ts":2}]',  # a duplicate key
        b'[{"ph":"X","pid":1.5,"ts":1}]',
        b'[{"ph":"X","pid":99999999999999999999,"ts":1}]',
        b'[{"ph":"Xy","ts":1}]',
        b'[{"ph":"X","ts":1},',  # cut inside the array
        b'[{"ph":"X","ts":1,"args":{"device":"zero"}}]',  # an args field of the wrong type
        b'[{"\\u0074s":1}]',  # an escaped key
        b'[{"ph":"X","cat":"cuda_profiler_range","ts":1,"args":{"smsp__inst_executed.sum":3}}]',  # counters
        b"[1, 2]",
    ):
        assert fast.scan(text) is None, text
    got = fast.scan(b'[{"ph":"X","name":"a\\"b","ts":1790857026123456.789,"dur":0.0015,"pid":"p","tid":2}]')
    assert got is not None
    assert got.ts_ns.tolist() == [1790857026123456789] and got.dur_ns.tolist() == [2]
    assert fast.decode_strings(got.names) == ['a"b'] and fast.decode_src(got.srcs[0]) == ("p", 2)


def test_strings_and_numbers_read_the_same_at_every_length_and_offset() -> None:
    """The scanner reads strings sixteen bytes at a time and integer digits eight at a time: a quote, an escape, a
    control character or a UTF-8 byte at every place of a block, and numbers of every length up to past 19
    digits, read as the standard library reads them (or are left to the Python path where it refuses them)."""
    specials = ['\\"', "\\\\", "\\n", "\\u00e9", "\u00e9", "\u6f22", "\U0001f600", "/"]
    for length in range(0, 40):
        for at in range(0, length + 1):
            for sp in specials:
                name = "k" * at + sp + "x" * (length - at)
                text = ('[{"ph":"X","name":"' + name + '","ts":1}]').encode()
                got = fast.scan(text)
                assert got is not None, text
                assert fast.decode_strings(got.names) == [json.loads(text)[0]["name"]], text
        for bad in (b"\x01", b"\xff", b"\xc3"):  # a control character, invalid UTF-8, a cut UTF-8 sequence
            text = b'[{"ph":"X","name":"' + b"k" * length + bad + b'x","ts":1}]'
            assert fast.scan(text) is None, text
    for digits in range(1, 24):
        for frac in ("", ".5", ".123456789"):
            ts = "1" + "0123456789" * 3
            ts = ts[:digits] + frac
            text = ('[{"ph":"X","ts":' + ts + ',"dur":' + ts + ',"pid":' + ts[: min(digits, 18)] + "}]").encode()
            got = fast.scan(text)
            if digits > 16:  # past the largest exact µs (2**62 ns): the Python path says so
                assert got is None or got.ts_st.tolist() != [0], text
                continue
            assert got is not None, text
            want = Decimal(ts) * 1000
            assert got.ts_ns.tolist() == [int(want.to_integral_value(rounding=ROUND_HALF_EVEN))], text
            assert got.dur_d.tolist() == [float(ts)], text  # the correctly rounded double
            if float(ts) < 2**43:  # (beyond, the ts double only tells the chunk to read the exact ns)
                assert got.ts_d.tolist() == [float(ts)], text
            assert fast.decode_src(got.srcs[0])[0] == int(ts[: min(digits, 18)]), text


_OP_ARGS = [  # Input Dims / Input type / Sequence number / Fwd thread id as record_shapes writes them, and not
    '{"Input Dims": [[2048, 8192], [], [3]], "Input type": ["float", "", "long int"], "Sequence number": 7, '
    '"Fwd thread id": 1}',
    '{"Input Dims":[[1,2],[[3],[4, 5]]],"Input type":[ "c10::BFloat16" , "Scalar" ]}',  # other spacing, nesting
    '{"Input Dims": [ ], "Input type": [], "Sequence number": -3}',
    '{"Sequence number": 12, "Fwd thread id": 9}',
    r'{"Input Dims": [[-1, 0]], "Input type": ["\u00e9t\u00e9"]}',  # an escaped type text
    '{"Input Dims": [[1.5]], "Input type": ["float"]}',  # a float in the dims
    '{"Input Dims": [[-0]], "Input type": ["float"]}',
    '{"Input Dims": [[12345678901234567890]]}',  # past int64
    '{"Input Dims": [["a"]], "Input type": [1, "float"]}',
    '{"Input Dims": "[[1]]", "Input type": "float"}',  # not lists
    '{"Input Dims": [[1]], "Input Dims": [[2]]}',  # a duplicate key
    '{"Input Dims": [[4, 4]], "Input type": ["float"], "External id": 3, "kernel_details": "k"}',  # Args reads
    '{"Input Dims": [[2048, 8192], [], [3]], "Input type": ["float", "", "long int"]}',  # the first one's texts again
    '{"Input Dims": [[' + ", ".join(["[" * 40 + "1" + "]" * 40]) + "]]}",  # deep
    "{}",
]
#: args of the wrong type for the typed decoder: their chunk goes to the Python path, which reads what it can
_OP_ARGS_WRONG_TYPES = [
    '{"Input Dims": null, "Sequence number": null}',
    '{"Sequence number": "4", "Fwd thread id": 2.5}',
]


def _op_args_document(args: list[str]) -> bytes:
    evs = [
        f'{{"ph": "X", "cat": "cpu_op", "name": "aten::op{i % 5}", "pid": 1, "tid": 1, "ts": {10 * i + 1}, "dur": 5, '
        f'"args": {a}}}'
        for i, a in enumerate(args)
    ]
    return ('{"traceEvents": [' + ",\n".join(evs) + "]}").encode()


@pytest.mark.usefixtures("_fresh_env")
def test_operator_args_in_every_form_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner reads record_shapes' operator args itself (no msgspec decode per operator); every other form
    goes to the Python decoder for that event, and the two paths (and the stdlib reference) give one model."""
    path = _raw(tmp_path / "ops.json", _op_args_document(_OP_ARGS * 3 + _OP_ARGS_WRONG_TYPES + _OP_ARGS))
    for chunk in (300, 1 << 20):
        monkeypatch.setattr(chrome_stream, "CHUNK", chunk)
        pure, compiled, used = _both(str(path), monkeypatch)
        # one chunk holding the wrong types goes to the Python path whole; small chunks are mostly scanned
        assert used["scanned"] >= (10 if chunk == 300 else 0), used
        assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    plain = _raw(tmp_path / "plain.json", _op_args_document(_OP_ARGS[:5] * 2))  # the stdlib reference: its own rules
    monkeypatch.setattr(chrome_stream, "CHUNK", 1 << 20)
    assert not trace_differences(chrome.load(str(plain)), reference_load(str(plain)))[:8]
    names = compiled.names
    shapes = [names[i] if i >= 0 else None for i in compiled.op_args.shapes[: len(_OP_ARGS)].tolist()]
    types = [names[i] if i >= 0 else None for i in compiled.op_args.types[: len(_OP_ARGS)].tolist()]
    assert shapes[:5] == ["[[2048, 8192], [], [3]]", "[[1, 2], [[3], [4, 5]]]", "[]", None, "[[-1, 0]]"]
    assert types[:5] == ["float, , long int", "c10::BFloat16, Scalar", "", None, "été"]
    assert compiled.op_args.seq[:4].tolist() == [7, -1, -3, 12] and compiled.op_args.fwd_tid[3] == 9
    # the plain forms are read by the scanner; the others are decoded by msgspec (need), event by event
    got = fast.scan(_op_args_document(_OP_ARGS)[len(b'{"traceEvents": ') : -1])
    assert got is not None
    assert got.need[: len(_OP_ARGS)].tolist() == [False] * 4 + [True] * 8 + [False] * 3
    assert got.texts("shapes")[:2] == ["[[2048, 8192], [], [3]]", "[[1, 2], [[3], [4, 5]]]"]


_CUT_EVENTS = [  # names holding "}," (C++ lambdas in kernel names), nested args, operator args the scanner interns
    '{"ph": "X", "name": "void k<{lambda(float)#1}, 4>(T1)", "ts": 1, "dur": 2, "args": {"grid": [1, 1, 1]}}',
    '{"ph": "X", "name": "aten::mm", "ts": 3.5, "dur": 1, "args": {"Input Dims": [[2, 3], [3, 4]], '
    '"Input type": ["float", "float"], "nested": {"a": {"b": [1, {"c": "},"}]}}}}',
    '{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "main, {x}"}}',
    '{"ph": "i", "name": "mark", "ts": 7, "s": "t"}',
    '{"ph": "X", "name": "aten::add", "ts": 9, "dur": 1, "args": {"Input Dims": [[5]], "Input type": ["int"]}}',
]


def _columns(fc: fast.FastChunk) -> tuple[object, ...]:
    return (
        fc.n,
        fc.ts_ns.tolist(),
        [fc.name_strings()[i] for i in fc.name.tolist()],
        fc.texts("shapes"),
        [fc.texts("shapes")[i] if i >= 0 else None for i in fc.dims.tolist()],
        fc.need.tolist(),
        len(fc.arg_list),
        [fc.element(i) for i in range(fc.n) if fc.el_at[i] >= 0],
    )


def test_prefix_scan_stops_at_the_last_complete_element() -> None:
    """Cut anywhere (inside strings holding "},", inside nested args, after operator args were interned), the
    scanner keeps exactly the complete elements before the cut, as if it had been given only those."""
    body = ", ".join(_CUT_EVENTS).encode()
    ends = [len(", ".join(_CUT_EVENTS[: k + 1]).encode()) for k in range(len(_CUT_EVENTS))]
    for cut in range(1, len(body) + 1):
        got = fast.scan(b"[" + body[:cut], prefix=True)
        complete = [e for e in ends if e <= cut]
        if not complete:
            assert got is None, cut
            continue
        assert got is not None, cut
        assert got.end - 1 == complete[-1], (cut, got.end)
        alone = fast.scan(b"[" + body[: complete[-1]] + b"]")
        assert alone is not None
        assert _columns(got) == _columns(alone), cut
    # a complete element the scanner does not read (an escaped key) sends the window to the Python path
    assert fast.scan(b"[" + body + b', {"\\u0074s": 1}, {"ph": "X"', prefix=True) is None
    # the closing bracket ends the run; what follows it is the streamer's
    whole = fast.scan(b"[" + body + b"]\n}", prefix=True)
    assert whole is not None and whole.n == len(_CUT_EVENTS) and whole.end - 1 == ends[-1]


def test_only_the_rare_events_keep_their_bytes() -> None:
    """Slices, instants, B/E and flows with an integer id and a plain bp are read from the columns alone;
    metadata, flows with a string id or an escaped bp, and events without a usable ts keep their JSON for the
    Python decoders (the rest of a chunk's bytes are not copied)."""
    got = fast.scan(
        b'[{"ph": "X", "ts": 1, "dur": 1}, {"ph": "M", "name": "process_name", "args": {"name": "p"}}, '
        b'{"ph": "B", "ts": 2}, {"ph": "s", "id": 1, "ts": 3}, {"ph": "X", "dur": 1}, {"ph": "i", "ts": 4}, '
        b'{"ph": "f", "id": "a", "ts": 5}, {"ph": "f", "id": 2, "bp": "\\u0065", "ts": 6}, '
        b'{"ph": "f", "id": 3, "bp": "e", "ts": 7}]'
    )
    assert got is not None
    kept = [i for i in range(got.n) if got.el_at[i] >= 0]
    assert kept == [1, 4, 6, 7]
    assert got.event(4, False).dur == 1
    with pytest.raises(ValueError, match="not kept"):
        got.element(0)


_KERNEL_ARGS = [  # kernel and copy args as Kineto writes them, and not: the scanner reads the plain forms itself
    '{"External id": 1, "device": 0, "stream": 7, "correlation": 11, "registers per thread": 32, "shared memory": 0, '
    '"blocks per SM": 0.5, "warps per SM": 2, "grid": [1, 2, 3], "block": [128, 1, 1], '
    '"est. achieved occupancy %": 25}',
    '{"grid":[ 4 ,5,6 ],"block":[7,8,9],"registers per thread":-1}',  # other spacing; no registers
    '{"bytes": 4096, "memory bandwidth (GB/s)": 12.5, "correlation": 12}',  # a copy
    '{"grid": "grid(100,)", "registers per thread": 16}',  # a grid written as text: msgspec reads it
    '{"grid": [1, 2], "block": [1, 1, 1]}',  # two dims: wrong type for the typed decoder
    '{"blocks per SM": 1e2, "grid": [1, 1, 1]}',  # an exponent: msgspec parses the float
    '{"blocks per SM": 12345678901234567890123, "warps per SM": -0.0, "grid": [1, 1, 1]}',
    '{"registers per thread": 32.0}',  # a float where an int belongs
    '{"bytes": "4096"}',  # text where an int belongs
    '{"grid": [1, 1, 1], "grid": [2, 2, 2]}',  # a duplicate key
    '{"block": [1, 1, 99999999999999999999], "grid": [1, 1, 1]}',  # past int64
    '{"est. achieved occupancy %": 0.1234567890123456789, "grid": [0, 0, 0]}',  # more digits than a double holds
]
#: of those, the args the scanner reads itself (no msgspec decode for them)
_KERNEL_ARGS_PLAIN = [True, True, True, False, False, False, True, False, False, False, False, True]


def _kernel_args_document(args: list[str]) -> bytes:
    def cat_name(i: int, a: str) -> str:
        copy = '"bytes"' in a
        return '"gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)"' if copy else f'"kernel", "name": "k{i % 3}"'

    evs = [
        f'{{"ph": "X", "cat": {cat_name(i, a)}, "pid": 0, "tid": 7, "ts": {10 * i + 1}, "dur": 5, "args": {a}}}'
        for i, a in enumerate(args)
    ]
    return ('{"traceEvents": [' + ",\n".join(evs) + "]}").encode()


@pytest.mark.usefixtures("_fresh_env")
def test_kernel_args_in_every_form_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The scanner reads kernel and copy args (grid, block, registers, shared memory, occupancy, bytes) itself;
    every other form is decoded by msgspec (or sends its chunk to the Python path), and both paths give one
    model, kernel and copy tables included."""
    plain = [a for a, ok in zip(_KERNEL_ARGS, _KERNEL_ARGS_PLAIN, strict=True) if ok]
    got = fast.scan(_kernel_args_document(plain)[len(b'{"traceEvents": ') : -1])
    assert got is not None and not got.need.any()
    assert got.k_dims[0].tolist() == [1, 2, 3, 128, 1, 1] and got.k_ints[0].tolist() == [32, 0, -1]
    assert got.k_floats[0].tolist() == [0.5, 2.0, 25.0] and got.has_grid.tolist() == [True, True, False, True, True]
    assert got.k_ints[2].tolist() == [-1, -1, 4096]
    assert got.k_floats[3, :2].tolist() == [1.2345678901234568e22, -0.0]
    assert got.k_floats[4, 2] == 0.1234567890123456789
    mixed = fast.scan(_kernel_args_document(_KERNEL_ARGS[:4] + _KERNEL_ARGS[5:6])[len(b'{"traceEvents": ') : -1])
    assert mixed is not None and mixed.need.tolist() == [False, False, False, True, True]
    path = _raw(tmp_path / "kernels.json", _kernel_args_document(_KERNEL_ARGS * 2))
    for chunk in (400, 1 << 20):
        monkeypatch.setattr(chrome_stream, "CHUNK", chunk)
        pure, compiled, used = _both(str(path), monkeypatch)
        assert used["scanned"] >= (2 if chunk == 400 else 0), used  # most small chunks hold a wrong type
        assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    assert len(compiled.kernels) == 18 and len(compiled.copies) == 4  # "4096" as text is repaired by the lenient path


_FLOWS = [  # flow events in every form of id and bp, each next to a slice it binds to
    '{"ph": "s", "cat": "fwdbwd", "id": 7, "ts": 2, "pid": 1, "tid": 1}',
    '{"ph": "f", "cat": "fwdbwd", "id": 7, "ts": 12, "pid": 1, "tid": 2, "bp": "e"}',
    '{"ph": "s", "cat": "fwdbwd", "id": "0x1f", "ts": 3, "pid": 1, "tid": 1}',
    '{"ph": "f", "cat": "fwdbwd", "id": "0x1f", "ts": 11, "pid": 1, "tid": 2}',
    '{"ph": "s", "cat": "other", "id": null, "ts": 4, "pid": 1, "tid": 1}',
    '{"ph": "t", "cat": "other", "ts": 5, "pid": 1, "tid": 1}',
    '{"ph": "s", "cat": "fwdbwd", "id": -3, "ts": 2.5, "pid": 1, "tid": 1}',
    '{"ph": "f", "cat": "fwdbwd", "id": -3, "ts": 13, "pid": 1, "tid": 2, "bp": "\\u0065"}',
    '{"ph": "f", "cat": "fwdbwd", "id": 7, "ts": 14, "pid": 1, "tid": 2, "bp": "x"}',
]


@pytest.mark.usefixtures("_fresh_env")
def test_flow_events_in_every_form_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Flow ids and bp are read from the scanner's columns (a string id or an escaped bp decodes its event): the
    flows bound on both paths are the same."""
    slices = [
        '{"ph": "X", "cat": "cpu_op", "name": "fwd", "ts": 1, "dur": 9, "pid": 1, "tid": 1}',
        '{"ph": "X", "cat": "cpu_op", "name": "bwd", "ts": 10, "dur": 9, "pid": 1, "tid": 2}',
        '{"ph": "X", "cat": "cpu_op", "name": "bwd2", "ts": 14, "dur": 2, "pid": 1, "tid": 2}',
    ]
    text = ('{"traceEvents": [' + ",\n".join(slices + _FLOWS) + "]}").encode()
    got = fast.scan(text[len(b'{"traceEvents": ') : -1])
    assert got is not None
    rows = np.arange(len(slices), got.n)
    ident, next_slice = got.flow_ids(rows, False)
    assert ident == [7, 7, "0x1f", "0x1f", None, None, -3, -3, 7]
    assert next_slice.tolist() == [False, False, False, True, False, False, False, False, True]
    path = _raw(tmp_path / "flows.json", text)
    for chunk in (200, 1 << 20):
        monkeypatch.setattr(chrome_stream, "CHUNK", chunk)
        pure, compiled, used = _both(str(path), monkeypatch)
        assert used["scanned"] >= 1, used
        assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    assert len(compiled.flows) >= 3


def _braces_document(n: int) -> bytes:
    """Events whose names hold "}, {" (where the parallel scan guesses cuts), with args and flows between."""
    evs = []
    for i in range(n):
        name = "void k<{lambda(float)#1}, {x}>" if i % 3 else "aten::mm"
        evs.append(
            f'{{"ph": "X", "cat": "kernel", "name": "{name}", "pid": 0, "tid": {i % 2}, "ts": {i}, "dur": 1, '
            f'"args": {{"grid": [1, 1, {i % 7}], "note": "}}, {{", "correlation": {i}}}}}'
        )
        if i % 5 == 0:
            evs.append(f'{{"ph": "s", "cat": "fwdbwd", "id": {i}, "ts": {i}, "pid": 0, "tid": 0}}')
    return ('{"traceEvents": [' + ", ".join(evs) + "]}").encode()


@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize("threads", [2, 3, 8])
def test_parallel_scan_gives_the_model_of_one_thread(
    threads: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A window scanned by several threads at once, cut at guessed boundaries (most of them inside strings
    here), gives exactly the model of the sequential scan and of the Python path."""
    path = _raw(tmp_path / "braces.json", _braces_document(6000))
    monkeypatch.setattr(chrome_stream, "CHUNK", 64 << 10)
    monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, "1")
    one = chrome.load(str(path))
    monkeypatch.setenv(parallel_scan.SCAN_THREADS_ENV, str(threads))
    before = dict(parallel_scan.stats)
    pure, many, used = _both(str(path), monkeypatch)
    split = {k: parallel_scan.stats[k] - before[k] for k in before}
    assert used["scanned"] >= 8, used
    assert split["windows"] >= 4 and split["parts"] > split["windows"] and split["dropped"] >= 1, split
    assert not trace_differences(many, one), trace_differences(many, one)[:8]
    assert not trace_differences(many, pure), trace_differences(many, pure)[:8]


def test_parallel_scan_keeps_only_proven_parts() -> None:
    """Cuts guessed inside strings are found out: the parts after such a cut are dropped, every replaced byte is
    restored, and the kept parts are the document's first elements, in order, each ending after an element."""
    body = _braces_document(400)[len(b'{"traceEvents": [') : -2]
    buf = bytearray(b" " + body + b" ")
    with memoryview(buf) as view:
        parts = parallel_scan.scan_parts(view, 1, 1 + len(body), 4, min_part=4 << 10)
    assert bytes(buf) == b" " + body + b" "
    whole = fast.scan(b"[" + body + b"]")
    assert whole is not None and parts
    chunks = [c.fast for _, c in parts if c.fast is not None]
    assert len(chunks) == len(parts)
    assert all(buf[end - 1] == ord("}") for end, _ in parts)
    ts = np.concatenate([c.ts_ns for c in chunks])
    assert ts.tolist() == whole.ts_ns[: len(ts)].tolist()
    assert len(ts) < whole.n  # a guess fell inside a name ("#1}, {x}"): the rest is left to the streamer


DATA = Path(__file__).resolve().parent.parent / "data"


@pytest.mark.usefixtures("_fresh_env")
@pytest.mark.parametrize("name", sorted(p.name for p in DATA.glob("*.json.gz") if "key_averages" not in p.name))
def test_recorded_references_agree(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Our own recordings (tests/data: record_shapes args and profile_memory allocator records, torch.compile
    launcher args, CUDA-graph replays) give the same model, side tables included, on both paths."""
    pure, compiled, used = _both(str(DATA / name), monkeypatch)
    assert not trace_differences(compiled, pure), trace_differences(compiled, pure)[:8]
    assert used["scanned"] >= 1, used
    if name.startswith("ops_"):
        assert len(compiled.op_args.event) > 0 and len(compiled.memory.event) > 0


def test_column_memory_is_reused_between_scans_and_freed_after_a_load(tmp_path: Path) -> None:
    """The scanner's columns come back to a pool when Python drops them, the next scan takes them from there
    (fresh memory costs a page fault per page), and a finished load leaves nothing pooled."""
    from gputop_trace.parsers.chrome import _fastscan  # type: ignore[attr-defined]

    events = b",".join(
        b'{"ph": "X", "name": "k%d", "pid": 1, "tid": 2, "ts": %d, "dur": 3}' % (i % 7, i) for i in range(20_000)
    )
    text = b"[" + events + b"]"
    fast.release_memory()
    got = fast.scan(text)
    assert got is not None and got.n == 20_000
    assert np.array_equal(got.ts_ns[:3], [0, 1000, 2000])  # the columns read straight from the scanner's memory
    held = _fastscan.pooled()  # (columns copied while the chunk was made are back already)
    del got
    pooled = _fastscan.pooled()
    assert pooled > held  # the columns' memory came back
    again = fast.scan(text)
    assert again is not None and again.n == 20_000
    assert _fastscan.pooled() < pooled  # ... and was taken again
    del again
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": ' + text + b"}")
    trace = chrome.load(str(path))
    assert len(trace) == 20_000
    assert _fastscan.pooled() == 0  # a load frees what it pooled
