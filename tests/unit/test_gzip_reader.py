"""Gzip read by ISA-L's reader (parsers/source.py): on a sound file it gives the bytes the step-by-step inflater
gives; at a cut or damage the step-by-step inflater takes over from the start, so a damaged file reads exactly as
it does without ISA-L's reader: the same bytes, the same truncated/corrupt report, whichever way it is read and
wherever the damage falls in the pieces already handed out. Without ``isal`` (it is in the test extras) the same
cases check the step-by-step inflater alone: what a load of each kind of file reads and reports."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gputop_trace.errors import LoadCancelled
from gputop_trace.parsers import source
from gputop_trace.parsers.source import ByteStream

#: whether ISA-L's reader is there to compare (without it every gzip file takes the step-by-step path)
HAVE_READER = source._gzip_reader() is not None

PIECE = 65_536


def _data(n: int = 2_000_000) -> bytes:
    return b"".join(b'{"ph":"X","name":"kernel_%d","ts":%d,"dur":3},' % (i % 997, i * 7) for i in range(n // 40))


def _read(path: Path, how: str, direct: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, bool, str | None, int]:
    with monkeypatch.context() as m:
        m.setattr(source, "INFLATE_PIECE", PIECE)  # many pieces handed out before the damage
        if not direct:
            m.setattr(source, "_gzip_reader", lambda: None)
        seen: list[int] = []
        with ByteStream(str(path), on_read=seen.append) as s:
            assert (s._direct is not None) == direct
            parts = []
            while True:
                if how == "piece":
                    got = s.read_piece()
                elif how == "read":
                    got = s.read(50_003)
                else:
                    buf = bytearray(70_001)
                    got = bytes(buf[: s.readinto(memoryview(buf))])
                if not got:
                    break
                parts.append(got)
            data = b"".join(parts)
            assert s.bytes_out == len(data)
            assert seen == sorted(seen) and s.bytes_in == (seen[-1] if seen else 0)  # progress never goes back
            return data, s.truncated, s.corrupt, s.bytes_in


def _cases() -> dict[str, bytes]:
    data = _data()
    whole = gzip.compress(data)
    bad_crc = bytearray(whole)
    bad_crc[-8] ^= 1
    bad_mid = bytearray(whole)
    bad_mid[len(whole) * 2 // 3] ^= 0xFF
    return {
        "sound": whole,
        "two-members": gzip.compress(data[:700_001]) + gzip.compress(data[700_001:]),
        "zero-padding": whole + bytes(512),
        "cut-early": whole[:200],
        "cut-half": whole[: len(whole) // 2],
        "cut-in-trailer": whole[:-5],
        "cut-after-data": whole[:-8],
        "bad-crc": bytes(bad_crc),
        "damaged-middle": bytes(bad_mid),
        "garbage-after": whole + b"this is not gzip",
        "member-then-cut-member": whole + gzip.compress(data)[:3000],
    }


@pytest.mark.parametrize("how", ["piece", "read", "readinto"])
@pytest.mark.parametrize("case", sorted(_cases()))
def test_isal_reader_reads_like_the_stepwise_inflater(
    tmp_path: Path, case: str, how: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(_cases()[case])
    reference = _read(path, how, False, monkeypatch)
    got = _read(path, how, True, monkeypatch) if HAVE_READER else reference
    assert got == reference
    data, truncated, corrupt, _ = got
    if case in ("sound", "two-members", "zero-padding"):
        assert not truncated and corrupt is None
        assert data == _data() and len(data) > 20 * PIECE
    else:
        assert truncated or corrupt is not None  # what the loader turns into its warning
        assert (_data() * 2).startswith(data) or case == "damaged-middle"  # (the second member: a copy)


def test_a_sound_file_is_read_by_isal_reader_to_the_end(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_data()))
    with ByteStream(str(path)) as s:
        while s.read_piece():
            pass
        assert (s._direct is not None) == HAVE_READER
        assert s.bytes_in == path.stat().st_size and s.bytes_out == len(_data())


def test_cancelling_from_progress_is_not_taken_for_damage(tmp_path: Path) -> None:
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_data()))

    def cancel(nbytes: int) -> None:
        if nbytes > 50_000:
            raise LoadCancelled()

    with ByteStream(str(path), on_read=cancel) as s, pytest.raises(LoadCancelled):
        while s.read_piece():
            pass
    assert (s._direct is not None) == HAVE_READER  # the step-by-step inflater did not take over
