"""The kernel table (detectors.md §1): one row per kernel name (or name + geometry, or launching operator /
range) per device, with count, total, mean, median, min, max, sample standard deviation and % of kernel time.

On an nsys export the figures equal ``nsys stats -r cuda_gpu_kern_sum`` when grouped the way that report
groups (by full demangled name, devices merged: ``merge_devices=True``); on a Kineto trace a name's total is
the sum of its events' ``dur``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

import numpy as np
import numpy.typing as npt

from gputop_trace.analysis.compiled.inductor import InductorInfo, InductorLookup
from gputop_trace.analysis.compiled.regions import compiled_program, kernel_origins
from gputop_trace.analysis.enclosing import innermost_enclosing
from gputop_trace.model.arrays import I64, distinct
from gputop_trace.model.kernel_names import qualified_name
from gputop_trace.model.kinds import Kind
from gputop_trace.model.trace import Trace


class GroupBy(str, Enum):
    """How kernel launches are grouped into rows."""

    NAME = "name"
    GEOMETRY = "geometry"  # name + grid + block
    LAUNCHER = "launcher"  # the operator or annotation range around the launch call (a CUDA graph: its replay)
    REGION = "region"  # the torch.compile region (``Torch-Compiled Region: F/C``) around the launch call
    NODE = "node"  # the post-grad graph nodes fused into the kernel (needs the Inductor debug output)
    SOURCE = "source"  # the user's source lines of those nodes (needs the Inductor debug output)


@dataclass(frozen=True)
class KernelRow:
    """One row of the kernel table. Times in ns; ``pct`` of all kernel time in the table's scope (0–100).

    ``device`` is ``-1`` when devices are merged. ``grid``/``block``/``registers``/``shared_bytes`` are those
    of the row's most frequent launch configuration; ``occupancy_pct`` the mean of Kineto's estimate (NaN
    when unknown); ``launch_ns`` the summed duration of the launching API calls; ``inductor`` what the trace
    knows about a torch.compile kernel (rows of one kernel name only).
    """

    name: str
    rank: int
    device: int
    count: int
    total_ns: int
    mean_ns: float
    median_ns: float
    min_ns: int
    max_ns: int
    std_ns: float
    pct: float
    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    occupancy_pct: float = float("nan")
    launch_ns: int = 0
    group: str = ""
    raw_name: str = ""
    inductor: InductorInfo | None = None
    events: I64 = field(default_factory=lambda: np.zeros(0, dtype=np.int64), repr=False, compare=False)


def short_name(name: str, width: int | None = None) -> str:
    """A readable short form of a demangled kernel name: no return type, namespaces' anonymous parts,
    template arguments or parameters, cut to ``width`` characters with an ellipsis.

    ``void at::native::(anonymous namespace)::multi_tensor_apply_kernel<...>(...)`` →
    ``at::native::multi_tensor_apply_kernel``. Names that are not C++ signatures come back unchanged.
    """
    core = qualified_name(name)
    if width is not None and len(core) > width:
        core = core[: max(1, width - 1)] + "…"
    return core


def _launcher_names(trace: Trace, kernels: I64) -> list[str]:
    """The innermost operator or range around each kernel's launch call ("" when unknown). In a compiled program
    a kernel replayed by a CUDA graph gets its compiled region and replay (``Torch-Compiled Region: 1/0 › CUDA
    graph replay``), and torch.compile's wrappers (``## Call CompiledFxGraph … ##``) give way to the compiled
    region or the operator inside them."""
    api = trace.launch_of[kernels]
    has = api >= 0
    lanes = np.where(has, trace.lane[np.maximum(api, 0)], -1)
    times = np.where(has, trace.start_ns[np.maximum(api, 0)], 0)
    enc = innermost_enclosing(trace, lanes, times, (Kind.CPU_OP, Kind.RANGE))
    names = [trace.names[int(trace.name[e])] if e >= 0 else "(no launching operator)" for e in enc.tolist()]
    prog = compiled_program(trace)
    if not (prog.uses_compile or prog.uses_cuda_graphs):
        return names
    o = kernel_origins(trace, kernels, prog)
    for i in range(len(kernels)):
        region = trace.event_name(int(o.region[i])) if o.region[i] >= 0 else ""
        if o.replay[i] >= 0:
            names[i] = f"{region} › CUDA graph replay" if region else "CUDA graph replay"
        elif o.operator[i] >= 0:
            names[i] = trace.event_name(int(o.operator[i]))
        elif region:
            names[i] = region
    return names


def _region_names(trace: Trace, kernels: I64) -> list[str]:
    """The ``Torch-Compiled Region`` around each kernel's launch call, or ``(outside compiled regions)``."""
    o = kernel_origins(trace, kernels)
    return [trace.event_name(int(r)) if r >= 0 else "(outside compiled regions)" for r in o.region.tolist()]


def _config_hash(grid: npt.NDArray[np.int32], block: npt.NDArray[np.int32]) -> npt.NDArray[np.uint64]:
    """A 64-bit hash per launch configuration (rows of grid and block dims), for counting configurations."""
    h = np.full(grid.shape[0], 0xCBF29CE484222325, dtype=np.uint64)
    prime = np.uint64(0x100000001B3)
    with np.errstate(over="ignore"):
        for col in (*grid.T, *block.T):
            h = (h ^ col.astype(np.uint32).astype(np.uint64)) * prime
    return h


def _pair_code(rank: I64, device: I64) -> I64:
    """A dense code per kernel for its (rank, device) pair, ascending in (rank, device). Ids come from the
    trace and may be anything: a lookup table is used only while their range is small (no allocation sized by a
    hostile id, no overflow), else a sort."""
    r_lo, r_hi, d_lo, d_hi = (int(x) for x in (rank.min(), rank.max(), device.min(), device.max()))
    d_span = d_hi - d_lo + 1
    if (r_hi - r_lo + 1) * d_span <= 1 << 20:
        rd = (rank - r_lo) * d_span + (device - d_lo)
        code = np.zeros(int(rd.max()) + 1, dtype=np.int64)
        present = np.flatnonzero(np.bincount(rd))
        code[present] = np.arange(len(present))
        out: I64 = code[rd]
        return out
    _, inverse = np.unique(np.column_stack([rank, device]), axis=0, return_inverse=True)
    return np.asarray(inverse, dtype=np.int64).reshape(-1)


def _most_frequent(values: npt.NDArray[np.integer]) -> int:
    """The most frequent value (the smallest one on ties); a count table only for small values, else a sort."""
    if int(values.max()) < 1 << 16:
        return int(np.bincount(values).argmax())
    uniq, counts = np.unique(values, return_counts=True)
    return int(uniq[int(counts.argmax())])


def kernel_table(
    trace: Trace,
    *,
    group_by: GroupBy | str = GroupBy.NAME,
    device: int | None = None,
    rank: int | None = None,
    merge_devices: bool = False,
    top: int | None = None,
) -> list[KernelRow]:
    """Rows sorted by total time (largest first). ``device``/``rank`` filter; ``merge_devices`` groups the
    same name across devices and ranks (how ``nsys stats`` groups). ``pct`` is relative to the total kernel
    time of the rows the filters keep. ``top``: only the ``top`` first rows are built (exactly the first ``top``
    rows of the whole table: the groups' totals are summed for all, the figures of a row computed for those
    only; the summary's top kernels need 10 rows, not one per kernel name)."""
    group_by = GroupBy(group_by)
    k = trace.of_kind(Kind.KERNEL)
    if device is not None:
        k = k[trace.event_device[k] == device]
    if rank is not None:
        k = k[trace.event_rank[k] == rank]
    if not len(k):
        return []
    dur = trace.dur_ns[k]
    dev = np.full(len(k), -1, dtype=np.int64) if merge_devices else trace.event_device[k].astype(np.int64)
    rk = np.full(len(k), -1, dtype=np.int64) if merge_devices else trace.event_rank[k].astype(np.int64)
    krow = np.searchsorted(trace.kernels.event, k)
    has_side = (
        (krow < len(trace.kernels)) & (trace.kernels.event[np.minimum(krow, len(trace.kernels) - 1)] == k)
        if len(trace.kernels)
        else np.zeros(len(k), dtype=bool)
    )
    label, label_text = _group_labels(trace, k, group_by, krow, has_side)
    lookup = InductorLookup(trace)
    order, bounds, uniq = _groups(rk, dev, label)
    grand_total = int(dur.sum())
    api = trace.launch_of[k]
    launch_dur = np.where(api >= 0, trace.dur_ns[np.maximum(api, 0)], 0)
    rows_out: list[KernelRow] = []
    for gi in _top_groups(trace, dur, order, bounds, uniq, label_text if group_by != GroupBy.NAME else None, top):
        members = np.sort(order[bounds[gi] : bounds[gi + 1]])  # back in trace order
        d = dur[members]
        cnt = int(d.size)
        tot = int(d.sum())
        ev = k[members]
        r_i, d_i, lab = (int(x) for x in uniq[gi])
        side = has_side[members]
        config = _LaunchConfig() if not side.any() else _launch_config(trace, krow[members][side])
        rows_out.append(
            KernelRow(
                name=trace.names[lab] if group_by == GroupBy.NAME else label_text[lab],
                rank=r_i,
                device=d_i,
                count=cnt,
                total_ns=tot,
                mean_ns=tot / cnt,
                median_ns=float(np.median(d)),
                min_ns=int(d.min()),
                max_ns=int(d.max()),
                std_ns=float(np.std(d, ddof=1)) if cnt > 1 else 0.0,
                pct=100.0 * tot / grand_total if grand_total else 0.0,
                grid=config.grid,
                block=config.block,
                registers=config.registers,
                shared_bytes=config.shared_bytes,
                occupancy_pct=config.occupancy_pct,
                launch_ns=int(launch_dur[members].sum()),
                group=group_by.value,
                raw_name=config.raw_name or (trace.names[int(trace.name[ev[0]])] if group_by == GroupBy.NAME else ""),
                inductor=_one_name_info(trace, ev, lookup),
                events=ev,
            )
        )
    rows_out.sort(key=lambda r: (-r.total_ns, r.name, r.rank, r.device))
    return rows_out


def _top_groups(
    trace: Trace, dur: I64, order: I64, bounds: I64, uniq: I64, label_text: list[str] | None, top: int | None
) -> list[int]:
    """The groups (ascending) whose rows come first in the table's order (total time descending, then name, rank,
    device), ``top`` of them; every group when ``top`` is None. ``label_text``: the label texts (None: labels are
    name ids)."""
    if top is None or top >= len(uniq):
        return list(range(len(uniq)))
    totals = np.add.reduceat(dur[order].astype(np.int64), bounds[:-1]).tolist()
    labels = uniq[:, 2].tolist()
    names = [trace.names[lab] for lab in labels] if label_text is None else [label_text[lab] for lab in labels]
    ranks, devices = uniq[:, 0].tolist(), uniq[:, 1].tolist()
    ranked = sorted(range(len(uniq)), key=lambda g: (-totals[g], names[g], ranks[g], devices[g]))
    return sorted(ranked[: max(top, 0)])


def _one_name_info(trace: Trace, events: I64, lookup: InductorLookup) -> InductorInfo | None:
    """The torch.compile facts of a row whose kernels all share one name (None otherwise)."""
    first = int(trace.name[events[0]])
    if (trace.name[events] != first).any():
        return None
    return lookup.info(trace.names[first])


def _text_labels(labels: list[str]) -> tuple[I64, list[str]]:
    """Label ids (first-seen order) for a list of label texts, and the texts by id."""
    lab_ids: dict[str, int] = {}
    label = np.array([lab_ids.setdefault(s, len(lab_ids)) for s in labels], dtype=np.int64)
    return label, list(lab_ids)


def _group_labels(
    trace: Trace, k: I64, group_by: GroupBy, krow: I64, has_side: npt.NDArray[np.bool_]
) -> tuple[I64, list[str]]:
    """The group key of each kernel ``k`` (a label id) and, except when grouping by name (the label is then the
    interned name id), the text of each label id. ``krow``/``has_side``: each kernel's kernel-table row."""
    if group_by == GroupBy.LAUNCHER:
        return _text_labels(_launcher_names(trace, k))
    if group_by == GroupBy.REGION:
        return _text_labels(_region_names(trace, k))
    if group_by in (GroupBy.NODE, GroupBy.SOURCE):
        lookup = InductorLookup(trace)
        by_name = lookup.node_label if group_by == GroupBy.NODE else lookup.source_label
        ids = trace.name[k]
        text = {int(i): by_name(trace.names[int(i)]) for i in distinct(ids).tolist()}
        return _text_labels([text[int(i)] for i in ids.tolist()])
    if group_by == GroupBy.GEOMETRY:
        geo = np.zeros((len(k), 6), dtype=np.int64)
        if has_side.any():
            rows = krow[has_side]
            geo[has_side, :3] = trace.kernels.grid[rows]
            geo[has_side, 3:] = trace.kernels.block[rows]
        stacked = np.column_stack([trace.name[k].astype(np.int64), geo])
        _, label = np.unique(stacked, axis=0, return_inverse=True)
        label = np.asarray(label).reshape(-1).astype(np.int64)
        label_text = []
        first: dict[int, int] = {}
        for i, lab in enumerate(label.tolist()):
            first.setdefault(lab, i)
        for lab in range(len(first)):
            i = first[lab]
            geom = [int(x) for x in geo[i]]
            label_text.append(f"{trace.names[int(trace.name[k[i]])]} grid{tuple(geom[:3])} block{tuple(geom[3:])}")
        return label, label_text
    return trace.name[k].astype(np.int64), []


def _groups(rk: I64, dev: I64, label: I64) -> tuple[I64, I64, I64]:
    """Kernels grouped by (rank, device, label): the sort ``order`` of the kernels, the group ``bounds`` in it,
    and each group's (rank, device, label) as the rows of ``uniq``, ascending."""
    # one int64 key per kernel: (rank, device) through a small dense code, then the label; one sort groups them
    n_labels = int(label.max()) + 1
    key = _pair_code(rk, dev) * n_labels + label
    order = np.argsort(key)
    key_sorted = key[order]
    cut = np.flatnonzero(key_sorted[1:] != key_sorted[:-1]) + 1
    bounds = np.concatenate(([0], cut, [len(key)]))
    first_member = order[bounds[:-1]]
    uniq = np.column_stack([rk[first_member], dev[first_member], label[first_member]])
    return order, bounds, uniq


@dataclass(frozen=True)
class _LaunchConfig:
    """The figures of a group's kernel-table rows (:class:`KernelRow` fields of the same names)."""

    grid: tuple[int, int, int] | None = None
    block: tuple[int, int, int] | None = None
    registers: int | None = None
    shared_bytes: int | None = None
    occupancy_pct: float = float("nan")
    raw_name: str = ""


def _launch_config(trace: Trace, rows: I64) -> _LaunchConfig:
    """The most frequent launch configuration, registers and shared memory of kernel-table ``rows``, their mean
    occupancy estimate and the first row's raw name."""
    # most frequent (grid, block): count a 64-bit hash of the six numbers, read the winner back exactly
    _, first_row, counts = np.unique(
        _config_hash(trace.kernels.grid[rows], trace.kernels.block[rows]),
        return_index=True,
        return_counts=True,
    )
    tied = rows[first_row[counts == counts.max()]]  # ties: the smallest (grid, block) wins
    top_row = int(min(tied.tolist(), key=lambda r: (*trace.kernels.grid[r].tolist(), *trace.kernels.block[r].tolist())))
    g3, b3 = trace.kernels.grid[top_row], trace.kernels.block[top_row]
    sh = trace.kernels.shared_static[rows].astype(np.int64) + trace.kernels.shared_dynamic[rows]
    occv = trace.kernels.occupancy[rows]
    rn = trace.kernels.raw_name[rows[0]]
    return _LaunchConfig(
        grid=(int(g3[0]), int(g3[1]), int(g3[2])),
        block=(int(b3[0]), int(b3[1]), int(b3[2])),
        registers=_most_frequent(np.maximum(trace.kernels.registers[rows], 0)),
        shared_bytes=_most_frequent(np.maximum(sh, 0)),
        occupancy_pct=float(np.nanmean(occv)) if np.isfinite(occv).any() else float("nan"),
        raw_name=trace.names[int(rn)] if rn >= 0 else "",
    )
