"""numpy array aliases of the model (one definition each; every layer imports them from here)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

I64 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
I16 = npt.NDArray[np.int16]
U8 = npt.NDArray[np.uint8]
F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def distinct_ids(ids: npt.NDArray[np.integer[Any]]) -> I64:
    """The distinct values of ids that index a table (name ids, lane ids: small and non-negative), ascending, as
    ``np.unique`` gives them (int64): by counting, one pass, where ``np.unique`` sorts or hashes (a few ms on
    the 400 k-event columns a summary goes through, tens of times)."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    if int(ids.min()) < 0:  # not ids of a table: the general way
        return np.unique(ids).astype(np.int64)
    return np.flatnonzero(np.bincount(ids))
