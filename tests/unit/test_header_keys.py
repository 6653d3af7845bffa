"""The keys around a trace's events array (parsers/chrome/stream.py, document.py): found without decoding them on
the read-ahead thread when they are strict JSON (the compiled scanner checks), decoded once the events are read,
and merged as before (the keys before the events win over the same keys after them); lenient ones (NaN) are
decoded by the standard library's json on the spot. A load of a strict trace imports no json."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.document import DocumentInfo
from gputop_trace.parsers.chrome.stream import stream_events
from gputop_trace.parsers.source import ByteStream
from tests.conftest import require_compiled


@pytest.fixture
def _scanner_built() -> None:
    require_compiled(scanner.available(), "the compiled scanner (_fastscan)")  # fails under GPUTOP_REQUIRE_SCANNER=1


needs_scanner = pytest.mark.usefixtures("_scanner_built")

EVENTS = [{"ph": "X", "name": "k", "cat": "kernel", "pid": 1, "tid": 2, "ts": 10.5, "dur": 3}]


def _stream(path: Path) -> DocumentInfo:
    info = DocumentInfo()
    with ByteStream(str(path)) as src:
        for _ in stream_events(src, info):
            pass
    return info


@needs_scanner
@pytest.mark.parametrize(
    ("text", "strict"),
    [
        (b"{}", True),
        (b' {"a": [1, {"b": null}], "c": "\\u00e9\\ud83d\\ude00", "d": 123456789012345678901234567890} ', True),
        (b'{"a": NaN}', False),
        (b'{"a": "\\ud800"}', False),  # a lone surrogate
        (b'{"a": "\x01"}', False),  # a raw control character
        (b'{"a": "\xff"}', False),  # not UTF-8
        (b'{"a": 1} x', False),
        (b'{"a": 1', False),
        (b"[1]", False),
        (b'{"a": ' + b"[" * 60 + b"]" * 60 + b"}", False),  # deeper than the scanner reads
    ],
)
def test_is_json_object_is_strict_json(text: bytes, strict: bool) -> None:
    assert scanner.is_json_object(text) is strict
    if strict:
        json.loads(text)


def test_keys_before_and_after_the_events_merge_as_before(tmp_path: Path) -> None:
    before: dict[str, Any] = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU é"}], "same": "before"}
    after = {"traceName": "t", "same": "after", "baseTimeNanoseconds": 1700000000000000000}
    path = tmp_path / "t.json"  # (written by hand: a dict cannot hold "same" twice)
    path.write_text(json.dumps(before)[:-1] + ', "traceEvents": ' + json.dumps(EVENTS) + ", " + json.dumps(after)[1:])
    info = _stream(path)
    assert info.header == {**before, **{k: v for k, v in after.items() if k not in before}}
    assert list(info.header) == [*before, "traceName", "baseTimeNanoseconds"]
    assert not info.header_text


def test_lenient_keys_before_the_events_are_read_by_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text('{"x": NaN, "y": [1, 2], "traceEvents": ' + json.dumps(EVENTS) + ', "z": Infinity}')
    info = _stream(path)
    assert math.isnan(info.header["x"]) and info.header["y"] == [1, 2] and info.header["z"] == math.inf


def test_a_cut_trace_keeps_its_keys_before_the_events(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    text = json.dumps({"schemaVersion": 1, "traceEvents": EVENTS * 50})
    path.write_text(text[: len(text) // 2])
    info = _stream(path)
    assert info.truncated and info.header == {"schemaVersion": 1}


@needs_scanner
def test_a_load_of_a_strict_trace_imports_no_json(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_text(json.dumps({"schemaVersion": 1, "traceEvents": EVENTS * 100, "traceName": "t"}))
    code = (
        "import sys\nfrom gputop_trace.load.loader import load_paths\n"
        f"t = load_paths([{str(path)!r}], use_cache=False)\n"
        "assert len(t) == 100, len(t)\nprint('json' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr


def test_a_msgspec_another_thread_is_still_importing_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read-ahead thread decodes the keys before the events while the loading thread may still be importing
    msgspec: a module in sys.modules that is half made (its spec initializing, no ``json`` yet) is left alone and
    the standard library decodes them."""
    import importlib.machinery
    import types

    from gputop_trace.parsers.chrome.document import decode_header

    half = types.ModuleType("msgspec")
    half.__spec__ = importlib.machinery.ModuleSpec("msgspec", None)
    half.__spec__._initializing = True  # type: ignore[attr-defined]  # as importlib marks a module mid-import
    monkeypatch.setitem(sys.modules, "msgspec", half)
    assert decode_header(b'{"schemaVersion": 1, "deviceProperties": []}') == {
        "schemaVersion": 1,
        "deviceProperties": [],
    }
