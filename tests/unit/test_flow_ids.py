"""Chrome flow ids are chained as int64 numbers only when every id is a plain int that fits; any other id (a
string, a bool, a float, one past int64, none) makes the binder group them by Python equality, as before."""

from __future__ import annotations

import numpy as np

from gputop_trace.parsers.chrome.flows import _int_ids


def test_plain_int_ids_become_one_int64_array() -> None:
    got = _int_ids([3, -1, 2**63 - 1, 3])
    assert got is not None and got.dtype == np.int64 and got.tolist() == [3, -1, 2**63 - 1, 3]


def test_any_other_id_keeps_the_grouping_by_equality() -> None:
    for other in ("7", True, 1.5, None, 2**63):
        assert _int_ids([1, other, 2]) is None, other
    assert _int_ids([]) is None
