"""A deliberately simple Chrome trace loader: the oracle the fast loader (:mod:`.chrome`) is tested against.

It reads the whole document with the standard :mod:`json` module (timestamps as exact :class:`~decimal.Decimal`),
walks the events one at a time in file order and applies the documented rules directly, then hands what it
gathered to the same classification and model building as the fast loader (those are not what is being checked:
the decoding, the field rules and the µs → ns conversion are). It is slow and holds the whole document in
memory: use it in tests, on small files, never for users.

Rules (the fast loader must give the same result):

- only these phases make events: ``X`` (slices), ``i``/``I``/``R`` (instants, duration 0), ``B``/``E`` pairs
  per thread, ``b``/``e``/``n`` async events; ``s``/``t``/``f`` flows (other than Kineto's ``ac2g`` launch
  flows, which come from correlation ids) become arrows; ``M`` names processes and threads; ``C`` counters;
- a thread ``(pid, tid)`` and a category get their id at the first X, instant, B/E or flow event naming them,
  an event name at the first X, instant or B/E event: ids follow the file order;
- ``ts``/``dur`` (µs) become ns rounded half to even; negative durations become 0 (counted in a warning); an
  event other than ``M`` without ``ts`` is skipped (counted in a warning);
- args: ``correlation`` (else the text ``correlation_id``), ``External id``, ``device``; a slice with a ``grid``
  or ``registers per thread`` has a kernel row, else one with ``bytes`` a copy row; JAX ``kernel_details`` /
  ``memcpy_details`` / ``Memset_details`` strings are kept for the side tables; an operator's ``Input Dims`` /
  ``Input type`` / ``Sequence number`` / ``Fwd thread id`` (record_shapes), a ``[memory]`` instant's allocator
  record (profile_memory) and a Triton launcher's ``kernel_file`` / ``kernel_hash`` / ``kernel_backend`` are kept
  as their rows; Kineto's ``Collective name`` and
  message sizes make a collective row;
- a copy without ``bytes`` takes its own ``size`` (MTIA's DMA copies, with their ``direction`` words), else the
  ``size`` of the runtime call of the same correlation id (HIP writes it as text); ``stream`` and ``kind`` are
  not read, and a text ``grid``/``block`` (Triton's CPU op) is no launch grid: neither is a field of the wrong
  type;
- args of the wrong type are converted when they are the text of an int (``"device": "0"``), else ignored; pids
  and tids that are not ints within 64 bits or strings become strings; such events are kept and counted;
- ``include_python=False`` drops every event whose category is ``python_function`` (counters are kept).
"""

from __future__ import annotations

import gzip
import json
import os
import re
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any

import numpy as np

from gputop_trace.model.trace import Trace
from gputop_trace.parsers.chrome import classify, state
from gputop_trace.parsers.chrome import loader as chrome
from gputop_trace.parsers.chrome.document import DocumentInfo

_INSTANT = ("i", "I", "R")
_FLOW = ("s", "t", "f")
_ASYNC = ("b", "e", "n")


def _ns(v: Any) -> int:
    """µs (int or Decimal) → ns, rounded half to even."""
    return int((Decimal(v) * 1000).to_integral_value(ROUND_HALF_EVEN))


def _plain(v: Any) -> Any:
    """Decimals back to floats, in a decoded header value."""
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, list):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    return v


_INT_ARGS = (
    "External id", "correlation", "device", "registers per thread", "shared memory", "bytes",
    "In msg nelems", "Out msg nelems", "Group size", "sort_index",
)  # fmt: skip
_FLOAT_ARGS = ("blocks per SM", "warps per SM", "est. achieved occupancy %")
_STR_ARGS = (
    "Collective name", "Process Group Name", "dtype", "name", "labels", "correlation_id", "memcpy_details",
    "kernel_details", "Memset_details",
)  # fmt: skip
_INT_TEXT = re.compile(r"-?[0-9]+")


def _in_int64(v: int) -> bool:
    return -(2**63) <= v < 2**63


def _repair_args(args: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Args the loader reads, with values of the wrong type converted (``"0"`` → 0) or dropped, and whether any
    had to be: such an event is kept and counted as repaired."""
    out = dict(args)
    repaired = False
    for key in _INT_ARGS:
        if key not in out or (out[key] is None and key == "sort_index"):
            continue
        v = out[key]
        if isinstance(v, int) and not isinstance(v, bool) and _in_int64(v):
            continue
        repaired = True
        if isinstance(v, str) and _INT_TEXT.fullmatch(v) and _in_int64(int(v)):
            out[key] = int(v)
        else:
            del out[key]
    for key in _FLOAT_ARGS:
        if key in out and (isinstance(out[key], bool) or not isinstance(out[key], (int, Decimal))):
            repaired = True
            del out[key]
    for key in _STR_ARGS:
        if key in out and out[key] is not None and not isinstance(out[key], str):
            repaired = True
            del out[key]
    size = out.get("size")
    if isinstance(size, str):  # a runtime copy call's bytes as text (HIP): read, no repair
        if _INT_TEXT.fullmatch(size) and _in_int64(int(size)):
            out["size"] = int(size)
        else:
            del out["size"]
    elif size is not None and not (isinstance(size, int) and not isinstance(size, bool) and _in_int64(size)):
        repaired = True
        del out["size"]
    for key in ("grid", "block"):
        v = out.get(key)
        if v is None:
            continue
        if isinstance(v, str):  # text (Triton's CPU op: "grid(100,)"): no launch grid, no repair
            del out[key]
            continue
        if not (isinstance(v, list) and len(v) == 3 and all(isinstance(x, int) and _in_int64(x) for x in v)):
            repaired = True
            del out[key]
    return out, repaired


def _int_arg(args: dict[str, Any], key: str, default: int = -1) -> int:
    v = args.get(key, default)
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _float_arg(args: dict[str, Any], key: str) -> float:
    v = args.get(key)
    return float(v) if isinstance(v, (int, Decimal)) and not isinstance(v, bool) else -1.0


def _str_arg(args: dict[str, Any], key: str) -> str | None:
    v = args.get(key)
    return v if isinstance(v, str) else None


def _correlation(args: dict[str, Any]) -> int:
    c = _int_arg(args, "correlation")
    if c >= 0:
        return c
    text = _str_arg(args, "correlation_id")
    if text is None:
        return -1
    try:
        v = int(text)
    except ValueError:
        return -1
    return v if -(2**63) <= v < 2**63 else -1


def _read_document(path: str) -> tuple[Any, int]:
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8-sig"), parse_float=Decimal), len(raw)


def load(path: str, *, rank: int | None = None, default_rank: int = 0, include_python: bool = True) -> Trace:
    """Load a well-formed Chrome trace file the simple way (see the module's rules)."""
    doc, size = _read_document(path)
    info = DocumentInfo(total=size, consumed=size, chunks=1)
    if isinstance(doc, list):
        info.form = "array"
        events = doc
    else:
        info.form = "object"
        events = doc["traceEvents"]
        info.header = {k: _plain(v) for k, v in doc.items() if k != "traceEvents"}
    st = state.State()
    cols: dict[str, list[int]] = {k: [] for k in ("start", "dur", "src", "cat", "name", "corr", "ext", "dev", "phc")}
    kern: dict[str, list[Any]] = {k: [] for k in ("event", "grid", "block", "regs", "shared", "bps", "wps", "occ")}
    copy_ev: list[int] = []
    copy_bytes: list[int] = []
    flows: dict[str, list[Any]] = {k: [] for k in ("ident", "cat", "src", "ts", "next", "seq", "phase")}
    if not include_python:
        st.python_left_out = sum(1 for ev in events if ev.get("cat") == "python_function")
    for seq, e in enumerate(ev for ev in events if include_python or ev.get("cat") != "python_function"):
        ph = e.get("ph", "")
        pid, tid = e.get("pid", 0), e.get("tid", 0)
        cat = e.get("cat", "")
        name = e.get("name", "")
        args = e.get("args") if isinstance(e.get("args"), dict) else None
        repaired = False
        for key in ("pid", "tid"):
            v = e.get(key, 0)
            if isinstance(v, bool) or not isinstance(v, (int, str)) or (isinstance(v, int) and not _in_int64(v)):
                repaired = True
                if key == "pid":
                    pid = str(v)
                else:
                    tid = str(v)
        if args is not None:
            args, fixed = _repair_args(args)
            repaired = repaired or fixed
        if repaired:
            st.repaired += 1
        if "ts" not in e and ph != "M":
            st.skipped += 1
            st.skipped_example = st.skipped_example or f"a {ph!r} event named {name!r} without ts"
            continue
        if ph in ("X", *_INSTANT, "B", "E", *_FLOW):
            src = st.src_id(pid, tid)
            cat_id = st.cat_id(cat)
        if ph in ("X", *_INSTANT, "B", "E"):
            name_id = st.name_id(name)
        if ph == "X" or ph in _INSTANT:
            event = len(cols["start"])
            cols["start"].append(_ns(e.get("ts", 0)))
            cols["src"].append(src)
            cols["cat"].append(cat_id)
            cols["name"].append(name_id)
            if ph in _INSTANT:
                cols["phc"].append(state.PH_I)
                for k in ("dur", "corr", "ext", "dev"):
                    cols[k].append(0 if k == "dur" else -1)
                if args is not None and isinstance(args.get("Total Allocated"), int):  # a profile_memory record
                    _memory_row(st.op_args, event, args)
                continue
            cols["phc"].append(state.PH_X)
            dur = _ns(e.get("dur", 0))
            if dur < 0:
                st.negative_dur += 1
                dur = 0
            cols["dur"].append(dur)
            a = args or {}
            cols["corr"].append(_correlation(a))
            cols["ext"].append(_int_arg(a, "External id"))
            cols["dev"].append(_int_arg(a, "device"))
            if isinstance(a.get("kernel_file"), str):  # torch.compile's Triton launcher op
                h, b = a.get("kernel_hash"), a.get("kernel_backend")
                st.inductor_args[name].add(
                    (a["kernel_file"], h if isinstance(h, str) else "", b if isinstance(b, str) else "")
                )
            if a.get("Input Dims") is not None or _int_arg(a, "Sequence number") != -1:  # record_shapes
                _op_row(st.op_args, event, a)
            if _int_arg(a, "size") >= 0:
                st.own_size[event] = (_int_arg(a, "size"), a.get("direction"))
                if cols["corr"][-1] >= 0:
                    st.call_size[cols["corr"][-1]] = _int_arg(a, "size")
            if a.get("grid") is not None or _int_arg(a, "registers per thread") >= 0:
                kern["event"].append(event)
                kern["grid"].append(a.get("grid") or [0, 0, 0])
                kern["block"].append(a.get("block") or [0, 0, 0])
                kern["regs"].append(_int_arg(a, "registers per thread"))
                kern["shared"].append(_int_arg(a, "shared memory"))
                kern["bps"].append(_float_arg(a, "blocks per SM"))
                kern["wps"].append(_float_arg(a, "warps per SM"))
                kern["occ"].append(_float_arg(a, "est. achieved occupancy %"))
            elif _int_arg(a, "bytes") >= 0:
                copy_ev.append(event)
                copy_bytes.append(_int_arg(a, "bytes"))
            if _str_arg(a, "Collective name") is not None:
                st.coll_rows.append(
                    (
                        event,
                        a["Collective name"],
                        _str_arg(a, "Process Group Name"),
                        _int_arg(a, "Group size", 0),
                        _int_arg(a, "In msg nelems"),
                        _int_arg(a, "Out msg nelems"),
                        _str_arg(a, "dtype"),
                    )
                )
            if _str_arg(a, "kernel_details") is not None:
                st.details.append((event, "kernel", a["kernel_details"]))
            elif _str_arg(a, "memcpy_details") is not None:
                st.details.append((event, "memcpy", a["memcpy_details"]))
            elif _str_arg(a, "Memset_details") is not None:
                st.details.append((event, "memset", a["Memset_details"]))
        elif ph in ("B", "E"):
            st.be.append((src, _ns(e.get("ts", 0)), seq, name_id, cat_id, ph))
        elif ph in _FLOW:
            if cat != "ac2g":
                flows["ident"].append(e.get("id"))
                flows["cat"].append(cat_id)
                flows["src"].append(src)
                flows["ts"].append(_ns(e.get("ts", 0)))
                flows["next"].append(ph == "f" and e.get("bp", "") != "e")
                flows["seq"].append(seq)
                flows["phase"].append(ord(ph[:1] or " "))
        elif ph in _ASYNC:
            ident = e.get("id")
            if ident is None and isinstance(e.get("id2"), (int, str)):
                ident = e["id2"]
            st.asyncs.append((ph, pid, cat, ident, _ns(e.get("ts", 0)), name, seq))
        elif ph == "M":
            _metadata(st, e, args)
        elif ph == "C":
            _counter(st, e, args)
        elif ph:
            st.other_phases[ph] += 1
    _store(st, cols, kern, copy_ev, copy_bytes, flows)
    return chrome._finish(st, info, path, os.path.getsize(path), rank, default_rank, False, None)


def _op_row(rows: Any, event: int, a: dict[str, Any]) -> None:
    """An operator's record_shapes args: its shapes as PyTorch prints them, its input types joined by ", "."""
    dims, types = a.get("Input Dims"), a.get("Input type")
    texts = [t for t in types if isinstance(t, str)] if isinstance(types, list) else []
    rows.add_row(
        event,
        str(dims) if isinstance(dims, list) else None,
        ", ".join(texts) if isinstance(types, list) and len(texts) == len(types) else None,
        _int_arg(a, "Sequence number"),
        _int_arg(a, "Fwd thread id"),
    )


def _memory_row(rows: Any, event: int, a: dict[str, Any]) -> None:
    """A ``[memory]`` instant's allocator record (bytes)."""
    rows.mem_event.append(event)
    rows.mem_bytes.append(_int_arg(a, "Bytes", 0))
    rows.mem_allocated.append(a["Total Allocated"])
    rows.mem_reserved.append(_int_arg(a, "Total Reserved"))
    rows.mem_device.append(_int_arg(a, "Device Id"))
    rows.mem_device_type.append(_int_arg(a, "Device Type"))


def _metadata(st: Any, e: dict[str, Any], args: dict[str, Any] | None) -> None:
    if args is None:
        return
    pid, tid, what = e.get("pid", 0), e.get("tid", 0), e.get("name", "")
    name, labels, sort = _str_arg(args, "name"), _str_arg(args, "labels"), args.get("sort_index")
    sort = sort if isinstance(sort, int) and not isinstance(sort, bool) else None
    if what == "process_name" and name is not None:
        st.proc_name[pid] = name
    elif what == "process_labels" and labels is not None:
        st.proc_labels[pid] = labels
    elif what == "process_sort_index" and sort is not None:
        st.proc_sort[pid] = sort
    elif what == "thread_name" and name is not None:
        st.thread_name[(pid, tid)] = name.strip()
    elif what == "thread_sort_index" and sort is not None:
        st.thread_sort[(pid, tid)] = sort


def _counter(st: Any, e: dict[str, Any], args: dict[str, Any] | None) -> None:
    if args is None:
        return
    ts = _ns(e.get("ts", 0))
    name, ident = e.get("name", ""), e.get("id")
    for key, value in args.items():
        if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
            continue
        series = f"{name}.{key}" if key not in ("value", name) else name
        if ident is not None:
            series = f"{series}[{ident}]"
        ts_list, values = st.counters[(e.get("pid", 0), series)]
        ts_list.append(ts)
        values.append(float(value))


def _store(
    st: Any,
    cols: dict[str, list[int]],
    kern: dict[str, list[Any]],
    copy_ev: list[int],
    copy_bytes: list[int],
    flows: dict[str, list[Any]],
) -> None:
    """Hand the gathered lists to the shared state as one chunk of columns."""
    if cols["start"]:
        a = {k: np.array(v, dtype=np.uint8 if k == "phc" else np.int64) for k, v in cols.items()}
        classify.append_events(
            st, a["start"], a["dur"], a["src"], a["cat"], a["name"], a["corr"], a["ext"], a["dev"], a["phc"]
        )
    if kern["event"]:
        k = st.kern
        k.event.append(np.array(kern["event"], dtype=np.int64))
        k.grid.append(np.array(kern["grid"], dtype=np.int64).reshape(-1, 3))
        k.block.append(np.array(kern["block"], dtype=np.int64).reshape(-1, 3))
        k.registers.append(np.array(kern["regs"], dtype=np.int64))
        k.shared.append(np.array(kern["shared"], dtype=np.int64))
        k.blocks_per_sm.append(np.array(kern["bps"], dtype=np.float64))
        k.warps_per_sm.append(np.array(kern["wps"], dtype=np.float64))
        k.occupancy.append(np.array(kern["occ"], dtype=np.float64))
    if copy_ev:
        st.copy_ev.append(np.array(copy_ev, dtype=np.int64))
        st.copy_bytes.append(np.array(copy_bytes, dtype=np.int64))
    if flows["ident"]:
        f = st.flows
        f.ident.extend(flows["ident"])
        f.cat.append(np.array(flows["cat"], dtype=np.int64))
        f.src.append(np.array(flows["src"], dtype=np.int64))
        f.ts.append(np.array(flows["ts"], dtype=np.int64))
        f.next_slice.append(np.array(flows["next"], dtype=bool))
        f.seq.append(np.array(flows["seq"], dtype=np.int64))
        f.phase.append(np.array(flows["phase"], dtype=np.uint8))
