"""Parsing and printing of times, sizes and rates. Internal times are integer nanoseconds."""

from __future__ import annotations

import math
import re

_DURATION_UNITS_NS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "sec": 1_000_000_000,
    "min": 60_000_000_000,
}
_DURATION_RE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([a-zA-Zµμ]*)\s*$")

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}


#: largest duration (ns) or size (bytes) accepted from the command line: 2^62 (146 years; 4 EiB)
_LARGEST = float(2**62)


def parse_duration_ns(text: str, *, default_unit: str = "us") -> int:
    """Parse ``"50us"``, ``"1.5ms"``, ``"2s"`` or a bare number (in ``default_unit``) into nanoseconds.

    Raises ``ValueError`` with a message naming the accepted units.
    """
    m = _DURATION_RE.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a duration; write a number with a unit, like 50us, 1.5ms or 2s")
    value, unit = float(m.group(1)), (m.group(2) or default_unit)
    factor = _DURATION_UNITS_NS.get(unit.lower() if unit not in ("µs", "μs") else unit)
    if factor is None:
        raise ValueError(f"unknown time unit {unit!r} in {text!r}; use ns, us, ms or s")
    ns = value * factor
    if not math.isfinite(ns) or abs(ns) > _LARGEST:
        raise ValueError(f"{text!r} is too long a time; give at most a few years, like 50us, 1.5ms or 2s")
    return round(ns)


def parse_size_bytes(text: str) -> int:
    """Parse ``"8GB"``, ``"512MiB"`` or a bare byte count into bytes."""
    m = re.match(r"^\s*([0-9]*\.?[0-9]+)\s*([a-zA-Z]*)\s*$", text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size; write a number with a unit, like 512MB or 8GiB")
    size = float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()]
    if not math.isfinite(size) or size > _LARGEST:
        raise ValueError(f"{text!r} is too large a size; write a number with a unit, like 512MB or 8GiB")
    return round(size)


def format_ns(ns: float, *, precision: int = 3, sep: str = " ") -> str:
    """Format a duration in nanoseconds with a unit chosen for its size: ``"812 ns"``, ``"12.3 µs"``, ``"4.10 ms"``
    (``sep=""`` for labels: ``"12.3µs"``)."""
    if ns is None or (isinstance(ns, float) and math.isnan(ns)):
        return "-"
    a = abs(ns)
    if round(a) < 1_000:
        return f"{ns:.0f}{sep}ns"
    for unit, factor in (("µs", 1e3), ("ms", 1e6), ("s", 1e9)):
        if a < factor * 1000 or unit == "s":
            value = ns / factor
            digits = max(0, precision - len(str(int(abs(value)))))
            text = f"{value:.{digits}f}"
            whole = len(str(int(abs(float(text)))))
            if whole > 3 and unit != "s":  # rounds up to 1000: the next unit ("999.6 µs" is "1.00 ms")
                continue
            if digits and whole > len(str(int(abs(value)))):  # rounding added a digit: "9.997 s" is "10.0 s"
                text = f"{value:.{digits - 1}f}"
            return f"{text}{sep}{unit}"
    raise AssertionError("unreachable")


def format_bytes(n: float) -> str:
    """Format a byte count with a binary unit: ``"16.0 KiB"``, ``"32.0 MiB"``."""
    a = abs(n)
    for unit, factor in (("B", 1), ("KiB", 1024), ("MiB", 1024**2), ("GiB", 1024**3)):
        if a < factor * 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n / factor:.1f} {unit}"
    raise AssertionError("unreachable")


def format_rate(bytes_per_s: float) -> str:
    """Format a bandwidth in bytes per second as GB/s (decimal, as vendors quote it)."""
    return f"{bytes_per_s / 1e9:.2f} GB/s"


def format_si(x: float, unit: str) -> str:
    """Format a quantity with a decimal SI prefix and three significant digits: ``"1.23 TFLOP/s"``, ``"512 kB"``
    (``"-"`` for NaN)."""
    if math.isnan(x):
        return "-"
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= factor:
            return f"{x / factor:.3g} {prefix}{unit}"
    return f"{x:.3g} {unit}"


def format_range(lo: str, hi: str, *, sep: str = "–", unit: str = "") -> str:
    """A range of figures, each already formatted: ``format_range("29", "87", unit="%")`` is ``"29–87%"``. Ends
    that read the same once rounded are said once: ``"99%"``, not ``"99–99%"``."""
    return f"{lo}{unit}" if lo == hi else f"{lo}{sep}{hi}{unit}"


def plural(n: int, noun: str, many: str | None = None) -> str:
    """A count with its noun in the right number: ``"1 kernel"``, ``"0 kernels"``, ``"1,024 copies"`` (thousands
    separated). ``many`` is the plural when it is not ``noun + "s"`` (``plural(n, "copy", "copies")``)."""
    return f"{n:,} {noun if n == 1 else (many if many is not None else noun + 's')}"
