"""The compiled path of the Chrome loader: chunks scanned into columns by the optional C extension
(``_fastscan.c``), then turned into the loader's columns here, with the same rules as
:mod:`~gputop_trace.parsers.chrome.columns` (the pure-Python path, which stays the reference and the fallback).

What is compiled and what is not: the scanner reads the fixed top-level fields of every event (``ph``, ``name``,
``cat``, ``pid``, ``tid``, ``ts``, ``dur``; the types of ``id``, ``s``, ``bp``, ``args``), the args every event
of a kind carries (correlation, External id, device, and record_shapes' Sequence number, Fwd thread id, Input Dims
and Input type, the last two as texts printed as :mod:`~gputop_trace.parsers.chrome.op_args` prints them), and
joins the other events' ``args`` objects (those holding a further key ``Args`` reads: kernels, copies, ...) into
one JSON array, which is decoded here in one ``msgspec`` call into the same
:class:`~gputop_trace.parsers.chrome.structs.Args` structs the Python path reads: a field added to ``Args``
works on both paths. The rare events (metadata, counters, async and non-launch flow events, examples quoted in
warnings) are decoded one by one from their element's bytes with the Python path's decoders.

A chunk the scanner does not read exactly as the typed ``msgspec`` decoder would (damaged or non-strict JSON,
fields of other types, ...) is decoded by the Python path, so truncation recovery, damage resync and the lenient
repairs are the same code on both paths. ``GPUTOP_PURE_PYTHON=1`` forces the Python path everywhere.
"""

from __future__ import annotations

from operator import attrgetter
from typing import Any

import msgspec
import numpy as np

from gputop_trace.parsers.chrome.kernel_args import KernelCols
from gputop_trace.parsers.chrome.scanner import PURE_PYTHON_ENV, available, enabled, raw_scan, release_memory
from gputop_trace.parsers.chrome.state import PH_I, PH_X, State
from gputop_trace.parsers.chrome.structs import DEC_COUNTER, DEC_ONE, Args, CounterEvent, Event, ExactEvent

DEC_ARGS = msgspec.json.Decoder(list[Args])
DEC_EXACT_ONE = msgspec.json.Decoder(ExactEvent)
DEC_EXACT_LIST = msgspec.json.Decoder(list[ExactEvent])
DEC_EVENT_LIST = msgspec.json.Decoder(list[Event])
_NO_ARGS = Args()
_A_CORR = attrgetter("correlation")
_A_EXT = attrgetter("external_id")
_A_DEV = attrgetter("device")


#: the forms of an event's id and bp in :attr:`FastChunk.fid_kind` / :attr:`FastChunk.bp` (as in _fastscan.c)
ID_NONE, ID_INT, ID_TEXT = 0, 1, 2
BP_OTHER, BP_E, BP_ESCAPED = 0, 1, 2

#: chunks the scanner read, and chunks it left to the Python path (for tests and benchmarks)
stats = {"scanned": 0, "fallback": 0}


class FastChunk(msgspec.Struct):
    """One chunk as the scanner gave it: per-event columns (chunk-local ids for names, categories and threads;
    ids, operator, kernel, copy and flow args), the bytes of its rare events (decoded one by one) and the decoded
    Args of the events whose args hold more than the scanner reads."""

    n: int
    end: int  # where the scanned elements end in the text given to :func:`scan` (the byte after the last one)
    # the elements the Python side may decode one by one (rare ones: not slices, instants, B/E or plain flows)
    text: memoryview
    ph: np.ndarray[Any, Any]  # uint8 phase character (0: none)
    name: np.ndarray[Any, Any]  # int32 local ids into ``names``
    cat: np.ndarray[Any, Any]
    src: np.ndarray[Any, Any]
    ts_d: np.ndarray[Any, Any]  # float64 µs, NaN when missing (what a float decoder gives)
    ts_ns: np.ndarray[Any, Any]  # int64 exact ns of the text
    ts_st: np.ndarray[Any, Any]  # uint8 values.T_OK / T_MISSING / T_FAR
    dur_d: np.ndarray[Any, Any]
    dur_ns: np.ndarray[Any, Any]
    el_at: np.ndarray[Any, Any]  # int64 start of each element in ``text`` (-1: not kept, not a rare event)
    el_len: np.ndarray[Any, Any]
    names: list[bytes]  # JSON text of each distinct name (with its quotes)
    cats: list[bytes]
    srcs: list[bytes]  # JSON text of pid, \x01, JSON text of tid
    arg_list: list[Args]  # the Args of the events that ``need`` them, in event order
    arg_pos: np.ndarray[Any, Any]  # int64 each event's place in ``arg_list`` (-1: none, the empty Args)
    need: np.ndarray[Any, Any]  # bool: the event's args hold a field beyond the three below (decoded into Args)
    corr: np.ndarray[Any, Any]  # int64 args.correlation (-1 when absent), External id, device
    ext: np.ndarray[Any, Any]
    dev: np.ndarray[Any, Any]
    counters: list[CounterEvent]
    seq: np.ndarray[Any, Any]  # int64 args' Sequence number, Fwd thread id (-1 when absent)
    fwd: np.ndarray[Any, Any]
    dims: np.ndarray[Any, Any]  # int32 local ids into ``shapes`` / ``typestrs`` (-1 when absent)
    types: np.ndarray[Any, Any]
    shapes: list[bytes]  # Input Dims texts as the Python path prints them (UTF-8)
    typestrs: list[bytes]  # Input type texts, joined by ", "
    # kernel and copy args, one row per event that has any (k_row: the event, ascending); the other events have
    # the defaults (-1, -1.0, 0, False)
    k_row: np.ndarray[Any, Any]  # int32
    k_ints: np.ndarray[Any, Any]  # (k, 3) int64 registers per thread, shared memory, bytes (-1 when absent)
    k_floats: np.ndarray[Any, Any]  # (k, 3) float64 blocks per SM, warps per SM, occupancy (-1.0 when absent)
    k_dims: np.ndarray[Any, Any]  # (k, 6) int64 grid, block (0 when absent)
    has_grid: np.ndarray[Any, Any]  # (k,) bool: the grid was three integers
    fid: np.ndarray[Any, Any]  # int64 the event's id where it is an integer
    fid_kind: np.ndarray[Any, Any]  # uint8 ID_NONE (absent or null), ID_INT, ID_TEXT (a string: decode the event)
    bp: np.ndarray[Any, Any]  # uint8 BP_OTHER, BP_E ("e"), BP_ESCAPED (written with escapes: decode the event)
    _names: list[str] | None = None

    def maybe_kernel(self) -> np.ndarray[Any, Any]:
        """Which events have kernel or copy args as the scanner read them (a grid, registers or bytes), or args
        decoded by msgspec (which may hold them in another form)."""
        ints = self.k_ints
        out: np.ndarray[Any, Any] = self.need.copy()
        out[self.k_row[self.has_grid | (ints[:, 0] >= 0) | (ints[:, 2] >= 0)]] = True
        return out

    def kernel_cols(self, rows: np.ndarray[Any, Any]) -> KernelCols:
        """The kernel and copy args of the events at ``rows``, as the scanner read them."""
        n = len(rows)
        k_row = self.k_row
        if n and len(k_row):  # each event's row where it has one (most do), the defaults set where it has none
            at = np.searchsorted(k_row, rows)
            np.minimum(at, len(k_row) - 1, out=at)
            ints, floats, dims = self.k_ints[at], self.k_floats[at], self.k_dims[at]
            has_grid = self.has_grid[at]
            missing = k_row[at] != rows
            if missing.any():
                ints[missing], floats[missing], dims[missing], has_grid[missing] = -1, -1.0, 0, False
        else:
            ints = np.full((n, 3), -1, dtype=np.int64)
            floats = np.full((n, 3), -1.0)
            dims = np.zeros((n, 6), dtype=np.int64)
            has_grid = np.zeros(n, dtype=bool)
        return KernelCols(
            registers=ints[:, 0],
            shared=ints[:, 1],
            nbytes=ints[:, 2],
            blocks_per_sm=floats[:, 0],
            warps_per_sm=floats[:, 1],
            occupancy=floats[:, 2],
            grid=dims[:, :3],
            block=dims[:, 3:],
            has_grid=has_grid,
        )

    def element(self, i: int) -> memoryview:
        at = int(self.el_at[i])
        if at < 0:
            raise ValueError(f"event {i} of the chunk is a slice, instant or B/E: its bytes are not kept")
        return self.text[at : at + int(self.el_len[i])]

    def args_of(self, rows: np.ndarray[Any, Any]) -> list[Args]:
        """The Args of the events at ``rows`` (the shared empty one where an event has none beyond its ids)."""
        pos = self.arg_pos[rows]
        table = self.arg_list
        if len(pos) and int(pos.min()) < 0:
            table = [*table, _NO_ARGS]
            pos = np.where(pos < 0, len(table) - 1, pos)
        return list(map(table.__getitem__, pos.tolist()))

    def event(self, i: int, exact: bool) -> Any:
        """Event ``i`` decoded as the Python path decodes it (ts/dur as text when ``exact``)."""
        return (DEC_EXACT_ONE if exact else DEC_ONE).decode(self.element(i))

    def flow_ids(self, rows: np.ndarray[Any, Any], exact: bool) -> tuple[list[Any], np.ndarray[Any, Any]]:
        """The ids of the flow events at ``rows`` (int, str, or None as the typed decoder gives them) and whether
        each is bound to the next slice (an ``f`` whose bp is not ``e``); events with a string id or an escaped
        bp are decoded, the others read from the columns."""
        kind, bp = self.fid_kind[rows], self.bp[rows]
        ident: list[Any] = self.fid[rows].tolist()
        next_slice = (self.ph[rows] == ord("f")) & (bp != BP_E)
        for i in np.flatnonzero(kind == ID_NONE).tolist():
            ident[i] = None
        decode = np.flatnonzero((kind == ID_TEXT) | (bp == BP_ESCAPED))
        if len(decode):
            for i, e in zip(decode.tolist(), self.events(rows[decode].tolist(), exact), strict=True):
                ident[i] = e.id
                next_slice[i] = e.ph == "f" and e.bp != "e"
        return ident, next_slice

    def events(self, rows: list[int], exact: bool) -> list[Any]:
        """The events at ``rows``, decoded in one call."""
        text, at, ln = self.text, self.el_at, self.el_len
        joined = b",".join([text[a : a + b] for a, b in zip(at[rows].tolist(), ln[rows].tolist(), strict=True)])
        return (DEC_EXACT_LIST if exact else DEC_EVENT_LIST).decode(b"[" + joined + b"]")

    def texts(self, which: str) -> list[str | None]:
        """The chunk's distinct ``shapes`` or ``typestrs``, decoded."""
        return [t.decode("utf-8") for t in getattr(self, which)]

    def name_strings(self) -> list[str]:
        """The chunk's distinct names (decoded once)."""
        if self._names is None:
            self._names = decode_strings(self.names)
        return self._names


def scan(text: bytes | memoryview, *, prefix: bool = False) -> FastChunk | None:
    """Scan ``[e, e, ...]`` into a :class:`FastChunk`; None when the Python path must decode it.

    With ``prefix``, ``text`` is ``[`` and then as many elements as a window of the stream holds, the last one
    possibly cut: the complete elements before the cut are scanned and :attr:`FastChunk.end` says where they end
    (the byte after the last one's ``}``). None when no element is complete or one of them is not read here.
    """
    return from_raw(raw_scan(text, prefix), prefix=prefix)


def from_raw(got: dict[str, Any] | None, *, prefix: bool) -> FastChunk | None:
    """The :class:`FastChunk` of what :func:`~gputop_trace.parsers.chrome.scanner.raw_scan` gave (the args
    objects it kept decoded into ``Args`` here, in one call); None when the Python path must decode the text."""
    if got is None or (got["n"] == 0 and prefix):
        stats["fallback"] += 1
        return None
    n = got["n"]
    el_at = np.frombuffer(got["el_at"], np.int64)
    el_len = np.frombuffer(got["el_len"], np.int32)
    need = np.frombuffer(got["need"], np.uint8).astype(bool)
    corr = np.frombuffer(got["corr"], np.int64)  # (read-only views of the scanner's columns, copied only where
    ext = np.frombuffer(got["ext"], np.int64)  # decoded args are written in)
    dev = np.frombuffer(got["dev"], np.int64)
    has = np.flatnonzero(need)
    arg_pos = np.full(n, -1, dtype=np.int64)
    decoded: list[Args] = []
    if len(has):
        try:
            decoded = DEC_ARGS.decode(got["args_json"])  # the args that hold more than ids, in one call
        except (msgspec.MsgspecError, RecursionError):
            stats["fallback"] += 1
            return None  # an args field of the wrong type: the Python path repairs or skips it
        arg_pos[has] = np.arange(len(has))
        corr, ext, dev = corr.copy(), ext.copy(), dev.copy()
        corr[has] = np.fromiter(map(_A_CORR, decoded), np.int64, len(has))
        ext[has] = np.fromiter(map(_A_EXT, decoded), np.int64, len(has))
        dev[has] = np.fromiter(map(_A_DEV, decoded), np.int64, len(has))
    ph = np.frombuffer(got["ph"], np.uint8)
    chunk = FastChunk(
        n=n,
        end=got["end"],
        text=memoryview(got["rare"]),
        ph=ph,
        name=np.frombuffer(got["name"], np.int32),
        cat=np.frombuffer(got["cat"], np.int32),
        src=np.frombuffer(got["src"], np.int32),
        ts_d=np.frombuffer(got["ts_d"], np.float64),
        ts_ns=np.frombuffer(got["ts_ns"], np.int64),
        ts_st=np.frombuffer(got["ts_st"], np.uint8),
        dur_d=np.frombuffer(got["dur_d"], np.float64),
        dur_ns=np.frombuffer(got["dur_ns"], np.int64),
        el_at=el_at,
        el_len=el_len,
        names=got["names"],
        cats=got["cats"],
        srcs=got["srcs"],
        arg_list=decoded,
        arg_pos=arg_pos,
        need=need,
        corr=corr,
        ext=ext,
        dev=dev,
        counters=[],
        seq=np.frombuffer(got["seq"], np.int64),
        fwd=np.frombuffer(got["fwd"], np.int64),
        dims=np.frombuffer(got["dims"], np.int32),
        types=np.frombuffer(got["types"], np.int32),
        shapes=got["shapes"],
        typestrs=got["typestrs"],
        k_row=np.frombuffer(got["k_row"], np.int32),
        k_ints=np.frombuffer(got["k_ints"], np.int64).reshape(-1, 3),
        k_floats=np.frombuffer(got["k_floats"], np.float64).reshape(-1, 3),
        k_dims=np.frombuffer(got["k_dims"], np.int64).reshape(-1, 6),
        has_grid=np.frombuffer(got["has_grid"], np.uint8).astype(bool),
        fid=np.frombuffer(got["fid"], np.int64),
        fid_kind=np.frombuffer(got["fid_kind"], np.uint8),
        bp=np.frombuffer(got["bp"], np.uint8),
    )
    stats["scanned"] += 1
    for i in np.flatnonzero(ph == ord("C")).tolist():
        try:
            chunk.counters.append(DEC_COUNTER.decode(chunk.element(i)))
        except msgspec.MsgspecError:
            pass
    return chunk


def decode_strings(texts: list[bytes]) -> list[str]:
    """JSON string texts (with quotes) → str; plain ones without a decoder call."""
    out = []
    for t in texts:
        out.append(t[1:-1].decode("utf-8") if b"\\" not in t else msgspec.json.decode(t))
    return out


def decode_src(text: bytes) -> tuple[Any, Any]:
    """``pid\\x01tid`` texts → (pid, tid) as the typed decoder gives them (int, or str)."""
    pid, tid = text.split(b"\x01")
    return msgspec.json.decode(pid), msgspec.json.decode(tid)


__all__ = [
    "PH_I",
    "PH_X",
    "PURE_PYTHON_ENV",
    "Event",
    "FastChunk",
    "State",
    "available",
    "enabled",
    "from_raw",
    "release_memory",
    "scan",
]
