"""Kernel and copy args of a run of complete (``X``) events, column-wise: what Kineto writes on each GPU kernel
(``grid``, ``block``, ``registers per thread``, ``shared memory``, ``blocks per SM``, ``warps per SM``,
``est. achieved occupancy %``) and on each copy (``bytes``).

The pure-Python path reads them from the decoded :class:`~gputop_trace.parsers.chrome.structs.Args`
(:func:`kernel_cols`); the compiled scanner reads the plain forms itself (three integers, integers, plain numbers)
and leaves every other form to msgspec, whose values override the scanner's for those events
(:meth:`KernelCols.override`), so both paths give the same columns. A kernel is an event with registers or a
grid of three integers (a grid written as text, as Triton's CPU op writes ``"grid(100,)"``, is no launch).
"""

from __future__ import annotations

from itertools import repeat
from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

_A_GRID = attrgetter("grid")
_A_BLOCK = attrgetter("block")
_A_REGS = attrgetter("registers")
_A_SHARED = attrgetter("shared_memory")
_A_BYTES = attrgetter("bytes")
_A_BPS = attrgetter("blocks_per_sm")
_A_WPS = attrgetter("warps_per_sm")
_A_OCC = attrgetter("occupancy")


class KernelCols(msgspec.Struct):
    """Per event: ``registers``, ``shared`` (bytes) and ``nbytes`` (a copy's bytes) as int64, -1 where absent;
    ``blocks_per_sm``, ``warps_per_sm``, ``occupancy`` (%) as float64, -1.0 where absent; ``grid`` and ``block``
    as (n, 3) int64, zeros where absent or not three integers; ``has_grid``: the grid was three integers."""

    registers: np.ndarray[Any, Any]
    shared: np.ndarray[Any, Any]
    nbytes: np.ndarray[Any, Any]
    blocks_per_sm: np.ndarray[Any, Any]
    warps_per_sm: np.ndarray[Any, Any]
    occupancy: np.ndarray[Any, Any]
    grid: np.ndarray[Any, Any]
    block: np.ndarray[Any, Any]
    has_grid: np.ndarray[Any, Any]

    def override(self, at: np.ndarray[Any, Any], other: KernelCols) -> KernelCols:
        """These columns with the events at ``at`` taken from ``other`` (one row per place in ``at``)."""
        if len(at):
            for name in self.__struct_fields__:
                getattr(self, name)[at] = getattr(other, name)
        return self

    def is_kernel(self) -> np.ndarray[Any, Any]:
        """Which events are kernel launches (registers, or a grid of three integers)."""
        out: np.ndarray[Any, Any] = (self.registers >= 0) | self.has_grid
        return out


def _dims(values: list[Any]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """(n, 3) int64 of launch dims given as tuples (zeros for anything else), and which were tuples."""
    n = len(values)
    if values.count(None) == n:
        return np.zeros((n, 3), dtype=np.int64), np.zeros(n, dtype=bool)
    is_tuple = np.fromiter(map(isinstance, values, repeat(tuple)), bool, n)
    out = np.zeros((n, 3), dtype=np.int64)
    if is_tuple.any():
        out[is_tuple] = np.array([v for v in values if isinstance(v, tuple)], dtype=np.int64).reshape(-1, 3)
    return out, is_tuple


def kernel_cols(argl: list[Any]) -> KernelCols:
    """The columns of decoded args (one row per args)."""
    n = len(argl)
    grid, has_grid = _dims(list(map(_A_GRID, argl)))
    block, _ = _dims(list(map(_A_BLOCK, argl)))
    return KernelCols(
        registers=np.fromiter(map(_A_REGS, argl), np.int64, n),
        shared=np.fromiter(map(_A_SHARED, argl), np.int64, n),
        nbytes=np.fromiter(map(_A_BYTES, argl), np.int64, n),
        blocks_per_sm=np.fromiter(map(_A_BPS, argl), np.float64, n),
        warps_per_sm=np.fromiter(map(_A_WPS, argl), np.float64, n),
        occupancy=np.fromiter(map(_A_OCC, argl), np.float64, n),
        grid=grid,
        block=block,
        has_grid=has_grid,
    )
