"""The side tables of a Chrome trace (:func:`add_side_tables`): kernel launch geometry and resources (Kineto args,
JAX details strings), collectives (Kineto's record of the NCCL call), copies and memsets (bytes from args,
direction and memory kinds from the name or the details string)."""

from __future__ import annotations

from typing import Any

import msgspec
import numpy as np

from gputop_trace.model.kinds import CopyKind, Kind, MemKind
from gputop_trace.parsers.chrome.conventions import ARG_DIRECTION, DETAIL_KV, DIRECTION, JAX_COPY, KINETO_COPY, MEMKIND
from gputop_trace.parsers.chrome.op_args import add_op_tables
from gputop_trace.parsers.chrome.state import State
from gputop_trace.parsers.chrome.values import int_or


class _CopyRows(msgspec.Struct):
    """Copy and memset rows for the builder, in the order they are found (JAX details first, then the others)."""

    event: list[int] = msgspec.field(default_factory=list)
    nbytes: list[int] = msgspec.field(default_factory=list)
    direction: list[int] = msgspec.field(default_factory=list)
    src_kind: list[int] = msgspec.field(default_factory=list)
    dst_kind: list[int] = msgspec.field(default_factory=list)
    is_async: list[int] = msgspec.field(default_factory=list)


def _parse_details(text: str) -> dict[str, str]:
    return dict(DETAIL_KV.findall(text))


def add_side_tables(
    st: State, kind: np.ndarray[Any, Any], names: list[str], name: np.ndarray[Any, Any], corr: np.ndarray[Any, Any]
) -> None:
    """Kernel, collective and copy rows for the builder, from the args gathered while streaming (``kind``,
    ``name`` and ``corr``: every event's, by provisional index; ``names``: the interned strings)."""
    b = st.builder
    kineto_kernels = _kineto_kernels(st, kind)
    copies = _CopyRows()
    # JAX details strings (a kernel that also carries Kineto's launch args keeps those: one row per kernel)
    has_kineto_row = set(kineto_kernels["event"].tolist()) if st.details else set()
    jax_kernels, seen_copy = _details_rows(st, kind, names, name, has_kineto_row, copies)
    if len(kineto_kernels["event"]):
        b.add_kernels(**kineto_kernels)
    if jax_kernels is not None:
        b.add_kernels(**jax_kernels)
    _add_collectives(st, kind)
    _named_copy_rows(st, kind, names, name, corr, seen_copy, copies)
    add_op_tables(st.op_args, b)
    if copies.event:
        b.add_copies(
            event=np.array(copies.event, dtype=np.int64),
            bytes=np.array(copies.nbytes, dtype=np.int64),
            direction=np.array(copies.direction, dtype=np.uint8),
            src_kind=np.array(copies.src_kind, dtype=np.uint8),
            dst_kind=np.array(copies.dst_kind, dtype=np.uint8),
            is_async=np.array(copies.is_async, dtype=np.int8),
        )


def _kineto_kernels(st: State, kind: np.ndarray[Any, Any]) -> dict[str, np.ndarray[Any, Any]]:
    """The builder's kernel columns from Kineto's launch args, for the events that are kernels."""
    kr = st.kern
    k_ev = np.concatenate(kr.event) if kr.event else np.zeros(0, dtype=np.int64)
    keep = kind[k_ev] == Kind.KERNEL

    def kcol(parts: list[np.ndarray[Any, Any]], dtype: Any, width: int = 0) -> np.ndarray[Any, Any]:
        if not parts:
            return np.zeros((0, width) if width else 0, dtype=dtype)
        out: np.ndarray[Any, Any] = np.concatenate(parts)[keep].astype(dtype)
        return out

    def nan_if_negative(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        return np.where(values >= 0, values, np.nan)

    return {
        "event": k_ev[keep],
        "grid": kcol(kr.grid, np.int32, 3),
        "block": kcol(kr.block, np.int32, 3),
        "registers": kcol(kr.registers, np.int32),
        "shared_static": np.maximum(kcol(kr.shared, np.int64), 0).astype(np.int32),
        "shared_dynamic": np.zeros(int(keep.sum()), dtype=np.int32),
        "occupancy": nan_if_negative(kcol(kr.occupancy, np.float64)).astype(np.float32),
        "blocks_per_sm": nan_if_negative(kcol(kr.blocks_per_sm, np.float64)).astype(np.float32),
        "warps_per_sm": nan_if_negative(kcol(kr.warps_per_sm, np.float64)).astype(np.float32),
    }


def _details_rows(
    st: State,
    kind: np.ndarray[Any, Any],
    names: list[str],
    name: np.ndarray[Any, Any],
    has_kineto_row: set[int],
    copies: _CopyRows,
) -> tuple[dict[str, np.ndarray[Any, Any]] | None, set[int]]:
    """Rows from JAX details strings: the builder's kernel columns (None when there are none), and the copies and
    memsets (``num_bytes`` of ``Memset_details``; added to ``copies``; their events are returned, as they get no
    other copy row)."""
    kern_events: list[int] = []
    grid: list[tuple[int, int, int]] = []
    block: list[tuple[int, int, int]] = []
    regs: list[int] = []
    smem: list[int] = []
    dyn: list[int] = []
    occ: list[float] = []
    copy_ev, copy_bytes, copy_dir = copies.event, copies.nbytes, copies.direction
    copy_src, copy_dst, copy_async = copies.src_kind, copies.dst_kind, copies.is_async
    seen_copy: set[int] = set()
    for ev, what, text in st.details:
        d = _parse_details(text)
        if what == "kernel" and kind[ev] == Kind.KERNEL and ev not in has_kineto_row:
            kern_events.append(ev)
            grid.append(_triple(d.get("grid")))
            block.append(_triple(d.get("block")))
            regs.append(int_or(d.get("regs"), -1))
            smem.append(max(int_or(d.get("static_shared"), 0), 0))
            dyn.append(max(int_or(d.get("dynamic_shared"), 0), 0))
            occ.append(_float_or_nan(d.get("occ_pct")))
        elif what == "memcpy" and kind[ev] == Kind.MEMCPY:
            seen_copy.add(ev)
            m = JAX_COPY.match(names[int(name[ev])])
            copy_ev.append(ev)
            copy_bytes.append(max(int_or(d.get("size"), 0), 0))
            copy_dir.append(DIRECTION.get(m.group(1).lower(), CopyKind.UNKNOWN) if m else CopyKind.UNKNOWN)
            copy_src.append(MEMKIND.get(d.get("kind_src", "").lower(), MemKind.UNKNOWN))
            copy_dst.append(MEMKIND.get(d.get("kind_dst", "").lower(), MemKind.UNKNOWN))
            copy_async.append(int_or(d.get("async"), -1))
        elif what == "memset" and kind[ev] == Kind.MEMSET:
            seen_copy.add(ev)
            copy_ev.append(ev)
            copy_bytes.append(max(int_or(d.get("num_bytes"), 0), 0))
            copy_dir.append(CopyKind.UNKNOWN)
            copy_src.append(MemKind.UNKNOWN)
            copy_dst.append(MEMKIND.get(d.get("kind", "").lower(), MemKind.UNKNOWN))
            copy_async.append(int_or(d.get("async"), -1))
    if not kern_events:
        return None, seen_copy
    nan = np.full(len(kern_events), np.nan, dtype=np.float32)
    kernels: dict[str, np.ndarray[Any, Any]] = {
        "event": np.array(kern_events, dtype=np.int64),
        "grid": np.array(grid, dtype=np.int32).reshape(-1, 3),
        "block": np.array(block, dtype=np.int32).reshape(-1, 3),
        "registers": np.array(regs, dtype=np.int32),
        "shared_static": np.array(smem, dtype=np.int32),
        "shared_dynamic": np.array(dyn, dtype=np.int32),
        "occupancy": np.array(occ, dtype=np.float32),
        "blocks_per_sm": nan,
        "warps_per_sm": nan,
    }
    return kernels, seen_copy


def _add_collectives(st: State, kind: np.ndarray[Any, Any]) -> None:
    """Collective rows of kernels (Kineto writes the framework's view of the NCCL call on the kernel)."""
    colls = [r for r in st.coll_rows if kind[r[0]] == Kind.KERNEL]
    if colls:
        b = st.builder
        intern = b.names.intern
        b.add_collectives(
            event=np.array([r[0] for r in colls], dtype=np.int64),
            op=np.array([intern(r[1]) for r in colls], dtype=np.int32),
            group=np.array([intern(r[2]) if r[2] is not None else -1 for r in colls], dtype=np.int32),
            group_size=np.array([max(r[3], 0) for r in colls], dtype=np.int32),
            bytes_in=np.array([_coll_bytes(r[4], r[6]) for r in colls], dtype=np.int64),
            bytes_out=np.array([_coll_bytes(r[5], r[6]) for r in colls], dtype=np.int64),
            dtype=np.array([intern(r[6]) if r[6] is not None else -1 for r in colls], dtype=np.int32),
        )


def _named_copy_rows(
    st: State,
    kind: np.ndarray[Any, Any],
    names: list[str],
    name: np.ndarray[Any, Any],
    corr: np.ndarray[Any, Any],
    seen_copy: set[int],
    copies: _CopyRows,
) -> None:
    """Rows of the copies and memsets without a details row: bytes from Kineto args (or, when the copy has none,
    from its runtime call's: HIP's ``size``), direction and memory kinds from the name."""
    c_ev = np.concatenate(st.copy_ev) if st.copy_ev else np.zeros(0, dtype=np.int64)
    c_bytes = np.concatenate(st.copy_bytes) if st.copy_bytes else np.zeros(0, dtype=np.int64)
    copy_like = np.flatnonzero((kind == Kind.MEMCPY) | (kind == Kind.MEMSET))
    if seen_copy:
        copy_like = copy_like[~np.isin(copy_like, np.array(sorted(seen_copy), dtype=np.int64))]
    nbytes = np.zeros(len(copy_like), dtype=np.int64)
    if len(c_ev) and len(copy_like):
        at = np.minimum(np.searchsorted(c_ev, copy_like), len(c_ev) - 1)  # c_ev ascends: file order
        hit = c_ev[at] == copy_like
        nbytes[hit] = np.maximum(c_bytes[at[hit]], 0)
    else:
        hit = np.zeros(len(copy_like), dtype=bool)
    own_size, call_size = st.own_size, st.call_size
    if own_size and len(copy_like):  # the copy's own size (MTIA), else its runtime call's (HIP)
        for i in np.flatnonzero(~hit).tolist():
            ev = int(copy_like[i])
            own = own_size.get(ev)
            nbytes[i] = own[0] if own is not None else call_size.get(int(corr[ev]), 0)
    # direction and memory kinds parsed once per distinct (name, memset) pair
    is_memset = kind[copy_like] == Kind.MEMSET
    pair = name[copy_like].astype(np.int64) * 2 + is_memset
    distinct, which = np.unique(pair, return_inverse=True)
    parsed = np.array(
        [_copy_from_label(names[p >> 1], bool(p & 1)) for p in distinct.tolist()], dtype=np.int64
    ).reshape(-1, 3)[which]
    direction = parsed[:, 0].tolist()
    if own_size:  # a direction in words (MTIA's dma_request) over the name's
        for i, ev in enumerate(copy_like.tolist()):
            words = own_size[ev][1] if ev in own_size else None
            if isinstance(words, str):
                direction[i] = ARG_DIRECTION.get(words, direction[i])
    copies.event.extend(copy_like.tolist())
    copies.nbytes.extend(nbytes.tolist())
    copies.direction.extend(direction)
    copies.src_kind.extend(parsed[:, 1].tolist())
    copies.dst_kind.extend(parsed[:, 2].tolist())
    copies.is_async.extend([-1] * len(copy_like))


def _copy_from_label(label: str, memset: bool) -> tuple[int, int, int]:
    """(direction, source memory kind, destination memory kind) of a copy or memset, from its name."""
    if memset:
        inner = label[label.find("(") + 1 : label.rfind(")")].strip().lower() if "(" in label else ""
        return CopyKind.UNKNOWN, MemKind.UNKNOWN, MEMKIND.get(inner, MemKind.UNKNOWN)
    m = KINETO_COPY.search(label)
    if m:
        return (
            DIRECTION.get(m.group(1).lower(), CopyKind.UNKNOWN),
            MEMKIND.get((m.group(2) or "").lower(), MemKind.UNKNOWN),
            MEMKIND.get((m.group(3) or "").lower(), MemKind.UNKNOWN),
        )
    jm = JAX_COPY.match(label)
    return (
        DIRECTION.get(jm.group(1).lower(), CopyKind.UNKNOWN) if jm else CopyKind.UNKNOWN,
        MemKind.UNKNOWN,
        MemKind.UNKNOWN,
    )


_DTYPE_BYTES = {
    "float": 4, "float32": 4, "half": 2, "float16": 2, "bfloat16": 2, "double": 8, "float64": 8,
    "int": 4, "int32": 4, "long": 8, "int64": 8, "short": 2, "int16": 2, "char": 1, "byte": 1, "int8": 1,
    "uint8": 1, "bool": 1, "float8_e4m3fn": 1, "float8_e5m2": 1,
}  # fmt: skip


def _coll_bytes(nelems: int, dtype: str | None) -> int:
    """Message size in bytes from an element count and a dtype name (``-1`` when either is unknown)."""
    size = _DTYPE_BYTES.get((dtype or "").lower())
    return nelems * size if nelems >= 0 and size else -1


def _triple(v: str | None) -> tuple[int, int, int]:
    if not v:
        return (0, 0, 0)
    parts = [int_or(p, 0) for p in v.split(",")][:3]
    while len(parts) < 3:
        parts.append(1)
    return (parts[0], parts[1], parts[2])


def _float_or_nan(v: str | None) -> float:
    try:
        return float(v) if v is not None else float("nan")
    except ValueError:
        return float("nan")
