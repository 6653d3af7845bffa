"""Inflating ahead on a thread of its own (parsers/inflate_ahead.py): the same bytes, truncation and damage
reports as the wrapped stream, errors raised on the inflater raised again in the reader, and no thread left."""

from __future__ import annotations

import gzip
import threading
from pathlib import Path

import pytest

from gputop_trace.errors import LoadCancelled
from gputop_trace.parsers import inflate_ahead, source
from gputop_trace.parsers.inflate_ahead import InflateAhead
from gputop_trace.parsers.source import ByteStream


def _data(n: int = 3_000_000) -> bytes:
    return b"".join(b'{"ph":"X","name":"k%d","ts":%d},' % (i % 97, i) for i in range(n // 30))


def _read_all(src: ByteStream | InflateAhead, into: bool) -> bytes:
    parts = []
    while True:
        if into:
            buf = bytearray(70_001)
            n = src.readinto(memoryview(buf))
            if not n:
                break
            parts.append(bytes(buf[:n]))
        else:
            piece = src.read(50_003)
            if not piece:
                break
            parts.append(piece)
    return b"".join(parts)


@pytest.mark.parametrize("direct", [True, False], ids=["isal-reader", "stepwise"])
@pytest.mark.parametrize("into", [True, False], ids=["readinto", "read"])
def test_the_same_bytes_as_the_stream_it_wraps(
    tmp_path: Path, into: bool, direct: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(source, "INFLATE_PIECE", 65_536)  # input left over per inflate step
    monkeypatch.setattr(inflate_ahead, "PIECE", 65_536)  # many pieces through the queue
    if not direct:
        monkeypatch.setattr(source, "_gzip_reader", lambda: None)
    data = _data()
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(data[:1_000_000]) + gzip.compress(data[1_000_000:]))  # two members
    with ByteStream(str(path)) as raw:
        ahead = InflateAhead(raw)
        got = _read_all(ahead, into)
        ahead.close()
        assert got == data and ahead.eof and ahead.bytes_out == len(data)
        assert not ahead.truncated and ahead.corrupt is None and ahead.bytes_in == path.stat().st_size


def test_a_cut_file_reads_what_it_holds_and_says_it_was_cut(tmp_path: Path) -> None:
    data = _data()
    whole = gzip.compress(data)
    path = tmp_path / "cut.json.gz"
    path.write_bytes(whole[: len(whole) // 2])
    with ByteStream(str(path)) as raw:
        expected = _read_all(raw, True)
    with ByteStream(str(path)) as raw:
        ahead = InflateAhead(raw)
        got = _read_all(ahead, True)
        ahead.close()
        assert got == expected and data.startswith(got) and ahead.truncated


def test_an_error_on_the_inflater_is_raised_in_the_reader_and_no_thread_is_left(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_data()))

    def cancel(nbytes: int) -> None:
        if nbytes > 100_000:
            raise LoadCancelled()

    before = threading.active_count()
    with ByteStream(str(path), on_read=cancel) as raw:
        ahead = InflateAhead(raw)
        with pytest.raises(LoadCancelled):
            _read_all(ahead, True)
        ahead.close()
    assert threading.active_count() == before


def test_closing_early_stops_the_inflater(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_data(20_000_000)))
    before = threading.active_count()
    with ByteStream(str(path)) as raw:
        ahead = InflateAhead(raw)
        assert ahead.read(10) == _data(300)[:10]
        ahead.close()  # the queue is full and the inflater waits: it must notice the stop
    assert threading.active_count() == before


def test_copy_bytes_moves_exactly_the_span_asked_for() -> None:
    src = memoryview(bytes(range(256)) * 40)
    for at, src_at, n in [(0, 0, 10_240), (1, 3, 4_000), (7_000, 10_239, 1), (5, 17, 0)]:
        dst = bytearray(b"\xff" * 10_240)
        inflate_ahead.copy_bytes(memoryview(dst), at, src, src_at, n)
        want = bytearray(b"\xff" * 10_240)
        want[at : at + n] = src[src_at : src_at + n]
        assert dst == want


def test_a_thread_of_its_own_only_where_there_are_cores_for_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(inflate_ahead.ENV, raising=False)
    for cores, apart in ((1, False), (2, False), (inflate_ahead.MIN_CORES, True), (64, True)):
        monkeypatch.setattr(inflate_ahead, "usable_cores", lambda n=cores: n)
        assert inflate_ahead.worthwhile() is apart
    monkeypatch.setenv(inflate_ahead.ENV, "1")
    monkeypatch.setattr(inflate_ahead, "usable_cores", lambda: 2)
    assert inflate_ahead.worthwhile()
    monkeypatch.setenv(inflate_ahead.ENV, "0")
    monkeypatch.setattr(inflate_ahead, "usable_cores", lambda: 64)
    assert not inflate_ahead.worthwhile()
