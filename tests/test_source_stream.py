"""The gzip read-ahead thread hands out exactly the bytes (and the damage reports) of inflating in line."""

from __future__ import annotations

import gzip
import os
import threading
import time
from pathlib import Path

import pytest

from gputop_trace.errors import LoadCancelled
from gputop_trace.parsers import chrome
from gputop_trace.parsers.source import ByteStream
from tests.conftest import SAMPLES


def _read_all(path: Path, *, threaded: bool, step: int = 100_003) -> tuple[bytes, tuple[object, ...]]:
    parts = []
    with ByteStream(str(path), threaded=threaded) as s:
        buf = bytearray(step)
        while True:
            with memoryview(buf) as view:
                n = s.readinto(view)
            if not n:
                break
            parts.append(bytes(buf[:n]))
        state = (s.truncated, s.corrupt, s.members, s.bytes_out, s.eof)
    return b"".join(parts), state


def _variants(tmp_path: Path) -> dict[str, Path]:
    data = gzip.decompress((SAMPLES / "h200_train_step.json.gz").read_bytes())
    whole = gzip.compress(data)
    files = {
        "one member": whole,
        "two members": gzip.compress(data[:500_000]) + gzip.compress(data[500_000:]),
        "cut short": whole[: len(whole) // 2],
        "bad checksum": whole[:-8] + bytes(b ^ 0xFF for b in whole[-8:-4]) + whole[-4:],
        "damaged middle": whole[: len(whole) // 2] + b"\x00" * 64 + whole[len(whole) // 2 + 64 :],
        "garbage after": whole + b"not gzip at all",
    }
    out = {}
    for name, blob in files.items():
        p = tmp_path / (name.replace(" ", "_") + ".json.gz")
        p.write_bytes(blob)
        out[name] = p
    return out


def test_read_ahead_gives_the_same_bytes_and_reports(tmp_path: Path) -> None:
    for name, path in _variants(tmp_path).items():
        inline = _read_all(path, threaded=False)
        ahead = _read_all(path, threaded=True)
        assert ahead == inline, name
    assert _read_all(_variants(tmp_path)["cut short"], threaded=True)[1][0] is True
    assert _read_all(_variants(tmp_path)["bad checksum"], threaded=True)[1][1] is not None


def test_closing_early_stops_the_worker(tmp_path: Path) -> None:
    path = _variants(tmp_path)["one member"]
    before = threading.active_count()
    with ByteStream(str(path)) as s:
        with memoryview(bytearray(1000)) as view:
            assert s.readinto(view) == 1000
        time.sleep(0.05)  # let the worker fill its queue and block
    assert threading.active_count() == before


def test_cancelling_a_gzip_load_from_progress_leaves_no_thread(tmp_path: Path) -> None:
    path = str(SAMPLES / "h200_train_step.json.gz")
    before = threading.active_count()

    def progress(done: int, total: int, events: int) -> None:
        if done > 0:
            raise LoadCancelled

    with pytest.raises(LoadCancelled):
        chrome.load(path, progress=progress)
    assert threading.active_count() == before
    assert os.path.exists(path)
