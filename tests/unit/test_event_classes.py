"""``classify.event_classes``: each event's class (its distinct (thread, category, ph class, device, name or -1)
row), new rows numbered in the order they first appear across parts: the compiled pass (``_fastscan.classes``)
and the numpy fallback give the same ids and the same table, and both follow the plain rule below."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gputop_trace.model.native import PURE_PYTHON_ENV
from gputop_trace.parsers.chrome import classify, scanner
from gputop_trace.parsers.chrome.conventions import MTIA_DEVICE_CAT
from gputop_trace.parsers.chrome.state import State
from tests.conftest import require_compiled

I32 = np.int32


def _rule(parts: list[tuple[np.ndarray[Any, Any], ...]], mtia: int) -> tuple[list[list[int]], dict[Any, int]]:
    """The rule in plain Python, event by event."""
    table: dict[Any, int] = {}
    out = []
    for src, cat, name, device, phc in parts:
        ids = []
        for s, c, nm, d, p in zip(
            src.tolist(), cat.tolist(), name.tolist(), device.tolist(), phc.tolist(), strict=True
        ):
            key = (s, c, p, d, nm if c in (0, mtia) else -1)
            ids.append(table.setdefault(key, len(table)))
        out.append(ids)
    return out, table


def _random_parts(rng: np.random.Generator, mtia: int) -> list[tuple[np.ndarray[Any, Any], ...]]:
    parts: list[tuple[np.ndarray[Any, Any], ...]] = []
    for _ in range(int(rng.integers(1, 6))):
        n = int(rng.integers(0, 3000))
        hi = int(rng.integers(1, 40))
        cat = rng.integers(0, max(mtia + 2, 4), n).astype(I32)
        parts.append(
            (
                rng.integers(0, hi, n).astype(I32),
                cat,
                rng.integers(0, 500, n).astype(I32),
                rng.integers(-1, 3, n).astype(I32),
                rng.integers(0, 5, n).astype(np.uint8),
            )
        )
    return parts


@pytest.mark.parametrize("pure", [False, True], ids=["compiled", "numpy"])
def test_classes_follow_the_rule(pure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if pure:
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    else:
        require_compiled(scanner.available(), "the compiled scanner (_fastscan)")
        monkeypatch.delenv(PURE_PYTHON_ENV, raising=False)
    rng = np.random.default_rng(11)
    for trial in range(120):
        st = State()
        mtia = -1
        if trial % 2:  # MTIA's device category interned: its events' names are in their rows
            mtia = st.cats.setdefault(MTIA_DEVICE_CAT, 3)
        parts = _random_parts(rng, mtia)
        want, table = _rule(parts, mtia)
        got = [classify.event_classes(st, *p).tolist() for p in parts]
        assert got == want
        assert st.classes == table and list(st.classes.values()) == list(range(len(table)))


def test_a_row_seen_in_an_earlier_part_keeps_its_class(monkeypatch: pytest.MonkeyPatch) -> None:
    st = State()
    phc = np.zeros(3, dtype=np.uint8)
    a = [np.array(v, dtype=I32) for v in ([1, 1, 2], [5, 5, 5], [7, 8, 9], [-1, -1, 0])]
    first = classify.event_classes(st, a[0], a[1], a[2], a[3], phc)
    b = [np.array(v, dtype=I32) for v in ([3, 2, 1], [5, 0, 5], [1, 4, 1], [-1, 0, -1])]
    second = classify.event_classes(st, b[0], b[1], b[2], b[3], phc)
    assert first.tolist() == [0, 0, 1] and second.tolist() == [2, 3, 0]
    assert list(st.classes) == [(1, 5, 0, -1, -1), (2, 5, 0, 0, -1), (3, 5, 0, -1, -1), (2, 0, 0, 0, 4)]


def test_the_compiled_pass_refuses_columns_of_other_lengths() -> None:
    require_compiled(scanner.available(), "the compiled scanner (_fastscan)")
    from gputop_trace.parsers.chrome import _fastscan  # type: ignore[attr-defined]

    cols = [np.zeros(4, dtype=I32)] * 2 + [np.zeros(4, dtype=np.uint8), np.zeros(3, dtype=I32), np.zeros(4, dtype=I32)]
    with pytest.raises(ValueError, match="other lengths"):
        _fastscan.classes(*cols, -1, {})
