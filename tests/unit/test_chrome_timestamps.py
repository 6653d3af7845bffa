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


def test_epoch_timestamps_in_a_whole_file_match_the_decimal_value(tmp_path: Path) -> None:
    # a file where every chunk holds epoch timestamps with 16 digits before the point (19 significant digits),
    # durations with sub-ns digits, negative durations, and the largest value in range: each ns is the decimal
    # value rounded half to even, whatever chunk it falls in
    base = 1_790_857_026_123_456
    rows = []
    want = []
    for i in range(3000):
        frac = f"{(i * 7919) % 1000:03d}"
        ts = f"{base + i}.{frac}"
        dur = f"{i % 50}.{(i * 31) % 10000:04d}"  # 4 decimals: ties at .5 ns round to even
        rows.append(f'{{"ph":"X","name":"k{i % 7}","cat":"kernel","pid":1,"tid":{i % 3},"ts":{ts},"dur":{dur}}}')
        exact_ts = (base + i) * 1000 + int(frac)
        d4 = (i % 50) * 10000 + (i * 31) % 10000
        q, r = divmod(d4, 10)
        want.append((exact_ts, q + (1 if r > 5 or (r == 5 and q % 2) else 0)))
    p = tmp_path / "epoch_many.json"
    p.write_text('{"traceEvents":[' + ",\n".join(rows) + "]}")
    t = chrome.load(str(p))
    got = sorted(zip((t.start_ns + t.meta.t0_ns).tolist(), t.dur_ns.tolist(), strict=True))
    assert got == sorted(want)


def test_nineteen_digit_values_are_exact_or_refused_as_out_of_range(tmp_path: Path) -> None:
    # 19 significant digits: epoch µs with ns digits (in range, exact); a ts with 19 digits before the point (ns
    # written as µs, ~1.8e18 µs: beyond the ±2**62 ns the model holds) is skipped and said so; the largest value
    # in range (2**62 ns) is kept, one ns more is not
    p = tmp_path / "t19.json"
    p.write_text(
        '{"traceEvents":['
        '{"ph":"X","name":"a","pid":1,"tid":1,"ts":1790857026123456.789,"dur":1.001},'
        '{"ph":"X","name":"b","pid":1,"tid":1,"ts":1790857026123456789,"dur":1},'
        '{"ph":"X","name":"c","pid":1,"tid":1,"ts":4611686018427387.904,"dur":0},'
        '{"ph":"X","name":"d","pid":1,"tid":1,"ts":4611686018427387.9041,"dur":0},'
        '{"ph":"X","name":"e","pid":1,"tid":1,"ts":1790857026123457.0005,"dur":0.0015}]}'
    )
    t = chrome.load(str(p))
    names = [t.names[i] for i in t.name.tolist()]
    got = dict(zip(names, (t.start_ns + t.meta.t0_ns).tolist(), strict=True))
    assert got == {"a": 1790857026123456789, "c": 2**62, "e": 1790857026123457000}
    assert dict(zip(names, t.dur_ns.tolist(), strict=True)) == {"a": 1001, "c": 0, "e": 2}
    assert any("2 events" in w and "out of range" in w for w in t.meta.warnings), t.meta.warnings
