"""What streaming one Chrome trace gathers (:class:`State`): per-event columns in file order, side rows by
provisional event index, and the B/E, async, flow and counter events that are matched after streaming."""

from __future__ import annotations

import threading
from collections import defaultdict
from typing import Any

import msgspec
import numpy as np

from gputop_trace.model.builder import TraceBuilder
from gputop_trace.parsers.chrome.op_args import OpArgRows

# values of the per-event "ph class" column
PH_X, PH_I, PH_BE, PH_ASYNC, PH_ASYNC_I = 0, 1, 2, 3, 4


#: the per-event columns and their dtypes (a part's ids come as int64 and are cast as they are copied in, with
#: ``astype``'s casting). An event's thread, category, ph class and device are in its class (``cls``: a row of
#: ``State.classes``), so they are not kept per event.
COLUMNS: dict[str, Any] = {
    "start": np.int64,
    "dur": np.int64,
    "name": np.int32,
    "corr": np.int64,
    "ext": np.int64,
    "cls": np.int32,  # ids into ``State.classes``: (thread, category, ph class, device, name or -1)
}


#: events kept clear between the end of the events written and the memory the fault-in thread writes (far more than
#: a part holds, so that the thread is rarely stopped by a part that reaches its memory)
FAULT_IN_GAP = 1 << 20
#: events whose pages the fault-in thread writes at a time (in each column)
FAULT_IN_BLOCK = 1 << 19


class _Columns:
    """Per-event columns in provisional order (file order), each one growing array of its final dtype into which
    each part's values are copied as it comes: no part's arrays are kept, and nothing is concatenated after the
    stream (each value is written once, into memory faulted in once; concatenating the parts of a 1 GB trace had
    faulted in about 100 MB more at the end of the load, on the loading thread). The arrays grow by half again
    when full, or once to :meth:`reserve`'s estimate; pages past the events are never touched, so they cost no
    memory, unless :meth:`reserve` is asked to fault them in on a thread of its own."""

    def __init__(self) -> None:
        self.n = 0
        #: the latest end (start + dur, ns) of the events so far; None before the first
        self.end: int | None = None
        self._a: dict[str, np.ndarray[Any, Any]] = {k: np.empty(0, dtype=dt) for k, dt in COLUMNS.items()}
        # the fault-in thread writes only events from ``_front`` on: under ``_lock`` it lowers ``_front`` by a
        # block while that stays :data:`FAULT_IN_GAP` events above ``_writing`` (the end of the events being copied
        # in), then fills the block; :meth:`append`, under the same lock, sets ``_writing`` and stops the thread
        # (waiting for the block it fills) where its part would reach ``_front``. So what the thread writes and
        # what append writes never meet, however the threads are scheduled
        self._writing = 0
        self._front = 0
        self._stop = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def reserve(self, n: int, *, fault_in: int = 0) -> None:
        """Room for ``n`` events in all. ``fault_in``: the pages of the events up to that one are written on a
        thread of their own (numpy releases the GIL as it fills them), from the last back towards the events
        copied in so far, so that the loading thread finds them in memory as it copies parts in instead of
        faulting each page in (for where there is a core to spare: a page fault costs the thread that writes
        first)."""
        self.settle()
        if n > self._a["start"].shape[0]:
            for k, a in self._a.items():
                grown = np.empty(n, dtype=a.dtype)
                grown[: self.n] = a[: self.n]
                self._a[k] = grown
        fault_in = min(fault_in, self._a["start"].shape[0])
        if fault_in > self.n + FAULT_IN_GAP:
            self._front, self._stop = fault_in, False
            self._thread = threading.Thread(target=self._fault_in, name="gputop-fault-in", daemon=True)
            self._thread.start()

    def _fault_in(self) -> None:
        arrays = list(self._a.values())
        while True:
            with self._lock:
                end = self._front
                start = max(end - FAULT_IN_BLOCK, 0)
                if self._stop or start < self._writing + FAULT_IN_GAP:
                    return
                self._front = start
            for a in arrays:
                a[start:end] = 0

    def settle(self) -> None:
        """Stop the fault-in thread and wait for it (before the arrays are read whole or replaced)."""
        if self._thread is not None:
            self._stop = True
            self._thread.join()
            self._thread = None

    def append(self, **parts: np.ndarray[Any, Any]) -> None:
        """One part's events: a value for each of :data:`COLUMNS`, equally long."""
        k = parts["start"].shape[0]
        m = self.n + k
        cap = self._a["start"].shape[0]
        if m > cap:
            self.reserve(max(m, cap + cap // 2, 1 << 14))
        with self._lock:
            self._writing = m
            clash = self._thread is not None and m > self._front
        if clash:
            self.settle()
        for key, a in self._a.items():
            a[self.n : m] = parts[key]
        if k:
            last = int((parts["start"] + parts["dur"]).max())
            self.end = last if self.end is None else max(self.end, last)
        self.n = m

    def column(self, name: str) -> np.ndarray[Any, Any]:
        """Column ``name`` of the events so far (a view: valid until the next :meth:`append`; call :meth:`settle`
        first)."""
        return self._a[name][: self.n]


# (the record classes of the loader are msgspec Structs, not dataclasses: defining a dataclass runs generated code,
# about a millisecond each of the import every load pays; a Struct is defined in a few microseconds)
class _Flows(msgspec.Struct):
    """Chrome flow events (``s``/``t``/``f``) other than launch flows, column-wise in file order."""

    ident: list[Any] = msgspec.field(default_factory=list)  # the flow id (int, str or None)
    cat: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    src: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    ts: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)  # ns, file time
    next_slice: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)  # an "f" bound to the next slice
    seq: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)  # file order
    phase: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)  # uint8: ord("s"), ord("t"), ord("f")

    def __len__(self) -> int:
        return len(self.ident)


class _KernelRows(msgspec.Struct):
    """Kineto kernel args of slices, column-wise (``event`` = provisional index)."""

    event: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    grid: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    block: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    registers: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    shared: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    blocks_per_sm: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    warps_per_sm: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)
    occupancy: list[np.ndarray[Any, Any]] = msgspec.field(default_factory=list)


class State:
    """Everything gathered while streaming one file.

    Ids are handed out in file order, whatever the chunking: a thread ``(pid, tid)`` and a category get their id
    at the first slice, instant, B/E or flow event that names them; an event name at the first slice, instant or
    B/E event. ``seq`` counts every event of the array, so it orders any two events as the file does.
    """

    def __init__(self) -> None:
        self.builder = TraceBuilder("chrome")
        self.cols = _Columns()
        self.n = 0
        self.cats: dict[str, int] = {"": 0}
        #: the compiled path's name ids by the JSON text of the name (quotes included): a chunk's names are
        #: decoded only the first time they are seen
        self.name_by_text: dict[bytes, int] = {}
        self.srcs: dict[tuple[Any, Any], int] = {}
        #: the distinct (thread, category, ph class, device, name or -1) rows of the events, numbered in the order
        #: they first appear (the events' ``cls`` column): what the classification reads, found part by part as
        #: the events come (classify.event_classes)
        self.classes: dict[tuple[int, ...], int] = {}
        self.proc_name: dict[Any, str] = {}
        self.proc_labels: dict[Any, str] = {}
        self.proc_sort: dict[Any, int] = {}
        self.thread_name: dict[tuple[Any, Any], str] = {}
        self.thread_sort: dict[tuple[Any, Any], int] = {}
        # side info by provisional event index
        self.kern = _KernelRows()
        self.copy_ev: list[np.ndarray[Any, Any]] = []
        self.copy_bytes: list[np.ndarray[Any, Any]] = []
        # bytes of runtime copy calls by correlation id (HIP writes them in the call's args, not the copy's)
        self.call_size: dict[int, int] = {}
        # (bytes, direction words or None) of events whose own args give a size (MTIA's DMA copies), by event
        self.own_size: dict[int, tuple[int, Any]] = {}
        self.coll_rows: list[tuple[int, str, str | None, int, int, int, str | None]] = []
        self.details: list[tuple[int, str, str]] = []  # (event, "kernel"|"memcpy"|"memset", details text)
        # torch.compile launcher ops: op name → distinct (kernel_file, kernel_hash, kernel_backend)
        self.inductor_args: dict[str, set[tuple[str, str, str]]] = defaultdict(set)
        self.op_args = OpArgRows()  # record_shapes args of operators, profile_memory records
        # B/E, async and flow events (matched after streaming)
        self.be: list[tuple[int, int, int, int, int, str]] = []  # (src, ts, seq, name, cat, ph)
        self.asyncs: list[tuple[Any, ...]] = []  # (ph, pid, cat, id, ts, name, seq)
        self.flows = _Flows()
        self.counters: dict[tuple[Any, str], tuple[list[int], list[float]]] = defaultdict(lambda: ([], []))
        self.other_phases: dict[str, int] = defaultdict(int)
        self.skipped = 0
        self.accelerator = ""  # the kind of device the file's device lanes belong to (model.devices)
        self.python_left_out = 0  # python_function events left out on request (include_python=False)
        self.skipped_example = ""
        self.repaired = 0
        self.repaired_example = ""
        self.negative_dur = 0
        self.seq = 0

    def src_id(self, pid: Any, tid: Any) -> int:
        key = (pid, tid)
        i = self.srcs.get(key)
        if i is None:
            i = self.srcs[key] = len(self.srcs)
        return i

    def cat_id(self, cat: str) -> int:
        i = self.cats.get(cat)
        if i is None:
            i = self.cats[cat] = len(self.cats)
        return i

    def name_id(self, name: str) -> int:
        return self.builder.names.intern(name)
