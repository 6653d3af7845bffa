"""Kinds and lanes of the loaded events, once every metadata event is known: the format (Kineto, JAX, generic)
from names and header, then (thread, category[, name], phase class) → (kind, lane) following the producer's
conventions (Kineto by ``cat``; JAX by process and thread names; anything else a slice on its thread)."""

from __future__ import annotations

from typing import Any

import numpy as np

from gputop_trace.model import devices
from gputop_trace.model.kinds import Kind, LaneKind
from gputop_trace.model.tables import Lane
from gputop_trace.parsers.chrome import scanner
from gputop_trace.parsers.chrome.conventions import (
    CAT_KIND,
    CUDA_API_NAME,
    GPU_EVENT_KINDS,
    JAX_COPY,
    JAX_GPU_PROC,
    JAX_HOST_PROC,
    JAX_STREAM,
    MTIA_COPY_NAME,
    MTIA_DEVICE_CAT,
    PROFILER_RANGE_CAT,
)
from gputop_trace.parsers.chrome.state import PH_ASYNC, PH_ASYNC_I, PH_I, PH_X, State
from gputop_trace.parsers.chrome.values import int_or, stable_int


def detect_format(st: State, header: dict[str, Any]) -> str:
    if any(JAX_GPU_PROC.match(n) or JAX_HOST_PROC.match(n) for n in st.proc_name.values()):
        return "jax"
    kineto_cats = {"kernel", "cpu_op", "cuda_runtime", "gpu_memcpy", "user_annotation", "python_function"}
    if "schemaVersion" in header or "deviceProperties" in header or kineto_cats & {c.lower() for c in st.cats}:
        return "kineto"
    return "chrome"


_ACCEL_CATS = (("mtia", devices.MTIA), ("xpu", devices.XPU), ("hpu", devices.HPU), ("privateuse1", devices.OTHER))
_AMD_NAMES = ("AMD", "RADEON", "INSTINCT")


def detect_accelerator(st: State, header: dict[str, Any]) -> str:
    """The kind of accelerator a file's device work ran on (:mod:`gputop_trace.model.devices`), from the
    categories (``mtia_*``, ``xpu_*``, ``hpu_*``), the device process' name (``MTIA 9``), ``deviceProperties``
    (an AMD model name) and the runtime calls (``hip*``: ROCm writes Kineto's CUDA categories); a CUDA GPU
    otherwise."""
    cats = {c.lower() for c in st.cats}
    for prefix, acc in _ACCEL_CATS:
        if any(c.startswith(prefix) for c in cats):
            return acc
    for pname in st.proc_name.values():
        word = pname.split()[0].upper() if pname.split() else ""
        if word in ("MTIA", "XPU", "HPU"):
            return word.lower()
    props = header.get("deviceProperties")
    models = [str(p.get("name", "")).upper() for p in props if isinstance(p, dict)] if isinstance(props, list) else []
    if any(w in m for m in models for w in _AMD_NAMES) or any(
        p.get("gcnArchName") for p in props or [] if isinstance(p, dict)
    ):
        return devices.ROCM
    if any(n.startswith("hip") for n in st.builder.names.strings):
        return devices.ROCM
    return devices.CUDA


class _Classifier:
    """Maps (source thread, category, name) to (kind, lane) following the producer's conventions."""

    def __init__(self, st: State, fmt: str, rank: int) -> None:
        self.st = st
        self.fmt = fmt
        self.rank = rank
        self.b = st.builder

    def _proc_display(self, pid: Any) -> str:
        name = self.st.proc_name.get(pid, "")
        label = self.st.proc_labels.get(pid, "")
        if name and label:
            return f"{name} ({label})"
        return name or label or (f"process {pid}" if pid not in ("", None) else "process")

    def cpu_lane(self, pid: Any, tid: Any) -> int:
        tname = self.st.thread_name.get((pid, tid)) or f"thread {tid}"
        psort = self.st.proc_sort.get(pid, stable_int(pid))
        tsort = self.st.thread_sort.get((pid, tid), stable_int(tid))
        return self.b.lane(
            ("cpu", pid, tid),
            Lane(
                kind=LaneKind.CPU_THREAD,
                name=tname,
                rank=self.rank,
                pid=stable_int(pid),
                tid=stable_int(tid),
                process_name=self._proc_display(pid),
                sort_key=(self.rank, 0, psort, str(pid), tsort, str(tid)),
            ),
        )

    def other_lane(self, pid: Any, tid: Any) -> int:
        pname = self._proc_display(pid)
        tname = self.st.thread_name.get((pid, tid)) or (str(tid) if tid not in ("", None) else "events")
        return self.b.lane(
            ("other", pid, tid),
            Lane(
                kind=LaneKind.OTHER,
                name=tname,
                rank=self.rank,
                pid=stable_int(pid),
                tid=stable_int(tid),
                process_name=pname,
                sort_key=(self.rank, 9, str(pid), str(tid)),
            ),
        )

    def async_lane(self, pid: Any, cat: Any) -> int:
        return self.b.lane(
            ("async", pid, cat),
            Lane(
                kind=LaneKind.ASYNC,
                name=f"async {cat}" if cat else "async",
                rank=self.rank,
                pid=stable_int(pid),
                process_name=self._proc_display(pid),
                sort_key=(
                    self.rank,
                    0,
                    self.st.proc_sort.get(pid, stable_int(pid)),
                    str(pid),
                    1 << 40,
                    str(cat),
                ),
            ),
        )

    def _device_name(self, device: int, pid: Any) -> str:
        """The device's own name where its process names an accelerator that is not a GPU (``"MTIA 9"``), else
        its own name (``"GPU <device>"``, ``"device <device>"``: :mod:`gputop_trace.model.devices`)."""
        pname = self.st.proc_name.get(pid, "") if pid is not None else ""
        if pname and not pname.upper().startswith("GPU") and pname.split()[-1] == str(device):
            return pname
        return devices.words_for(self.st.accelerator).label(device)

    def gpu_lane(self, device: int, stream: int, pid: Any, tid: Any) -> int:
        tname = self.st.thread_name.get((pid, tid), "")
        name = f"stream {stream}"
        if tname and self.fmt == "jax":
            name = tname
        return self.b.lane(
            ("gpu", device, stream),
            Lane(
                kind=LaneKind.GPU_STREAM,
                name=name,
                rank=self.rank,
                pid=stable_int(pid),
                device=device,
                stream=stream,
                process_name=self._device_name(device, pid),
                sort_key=(self.rank, 1, device, 1, stream),
                accelerator=self.st.accelerator,
            ),
        )

    def gpu_ranges_lane(self, device: int) -> int:
        return self.b.lane(
            ("gpuranges", device),
            Lane(
                kind=LaneKind.GPU_RANGES,
                name="annotations",
                rank=self.rank,
                device=device,
                process_name=self._device_name(device, None),
                sort_key=(self.rank, 1, device, 0, 0),
                accelerator=self.st.accelerator,
            ),
        )

    def profiler_lane(self, device: int, pid: Any) -> int:
        """The lane of a device's CUPTI range-profiler ranges (one range per profiled kernel)."""
        return self.b.lane(
            ("profiler", device),
            Lane(
                kind=LaneKind.GPU_RANGES,
                name=devices.PROFILER_LANE,
                rank=self.rank,
                pid=stable_int(pid),
                device=device,
                process_name=self._device_name(device, None),
                sort_key=(self.rank, 1, device, 0, 1),
                accelerator=self.st.accelerator,
            ),
        )

    def classify(self, pid: Any, tid: Any, cat: str, name: str, device_arg: int, phc: int) -> tuple[Kind, int]:
        """(kind, lane id) of an event from its thread, category, name and args."""
        if phc in (PH_ASYNC, PH_ASYNC_I):
            kind = Kind.MARKER if phc == PH_ASYNC_I else Kind.RANGE
            return kind, self.async_lane(pid, tid[1] if isinstance(tid, tuple) else "")
        if self.fmt == "jax":
            return self._classify_jax(pid, tid, name, phc)
        kind = CAT_KIND.get(cat.lower(), Kind.OTHER) if cat else Kind.OTHER
        if phc == PH_I:
            kind = Kind.MARKER
        if kind == Kind.KERNEL and name == MTIA_COPY_NAME and cat == MTIA_DEVICE_CAT:
            kind = Kind.MEMCPY
        if kind in GPU_EVENT_KINDS:
            device = device_arg if device_arg >= 0 else max(int_or(pid, 0), 0)
            stream = int_or(tid, 0)
            return kind, self.gpu_lane(device, stream, pid, tid)
        if kind == Kind.GPU_RANGE:
            device = device_arg if device_arg >= 0 else max(int_or(pid, 0), 0)
            if cat == PROFILER_RANGE_CAT:
                return kind, self.profiler_lane(device, pid)
            return kind, self.gpu_ranges_lane(device)
        if kind == Kind.OVERHEAD or not isinstance(pid, int) or pid < 0:
            return kind, self.other_lane(pid, tid)
        if kind == Kind.OTHER and cat == "" and phc == PH_X:
            kind = Kind.OTHER
        return kind, self.cpu_lane(pid, tid)

    def _classify_jax(self, pid: Any, tid: Any, name: str, phc: int) -> tuple[Kind, int]:
        pname = self.st.proc_name.get(pid, "")
        m = JAX_GPU_PROC.match(pname)
        if m:
            device = int(m.group(1))
            tname = self.st.thread_name.get((pid, tid), "")
            sm = JAX_STREAM.match(tname)
            if sm is None:
                return (Kind.MARKER if phc == PH_I else Kind.GPU_RANGE), self.gpu_ranges_lane(device)
            stream = int(sm.group(1))
            if phc == PH_I:
                kind = Kind.MARKER
            elif JAX_COPY.match(name):
                kind = Kind.MEMCPY
            elif name.startswith("Memset"):
                kind = Kind.MEMSET
            else:
                kind = Kind.KERNEL
            return kind, self.gpu_lane(device, stream, pid, tid)
        if phc == PH_I:
            kind = Kind.MARKER
        elif name.startswith("$"):
            kind = Kind.PYTHON
        elif CUDA_API_NAME.match(name):
            kind = Kind.API
        else:
            kind = Kind.RANGE
        if not isinstance(pid, int):
            return kind, self.other_lane(pid, tid)
        return kind, self.cpu_lane(pid, tid)


def event_classes(
    st: State,
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    device: np.ndarray[Any, Any],
    phc: np.ndarray[Any, Any],
) -> np.ndarray[Any, Any]:
    """The class of each of a part's events (int32 ids into ``st.classes``, new ones added in the order they first
    appear): its distinct (thread, category, ph class, device, name) row, the name only where a Kineto or generic
    trace's classification reads it (no category, or MTIA's device category; a JAX trace's reads every name, and is
    classified from the whole columns instead, :func:`classify_all`). Found part by part as the events stream, on
    arrays of a part's size (in one pass in C on the compiled path), so that classifying a trace makes no
    trace-long temporaries. ``src``, ``cat``, ``name`` and ``device`` are int32, ``phc`` uint8."""
    if not src.shape[0]:
        return np.zeros(0, dtype=np.int32)
    mtia = st.cats.get(MTIA_DEVICE_CAT, -1)  # (interned by now if any of these events has it)
    got = scanner.classes(src, cat, phc, device, name, mtia, st.classes)
    if got is not None:
        return np.frombuffer(got, dtype=np.int32)
    use_name = cat == 0
    if mtia >= 0:
        use_name |= cat == mtia
    name_key = np.where(use_name, name, -1)
    first, inverse = _distinct_rows([src, cat, phc, device, name_key])
    classes = st.classes
    ids = np.empty(len(first), dtype=np.int32)
    for j in np.argsort(first).tolist():  # (new rows numbered in the order they first appear, as in C)
        i = int(first[j])
        key = (int(src[i]), int(cat[i]), int(phc[i]), int(device[i]), int(name_key[i]))
        ids[j] = classes.setdefault(key, len(classes))
    out: np.ndarray[Any, Any] = ids[inverse]
    return out


def append_events(
    st: State,
    start: np.ndarray[Any, Any],
    dur: np.ndarray[Any, Any],
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    corr: np.ndarray[Any, Any],
    ext: np.ndarray[Any, Any],
    device: np.ndarray[Any, Any],
    phc: np.ndarray[Any, Any],
) -> None:
    """Append a part's events to the columns (ids cast to the columns' int32 as they are copied), with the class
    of each one (:func:`event_classes`)."""
    src, cat, name, device = src.astype(np.int32), cat.astype(np.int32), name.astype(np.int32), device.astype(np.int32)
    cls = event_classes(st, src, cat, name, device, phc)
    st.cols.append(start=start, dur=dur, name=name, corr=corr, ext=ext, cls=cls)
    st.n += int(start.shape[0])


def classify_classes(
    st: State, fmt: str, rank: int, cls: np.ndarray[Any, Any]
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Kind and lane of every event of a Kineto or generic trace from its class (``cls``: :func:`event_classes`),
    each class classified once, in the order of its row (lanes are numbered as they are first asked for, so the
    same order as :func:`classify_all`'s distinct rows: the same model). A row without its name (-1) is classified
    with the name "": a Kineto or generic trace's classification reads the name only where the row holds it."""
    if fmt == "jax":
        raise ValueError("a JAX trace's classification reads every name: classify_all")
    n = cls.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int32)
    keys = list(st.classes)
    src_keys = list(st.srcs)
    cat_names = list(st.cats)
    names = st.builder.names.strings
    c = _Classifier(st, fmt, rank)
    kinds = np.empty(len(keys), dtype=np.uint8)
    lanes = np.empty(len(keys), dtype=np.int32)
    for j in sorted(range(len(keys)), key=keys.__getitem__):
        src, cat, phc, device, name = keys[j]
        pid, tid = src_keys[src]
        # (the name is read only where it is in the row: no category, or MTIA's, whose events all have a name)
        kinds[j], lanes[j] = c.classify(pid, tid, cat_names[cat], names[name] if name >= 0 else "", device, phc)
    return kinds[cls], lanes[cls]


def classify_all(
    st: State,
    fmt: str,
    rank: int,
    src: np.ndarray[Any, Any],
    cat: np.ndarray[Any, Any],
    name: np.ndarray[Any, Any],
    device: np.ndarray[Any, Any],
    phc: np.ndarray[Any, Any],
) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Kind and lane of every event, computed once per distinct (thread, category[, name], ph class)."""
    n = src.shape[0]
    if n == 0:
        return np.zeros(0, dtype=np.uint8), np.zeros(0, dtype=np.int32)
    use_name = (cat == 0) if fmt != "jax" else np.ones(n, dtype=bool)
    mtia = st.cats.get(MTIA_DEVICE_CAT, -1)
    if mtia >= 0:  # its DMA copies are told from its ops by name
        use_name |= cat == mtia
    name_key = np.where(use_name, name, -1)
    first, inverse = _distinct_rows([src, cat, phc, device, name_key])
    src_keys = list(st.srcs)
    cat_names = list(st.cats)
    names = st.builder.names.strings
    cls = _Classifier(st, fmt, rank)
    kinds = np.empty(len(first), dtype=np.uint8)
    lanes = np.empty(len(first), dtype=np.int32)
    for j, i in enumerate(first.tolist()):
        pid, tid = src_keys[int(src[i])]
        kind, lane = cls.classify(pid, tid, cat_names[int(cat[i])], names[int(name[i])], int(device[i]), int(phc[i]))
        kinds[j] = kind
        lanes[j] = lane
    inverse = np.asarray(inverse).reshape(-1)
    return kinds[inverse], lanes[inverse]


#: the distinct rows of the classification are found with a table of at most this many slots per event, and at
#: most :data:`TABLE_MAX_SLOTS` in all (5 bytes a slot while it is used), else by a sort
TABLE_SLOTS_PER_ROW = 4
TABLE_MAX_SLOTS = 1 << 22


def _distinct_rows(cols: list[np.ndarray[Any, Any]]) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Distinct rows of equally long integer columns, in lexicographic order: (index of each one's first
    occurrence, row id of every row), like ``np.unique(np.stack(cols), axis=1, return_index, return_inverse)``.

    The columns are packed into one int64 key (mixed radix over each column's range, the first column the most
    significant) when that fits, which is several times faster than a multi-column unique; the key is built in
    place, one column at a time, without an int64 copy of each column.
    """
    bounds = [(int(c.min()), int(c.max())) for c in cols]
    radix = 1
    for lo, hi in bounds:
        radix *= hi - lo + 1
    if radix >= 2**62:
        stacked = np.stack([c.astype(np.int64) for c in cols])
        _, first, inverse = np.unique(stacked, axis=1, return_index=True, return_inverse=True)
        return first, np.asarray(inverse).reshape(-1)
    key = cols[0].astype(np.int64)
    key -= bounds[0][0]
    for c, (lo, hi) in zip(cols[1:], bounds[1:], strict=True):
        key *= hi - lo + 1
        key += c  # (int64 += a narrower column: cast as it is added)
        key -= lo
    if radix <= min(max(TABLE_SLOTS_PER_ROW * key.shape[0], 1 << 16), TABLE_MAX_SLOTS):
        return _distinct_keys_by_table(key, radix)
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    return first, np.asarray(inverse).reshape(-1)


def _distinct_keys_by_table(key: np.ndarray[Any, Any], radix: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """``np.unique(key, return_index=True, return_inverse=True)`` (less the values) for keys in ``[0, radix)``,
    from a table with a slot per possible key instead of a sort of the keys: a trace's events have a few dozen
    distinct rows, and sorting every event's key to find them took most of the classification (2 of 3 ms on a
    68,000-event trace). The first row of each distinct key is found by a sort of the small row ids (a radix
    sort, for fewer than 2**16 of them)."""
    present = np.zeros(radix, dtype=bool)
    present[key] = True
    # (an int32 running count of bools is ten times faster than an int64 one)
    ids = np.cumsum(present, dtype=np.int32 if radix < 2**31 else np.int64)
    ids -= 1
    inverse = ids[key].astype(np.int64)  # distinct keys numbered in ascending order, as np.unique numbers them
    d = int(ids[-1]) + 1
    order = np.argsort(inverse.astype(np.uint16) if d <= 1 << 16 else inverse, kind="stable")
    counts = np.bincount(inverse, minlength=d)
    first = order[np.cumsum(counts) - counts]  # the first row of each (the sort is stable)
    return first.astype(np.int64, copy=False), inverse
