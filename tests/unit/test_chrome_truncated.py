"""Traces cut short anywhere (a crashed run, an interrupted copy) load every complete event before the cut."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.parsers.chrome import loader as chrome
from tests.conftest import CORPUS

OFFSETS = 24


def _cut_and_load(path: Path, data: bytes, cut: int) -> tuple[int, int, tuple[str, ...]]:
    path.write_bytes(data[:cut])
    try:
        t = chrome.load(str(path))
    except TraceError as e:
        # only acceptable before the first complete event
        assert "before" in str(e) or "not a Chrome trace" in str(e), str(e)
        return 0, 0, ()
    return len(t), int(t.meta.truncated_bytes), t.meta.warnings


def _check_monotone(results: list[tuple[int, int, tuple[str, ...]]], full: int) -> None:
    counts = [r[0] for r in results]
    assert all(c <= full for c in counts)
    assert counts == sorted(counts), counts
    assert counts[-1] > 0
    for n, lost, warnings in results:
        if n:
            assert any("truncated" in w and f"{lost:,} bytes" in w for w in warnings), warnings


@pytest.mark.corpus
@pytest.mark.parametrize("rel", ["kineto/h200_gpt_train_small.json.gz", "jax/h200_jax_mlp.perfetto_trace.json.gz"])
def test_plain_json_cut_at_many_offsets(tmp_path: Path, rel: str) -> None:
    raw = gzip.decompress((CORPUS / rel).read_bytes())
    full = len(chrome.load(str(CORPUS / rel)))
    cuts = [len(raw) * (i + 1) // (OFFSETS + 1) for i in range(OFFSETS)]
    results = [_cut_and_load(tmp_path / "cut.json", raw, c) for c in cuts]
    _check_monotone(results, full)
    # a cut in the last few percent keeps nearly everything
    assert results[-1][0] > 0.9 * full


@pytest.mark.corpus
def test_gzip_file_cut_at_many_offsets(tmp_path: Path) -> None:
    rel = "kineto/h200_gpt_train_small.json.gz"
    data = (CORPUS / rel).read_bytes()
    full = len(chrome.load(str(CORPUS / rel)))
    cuts = [len(data) * (i + 1) // (OFFSETS + 1) for i in range(OFFSETS)]
    results = [_cut_and_load(tmp_path / "cut.json.gz", data, c) for c in cuts]
    _check_monotone(results, full)
    t = chrome.load(str(tmp_path / "cut.json.gz"))
    assert any("gzip stream ends early" in w for w in t.meta.warnings)


@pytest.mark.corpus
def test_bare_array_form_cut_at_many_offsets(tmp_path: Path) -> None:
    doc = json.loads(gzip.decompress((CORPUS / "kineto/h200_inductor_compiled.json.gz").read_bytes()))
    raw = json.dumps(doc["traceEvents"], indent=1).encode()
    (tmp_path / "full.json").write_bytes(raw)
    full = len(chrome.load(str(tmp_path / "full.json")))
    assert full > 0
    cuts = [len(raw) * (i + 1) // (OFFSETS + 1) for i in range(OFFSETS)]
    _check_monotone([_cut_and_load(tmp_path / "cut.json", raw, c) for c in cuts], full)


def test_exact_recovery_and_byte_count(tmp_path: Path) -> None:
    ev = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10.5, "dur": 2.25} for i in range(50)]
    text = json.dumps({"traceEvents": ev, "traceName": "x"}).encode()
    # cut inside the 31st event: exactly 30 complete events survive
    cut = text.index(b'"op30"')
    p = tmp_path / "t.json"
    p.write_bytes(text[:cut])
    t = chrome.load(str(p))
    assert len(t) == 30
    assert sorted(t.names[i] for i in t.name) == sorted(f"op{i}" for i in range(30))
    end_of_29 = text.index(b"}", text.index(b'"op29"')) + 1
    assert t.meta.truncated_bytes == cut - end_of_29
    # the durations keep their nanosecond fraction
    assert set(t.dur_ns.tolist()) == {2250}


def test_cut_inside_a_string_that_looks_like_json(tmp_path: Path) -> None:
    tricky = 'a"},{"ph":"X","name":"fake","ts":1,"dur":1}]'
    ev = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i, "dur": 1, "args": {"s": tricky}} for i in range(5)]
    text = json.dumps({"traceEvents": ev}).encode()
    cut = text.rindex(b"fake")
    p = tmp_path / "t.json"
    p.write_bytes(text[:cut])
    t = chrome.load(str(p))
    assert len(t) == 4
    assert "fake" not in t.names


def test_cut_before_the_first_event_is_a_clear_error(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_bytes(b'{"schemaVersion": 1, "traceEvents": [{"ph": "X", "na')
    with pytest.raises(TraceError, match="before its first complete event"):
        chrome.load(str(p))


@pytest.mark.parametrize("chunk", [1 << 12, 1 << 16, 16 << 20])
def test_damage_in_the_middle_skips_only_the_damaged_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    from gputop_trace.parsers.chrome import stream as chrome_stream

    monkeypatch.setattr(chrome_stream, "CHUNK", chunk)
    monkeypatch.setattr(chrome_stream, "MAX_ELEMENT", 4 * chunk)
    ev = [{"ph": "X", "name": f"op{i}", "pid": 1, "tid": 1, "ts": i * 10.5, "dur": 2.25} for i in range(2000)]
    text = bytearray(json.dumps({"traceEvents": ev, "traceName": "x"}, indent=1).encode())
    # damage op1000's event: overwrite a few bytes in the middle of it with garbage
    at = text.index(b'"op1000"')
    text[at : at + 6] = b"\x00]]}{{"
    p = tmp_path / "damaged.json"
    p.write_bytes(bytes(text))
    t = chrome.load(str(p))
    names = {t.names[i] for i in t.name.tolist()}
    assert "op999" in names and "op1001" in names and "op1999" in names
    assert "op1000" not in names
    assert 1995 <= len(t) <= 1999
    assert any("The file is damaged" in w for w in t.meta.warnings), t.meta.warnings
    assert not any("truncated" in w for w in t.meta.warnings)
