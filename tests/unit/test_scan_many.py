"""The compiled scanner's scan_many (parsers/chrome/_fastscan.c): the parts of a window scanned at once, on native
threads without the GIL, give what one scan of each part gives; a part it cannot read gives None, and an argument
that is not bytes raises."""

from __future__ import annotations

import json

import pytest

from gputop_trace.parsers.chrome import scanner
from tests.conftest import require_compiled

require_compiled(scanner.available(), "the compiled scanner (_fastscan)", module=True)


def _part(i: int, n: int) -> memoryview:
    events = [
        {"ph": "X", "name": f"k{j % 7}", "cat": "kernel", "pid": i, "tid": j % 3, "ts": 1000 * i + j, "dur": 2,
         "args": {"correlation": j, "grid": [1, 2, 3]}}
        for j in range(n)
    ]  # fmt: skip
    text = json.dumps(events).encode()
    return memoryview(bytearray(text[:-1] + b', {"ph": "X", "na'))  # a window cut inside its last element


@pytest.mark.parametrize("parts", [0, 1, 2, 8])
def test_scan_many_gives_what_one_scan_of_each_part_gives(parts: int) -> None:
    texts = [_part(i, 50 + 37 * i) for i in range(parts)]
    many = scanner.raw_scan_many(texts, prefix=True)
    assert len(many) == parts
    for text, got in zip(texts, many, strict=True):
        one = scanner.raw_scan(text, prefix=True)
        assert got is not None and one is not None
        assert {k: bytes(memoryview(v)) if not isinstance(v, (int, list)) else v for k, v in got.items()} == {
            k: bytes(memoryview(v)) if not isinstance(v, (int, list)) else v for k, v in one.items()
        }


def test_a_part_the_scanner_cannot_read_gives_none_and_the_others_their_columns() -> None:
    bad = memoryview(bytearray(b'[{"ph": "X", "ts": NaN}, {"ph'))
    got = scanner.raw_scan_many([_part(0, 10), bad, _part(1, 5)], prefix=True)
    assert got[1] is None
    assert got[0] is not None and got[0]["n"] == 10
    assert got[2] is not None and got[2]["n"] == 5


def test_an_argument_without_bytes_raises() -> None:
    with pytest.raises(TypeError):
        scanner.raw_scan_many([_part(0, 3), 42], prefix=True)  # type: ignore[list-item]
