"""Durations and sizes typed by the user (command-line options, the app's go-to-time): exact, or a ValueError
that says what to write — never an exception of another kind (infinity once reached ``round()``)."""

from __future__ import annotations

import pytest

from gputop_trace.units import format_ns, format_si, parse_duration_ns, parse_size_bytes
from tests.paths import SAMPLES


@pytest.mark.parametrize(
    ("text", "ns"),
    [("50us", 50_000), ("1.5ms", 1_500_000), ("2s", 2_000_000_000), ("7", 7_000), ("250ns", 250), ("0", 0)],
)
def test_durations(text: str, ns: int) -> None:
    assert parse_duration_ns(text) == ns


@pytest.mark.parametrize("text", ["1e999s", "1e99s", "9" * 400 + "ms", "infs", "nanms", "abc", "", "5 parsecs"])
def test_durations_out_of_range_or_not_numbers_are_value_errors(text: str) -> None:
    with pytest.raises(ValueError, match=r"duration|time|unit"):
        parse_duration_ns(text)


@pytest.mark.parametrize(("text", "n"), [("512MB", 512_000_000), ("8GiB", 8 << 30), ("12", 12)])
def test_sizes(text: str, n: int) -> None:
    assert parse_size_bytes(text) == n


@pytest.mark.parametrize("text", ["9" * 400 + "GB", "1e999GB", "-1GB", "12 parsecs"])
def test_sizes_out_of_range_or_not_sizes_are_value_errors(text: str) -> None:
    with pytest.raises(ValueError, match="size"):
        parse_size_bytes(text)


@pytest.mark.parametrize(
    "argv",
    [["gaps", "--gap-threshold", "1e999s"], ["summary", "--max-memory", "9" * 400 + "GB"]],
)
def test_the_command_line_says_so_and_exits_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_run import run_cli

    code, _, err = run_cli(capsys, argv[0], str(SAMPLES / "h200_train_step.json.gz"), *argv[1:])
    assert code == 2 and "Traceback" not in err and "too l" in err


def test_format_ns_without_separator_for_labels() -> None:
    assert format_ns(812, sep="") == "812ns"
    assert format_ns(12_345, sep="") == "12.3µs"
    assert format_ns(4_100_000, sep="") == "4.10ms"
    assert format_ns(1_250_000_000, sep="") == "1.25s"


def test_format_si() -> None:
    assert format_si(1.234e12, "FLOP/s") == "1.23 TFLOP/s"
    assert format_si(512.0, "B") == "512 B"
    assert format_si(float("nan"), "B") == "-"


@pytest.mark.parametrize(
    ("ns", "text"),
    [
        (999, "999 ns"),
        (999.6, "1.00 µs"),  # rounds to 1000 ns: the next unit
        (999_600, "1.00 ms"),
        (999_499, "999 µs"),
        (9_997_000_000, "10.0 s"),  # rounding added a digit: three significant digits still
        (9_994_000_000, "9.99 s"),
        (4_100_000, "4.10 ms"),
        (-999_600, "-1.00 ms"),
        (12_345_678_900, "12.3 s"),
    ],
)
def test_format_ns_keeps_three_digits_where_rounding_reaches_the_next_unit(ns: float, text: str) -> None:
    assert format_ns(ns) == text
