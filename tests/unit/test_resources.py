"""A trace too large for the memory available is refused up front with a clear message."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.load.resources import available_memory, check_memory, estimate


def test_gzip_trailer_gives_the_decompressed_size(tmp_path: Path) -> None:
    raw = b'{"traceEvents": [' + b'{"ph":"X","name":"a","pid":1,"tid":1,"ts":1,"dur":1},' * 20000 + b"{}]}"
    p = tmp_path / "t.json.gz"
    p.write_bytes(gzip.compress(raw))
    est = estimate([str(p)])
    assert est.decompressed == len(raw)
    assert est.files == 1
    assert est.needed > len(raw) * 0.4


def test_refused_when_over_the_limit_with_what_to_do(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(b" " * (2 << 20))
    with pytest.raises(TraceError) as err:
        check_memory([str(p)], max_memory="100MB")
    msg = err.value.message
    assert "would need about" in msg and "100 MB is the --max-memory limit" in msg
    assert "--max-memory" in msg and "record fewer steps" in msg


def test_allowed_under_the_limit(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(b" " * 1000)
    assert check_memory([str(p)], max_memory="8GB").needed < 8e9


def test_environment_variable_and_bad_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(b" " * 1000)
    monkeypatch.setenv("GPUTOP_MAX_MEMORY", "1MB")
    with pytest.raises(TraceError, match="would need"):
        check_memory([str(p)])
    with pytest.raises(TraceError, match="not a size"):
        check_memory([str(p)], max_memory="lots")


def test_available_memory_is_known_on_linux() -> None:
    avail = available_memory()
    assert avail is not None and avail > 0
