"""Kinds and lanes from the classes found part by part as the events stream (``classify.event_classes``, the
loader's way for Kineto and generic traces) are exactly those of the classification of the whole columns
(``classify.classify_all``): the same model on every Chrome trace of the corpus, on the bundled samples and on the
reference-loader edge files, with large and tiny chunks, on the compiled and the pure-Python path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from gputop_trace.errors import TraceError
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome import classify, fast
from gputop_trace.parsers.chrome import columns as chrome_columns
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome import matching as chrome_matching
from gputop_trace.parsers.chrome import stream as chrome_stream
from gputop_trace.parsers.chrome.state import State
from tests.conftest import CORPUS, SAMPLES, require_corpus
from tests.corpus.test_reference_loader import _edge_files
from tests.trace_compare import trace_differences

CHROME_FILES = sorted(
    str(p.relative_to(CORPUS))
    for sub in ("kineto", "jax", "external")
    for p in (CORPUS / sub).rglob("*.json*")
    if p.name.endswith((".json", ".json.gz"))
)


#: each loading State's per-event (thread, category, device, ph class), as the parser appended them
_APPENDED: dict[int, list[tuple[np.ndarray[Any, Any], ...]]] = {}


def _recording(real: Any) -> Any:
    """``append_events`` that also keeps each event's thread, category, device and ph class (the loader keeps
    them only in the event's class), cast as the columns were."""

    def append(st: State, start: Any, dur: Any, src: Any, cat: Any, name: Any, *rest: Any) -> None:
        _corr, _ext, device, phc = rest
        n = start.shape[0]
        kept = (src.astype(np.int32), cat.astype(np.int32), device.astype(np.int32), np.broadcast_to(phc, n))
        _APPENDED.setdefault(id(st), []).append(tuple(np.asarray(k) for k in kept))
        real(st, start, dur, src, cat, name, *rest)

    return append


def _by_whole_columns(
    st: State, fmt: str, rank: int, name: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The classification as it was before the classes: distinct rows of the concatenated columns, as the parser
    appended them (recorded by :func:`_recording`, not read back from the classes)."""
    parts = _APPENDED.pop(id(st), [])
    src, cat, device, phc = (
        np.concatenate([p[j] for p in parts]) if parts else np.zeros(0, dtype=np.int32) for j in range(4)
    )
    return classify.classify_all(st, fmt, rank, src, cat, name, device, phc.astype(np.uint8))


def _both_ways(path: str, monkeypatch: pytest.MonkeyPatch) -> tuple[Trace, Trace]:
    by_classes = chrome.load(path)
    with monkeypatch.context() as m:
        m.setattr(chrome, "_classify", _by_whole_columns)
        recording = _recording(classify.append_events)
        m.setattr(chrome_columns, "append_events", recording)
        m.setattr(chrome_matching, "append_events", recording)
        whole = chrome.load(path)
    return by_classes, whole


def _assert_same(path: str, monkeypatch: pytest.MonkeyPatch) -> Trace | None:
    try:
        by_classes, whole = _both_ways(path, monkeypatch)
    except TraceError:  # an execution trace, not a Chrome trace
        return None
    diffs = trace_differences(by_classes, whole)
    assert not diffs, diffs[:8]
    return by_classes


@pytest.mark.corpus
@pytest.mark.parametrize("rel", CHROME_FILES)
@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "python"])
def test_classes_give_the_model_of_the_whole_columns(rel: str, pure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    require_corpus()
    if pure:
        monkeypatch.setenv(fast.PURE_PYTHON_ENV, "1")
    else:
        monkeypatch.delenv(fast.PURE_PYTHON_ENV, raising=False)
    t = _assert_same(str(CORPUS / rel), monkeypatch)
    if t is not None and len(t):
        assert len(t.lanes) >= 1 and int(t.lane.max()) < len(t.lanes)


@pytest.mark.corpus
@pytest.mark.parametrize("rel", ["kineto/h200_gpt_train_small.json.gz", "kineto/h200_inductor_compiled.json.gz"])
def test_classes_with_a_chunk_boundary_every_few_events(rel: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny chunks: classes first seen in a late chunk, the same class in hundreds of chunks."""
    require_corpus()
    monkeypatch.setattr(chrome_stream, "CHUNK", 4096)
    t = _assert_same(str(CORPUS / rel), monkeypatch)
    assert t is not None and t.count_by_kind()[Kind.KERNEL] > 0


def test_classes_on_the_samples_and_edge_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [str(p) for p in sorted(SAMPLES.glob("*.json*"))] + list(_edge_files(tmp_path).values())
    assert len(paths) >= 8
    for path in paths:
        _assert_same(path, monkeypatch)
        with monkeypatch.context() as m:
            m.setattr(chrome_stream, "CHUNK", 256)
            _assert_same(path, monkeypatch)


def test_names_are_read_where_the_classification_needs_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Events without a category (classified by name) and MTIA's device category, whose DMA copies are told from
    its ops by name, first seen only in a later chunk; B/E pairs (added after the stream) on a thread of their own."""
    evs: list[dict[str, Any]] = [
        {"ph": "M", "pid": 9, "name": "process_name", "args": {"name": "MTIA 9"}},
    ]
    for i in range(200):
        evs.append({"ph": "X", "pid": 1, "tid": 2, "name": f"op{i % 3}", "ts": 10.0 * i, "dur": 5.0})
        evs.append({"ph": "X", "pid": 1, "tid": 2, "cat": "cpu_op", "name": "aten::mm", "ts": 10.0 * i, "dur": 1.0})
    for i in range(100):
        name = "dma_request" if i % 2 else "mtia_op"
        evs.append(
            {"ph": "X", "pid": 9, "tid": 1, "cat": "mtia_ccp_events", "name": name, "ts": 3000.0 + i, "dur": 0.5}
        )
        evs.append({"ph": "B", "pid": 3, "tid": 4, "name": "step", "ts": 4000.0 + 2 * i})
        evs.append({"ph": "E", "pid": 3, "tid": 4, "ts": 4001.0 + 2 * i})
    path = tmp_path / "classes.json"
    path.write_text(json.dumps({"traceEvents": evs}))
    monkeypatch.setattr(chrome_stream, "CHUNK", 2048)
    t = _assert_same(str(path), monkeypatch)
    assert t is not None
    kinds = t.count_by_kind()
    assert kinds[Kind.MEMCPY] == 50 and kinds[Kind.KERNEL] == 50  # dma_request copies, mtia ops kernels
    cpu = [lane for lane in t.lanes if lane.kind == LaneKind.CPU_THREAD]
    assert len(cpu) == 2  # thread 2 (named and unnamed events) and the B/E thread
