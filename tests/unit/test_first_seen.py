"""``first_seen`` and ``map_local_ids``: the distinct chunk-local ids in the order they first appear, the rule that
gives names, categories, threads and operator texts their ids in file order on the compiled path (``map_local_ids``
in C there, the same as its Python loop)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from gputop_trace.model.native import PURE_PYTHON_ENV
from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.values import first_seen, map_local_ids
from tests.conftest import require_compiled


def test_first_seen_gives_the_order_of_first_appearance() -> None:
    assert first_seen(np.array([3, 1, 3, 0, 1], dtype=np.int32), 5).tolist() == [3, 1, 0]
    assert first_seen(np.array([], dtype=np.int32), 4).tolist() == []
    assert first_seen(np.array([2, 2, 2], dtype=np.int32), 3).tolist() == [2]


def test_first_seen_agrees_with_a_sort_on_random_ids() -> None:
    rng = np.random.default_rng(7)
    for _ in range(300):
        k = int(rng.integers(1, 60))
        ids = rng.integers(0, k, int(rng.integers(1, 400))).astype(np.int32)
        values, first = np.unique(ids, return_index=True)
        assert first_seen(ids, k).tolist() == values[np.argsort(first, kind="stable")].tolist()


def _python_map(local: np.ndarray[Any, Any], keys: list[Any], table: dict[Any, int], new: Any = None) -> list[int]:
    """The rule in plain Python: each key, where its id first appears, looked up or given the next id."""
    m = [-1] * len(keys)
    for u in local.tolist():
        if m[u] == -1:
            g = table.get(keys[u])
            if g is None:
                g = table[keys[u]] = len(table) if new is None else new(keys[u])
            m[u] = g
    return m


@pytest.mark.parametrize("pure", [False, True])
def test_map_local_ids_adds_new_keys_in_order_of_first_appearance(pure: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if pure:
        monkeypatch.setenv(PURE_PYTHON_ENV, "1")
    else:
        require_compiled(scanner.available(), "the compiled scanner")
    table = {"b": 0, "x": 1}
    got = map_local_ids(np.array([3, 1, 3, 0, 1], dtype=np.int32), ["a", "b", "c", "d", "e"], table)
    assert got.tolist() == [3, 0, -1, 2, -1]  # "d" first (id 2), then "b" (known: 0), then "a" (3); c, e absent
    assert table == {"b": 0, "x": 1, "d": 2, "a": 3}
    made: list[str] = []

    def new(key: str) -> int:
        made.append(key)
        return 100 + len(made)

    names: dict[str, int] = {"k": 7}
    got = map_local_ids(np.array([2, 0, 2, 1], dtype=np.int64), ["m", "k", "n"], names, new)
    assert got.tolist() == [102, 7, 101] and made == ["n", "m"] and names == {"k": 7, "n": 101, "m": 102}
    assert map_local_ids(np.array([], dtype=np.int32), [], {}).tolist() == []


def test_map_local_ids_compiled_agrees_with_python_on_random_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    require_compiled(scanner.available(), "the compiled scanner")
    rng = np.random.default_rng(11)
    for _ in range(300):
        k = int(rng.integers(1, 60))
        keys = [f"key{int(v)}" for v in rng.integers(0, 80, k)]  # (repeated keys: two local ids, one global id)
        ids = rng.integers(0, k, int(rng.integers(1, 400))).astype(np.int32 if rng.integers(2) else np.int64)
        known = {f"key{int(v)}": int(i) for i, v in enumerate(rng.integers(0, 80, int(rng.integers(0, 10))))}
        table = dict(known)
        want_table = dict(known)
        want = _python_map(ids, keys, want_table)
        assert map_local_ids(ids, keys, table).tolist() == want
        assert list(table.items()) == list(want_table.items())


def test_map_local_ids_refuses_ids_outside_the_keys() -> None:
    require_compiled(scanner.available(), "the compiled scanner")
    with pytest.raises(ValueError, match="outside"):
        map_local_ids(np.array([0, 2], dtype=np.int32), ["a", "b"], {})
