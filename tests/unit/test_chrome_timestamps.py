"""Microsecond float timestamps become exact integer nanoseconds, however large they are."""

from __future__ import annotations

from pathlib import Path

from gputop_trace.parsers.chrome import loader as chrome


def test_epoch_microsecond_timestamps_keep_every_nanosecond(tmp_path: Path) -> None:
    # 1.79e15 µs since the epoch: a float64 cannot hold these to the ns, the loader must not lose them
    stamps = ["1790857026123456.789", "1790857026123456.790", "1790857026123457.001"]
    events = ",".join(
        f'{{"ph":"X","name":"e{i}","pid":1,"tid":1,"ts":{ts},"dur":0.001}}' for i, ts in enumerate(stamps)
    )
    p = tmp_path / "epoch.json"
    p.write_text(f'{{"traceEvents":[{events}]}}')
    t = chrome.load(str(p))
    got = sorted((t.start_ns + t.meta.t0_ns).tolist())
    assert got == [1790857026123456789, 1790857026123456790, 1790857026123457001]
    assert t.dur_ns.tolist() == [1, 1, 1]
    assert t.start_ns.tolist() == [0, 1, 212]


def test_sub_nanosecond_digits_round_to_the_nearest_nanosecond(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text(
        '{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":25906.317999999999,"dur":46.584000000000003},'
        '{"ph":"X","name":"b","pid":1,"tid":1,"ts":100.0004,"dur":0.0006}]}'
    )
    t = chrome.load(str(p))
    pairs = sorted(zip((t.start_ns + t.meta.t0_ns).tolist(), t.dur_ns.tolist(), strict=True))
    assert pairs == [(100000, 1), (25906318, 46584)]
