"""How the lanes of a trace are arranged on screen: grouped by rank, then GPU device (utilization strip,
annotation bands, one lane per stream) and CPU process (one lane per thread, nested rows), with collapsible
groups and foldable multi-row lanes. Pure Python over the trace's lane table; no Textual.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from enum import IntEnum

from gputop_trace.analysis.operators.tree import DEVICE_MEMORY_TYPES
from gputop_trace.model.arrays import isin
from gputop_trace.model.devices import PROFILER_LANE
from gputop_trace.model.kinds import LaneKind
from gputop_trace.model.trace import Trace
from gputop_trace.safe_text import clean

#: Lanes with more rows than this start folded to their first row.
FOLD_ROWS_OVER = 12


class RowKind(IntEnum):
    """What a line of the timeline shows."""

    GROUP = 0  # a group header (rank, GPU, CPU process, other lanes)
    UTIL = 1  # a GPU's utilization strip (busy union of all its streams), gaps marked
    EVENTS = 2  # one row of a lane's events
    NOTE = 3  # a sentence about what the trace lacks (no events, no GPU activity)
    MEMORY = 4  # a GPU's allocated memory over time (profile_memory), under its busy strip


@dataclass(frozen=True)
class DisplayRow:
    """One line of the timeline below the ruler.

    ``key`` identifies what the line belongs to: a group key for GROUP lines, ``util:R:D`` for a utilization
    strip, ``lane:N`` for the rows of lane N. ``depth`` is the row inside the lane; ``rows_in_lane`` how many
    rows the lane has; ``folded`` whether the group is collapsed or the lane folded to its first row.
    """

    kind: RowKind
    key: str
    label: str
    level: int
    lane: int = -1
    depth: int = 0
    rank: int = 0
    device: int = -1
    rows_in_lane: int = 1
    folded: bool = False
    lane_kind: int = -1
    series: str = ""  # MEMORY lines: "allocated" or "reserved"


@dataclass
class _Node:
    kind: RowKind
    key: str
    label: str
    lane: int = -1
    rank: int = 0
    device: int = -1
    rows: int = 1
    lane_kind: int = -1
    children: list[_Node] = field(default_factory=list)
    collapsed_by_default: bool = False
    series: str = ""


def _memory_devices(trace: Trace, *, reserved: bool = False) -> set[tuple[int, int]]:
    """(rank, device) of the GPUs with allocator records (``profile_memory``; ``reserved``: records that carry
    the reserved total)."""
    mem = trace.memory
    if not len(mem):
        return set()
    gpu = isin(mem.device_type, DEVICE_MEMORY_TYPES) & (mem.device >= 0)
    if reserved:
        gpu &= mem.reserved >= 0
    ranks = trace.lane_rank[trace.lane[mem.event[gpu]]]
    return set(zip(ranks.tolist(), mem.device[gpu].tolist(), strict=True))


def lane_key(lane: int) -> str:
    """The fold key of a lane."""
    return f"lane:{lane}"


def util_key(rank: int, device: int) -> str:
    """The key of a GPU's utilization strip."""
    return f"util:{rank}:{device}"


def _gpu_label(trace: Trace, rank: int, device: int) -> str:
    info = trace.gpu_info(rank, device)
    name = clean(info.name).replace("NVIDIA ", "") if info and info.name else ""
    if name.startswith("GPU") or "not recorded" in name:
        name = ""
    return trace.device_label(rank, device) + (f" · {name}" if name else "")


def _process_label(name: str, pid: int) -> str:
    pname = clean(name).replace(" (CPU)", "").strip()
    if pid < 0:
        return pname or "process"
    return f"pid {pid} {pname}".rstrip()


def _thread_label(name: str, process: str) -> str:
    """A thread's label without the process name the group header already shows."""
    label = clean(name)
    pname = clean(process).replace(" (CPU)", "").strip()
    suffix = f" ({pname})"
    if pname and label.endswith(suffix) and len(label) > len(suffix):
        label = label[: -len(suffix)]
    return label


class LaneLayout:
    """The group tree of a trace's lanes and the flat list of lines it shows for a set of collapsed keys."""

    def __init__(self, trace: Trace, *, fold_rows_over: int = FOLD_ROWS_OVER) -> None:
        self.trace = trace
        self.fold_rows_over = fold_rows_over
        self.roots: list[_Node] = []
        self._chain: dict[str, list[str]] = {}  # node key -> keys of the groups above it
        self._build()

    # tree --------------------------------------------------------------------------------------------------
    def _build(self) -> None:
        t = self.trace
        rows = t.lane_rows
        by_rank: dict[int, list[int]] = defaultdict(list)
        for lane in t.lane_order.tolist():
            if rows[lane] > 0:
                by_rank[t.lanes[lane].rank].append(lane)
        multi_rank = len(by_rank) > 1
        busy_devices = {(r, d) for r, d in zip(t.lane_rank.tolist(), t.lane_device.tolist(), strict=True) if d >= 0}
        memory_devices = _memory_devices(t)
        reserved_devices = _memory_devices(t, reserved=True)
        for rank in sorted(by_rank):
            gpu: dict[int, list[int]] = defaultdict(list)
            cpu: dict[int, list[int]] = defaultdict(list)
            cpu_names: dict[int, str] = {}
            other: list[int] = []
            for lane in by_rank[rank]:
                ln = t.lanes[lane]
                if ln.kind in (LaneKind.GPU_STREAM, LaneKind.GPU_RANGES, LaneKind.UVM) and ln.device >= 0:
                    gpu[ln.device].append(lane)
                elif ln.kind in (LaneKind.CPU_THREAD, LaneKind.ASYNC) and ln.pid >= 0:
                    cpu[ln.pid].append(lane)
                    cpu_names.setdefault(ln.pid, ln.process_name)
                else:
                    other.append(lane)
            groups: list[_Node] = []
            prefix = f"r{rank}/"
            for dev in sorted(gpu):
                g = _Node(RowKind.GROUP, f"{prefix}gpu{dev}", _gpu_label(t, rank, dev), rank=rank, device=dev)
                if (rank, dev) in busy_devices:
                    g.children.append(
                        _Node(
                            RowKind.UTIL,
                            util_key(rank, dev),
                            f"{t.device_words(rank, dev).noun} busy",
                            rank=rank,
                            device=dev,
                        )
                    )
                if (rank, dev) in memory_devices:
                    g.children.append(
                        _Node(RowKind.MEMORY, f"mem:{rank}:{dev}", "mem", rank=rank, device=dev, series="allocated")
                    )
                if (rank, dev) in reserved_devices:
                    g.children.append(
                        _Node(
                            RowKind.MEMORY, f"memres:{rank}:{dev}", "reserved", rank=rank, device=dev, series="reserved"
                        )
                    )
                order = {LaneKind.GPU_RANGES: 0, LaneKind.GPU_STREAM: 1, LaneKind.UVM: 2}
                for lane in sorted(gpu[dev], key=lambda x: (order.get(t.lanes[x].kind, 3), t.lanes[x].stream, x)):
                    g.children.append(self._lane_node(lane))
                groups.append(g)
            for pid in sorted(cpu):
                g = _Node(RowKind.GROUP, f"{prefix}pid{pid}", _process_label(cpu_names.get(pid, ""), pid), rank=rank)
                for lane in cpu[pid]:
                    g.children.append(self._lane_node(lane))
                groups.append(g)
            if other:
                g = _Node(RowKind.GROUP, f"{prefix}other", "other lanes", rank=rank, collapsed_by_default=True)
                for lane in other:
                    g.children.append(self._lane_node(lane))
                groups.append(g)
            if multi_rank:
                self.roots.append(_Node(RowKind.GROUP, f"r{rank}", f"rank {rank}", rank=rank, children=groups))
            else:
                self.roots.extend(groups)
        for root in self.roots:
            self._index(root, [])

    def _lane_node(self, lane: int) -> _Node:
        ln = self.trace.lanes[lane]
        if ln.kind == LaneKind.GPU_RANGES:  # annotation bands, or a device's CUPTI range-profiler ranges
            label = PROFILER_LANE if ln.name == PROFILER_LANE else "annotations"
        elif ln.kind in (LaneKind.CPU_THREAD, LaneKind.ASYNC):
            label = _thread_label(ln.name, ln.process_name)
        else:
            label = clean(ln.name)
        n = int(self.trace.lane_rows[lane])
        return _Node(
            RowKind.EVENTS,
            lane_key(lane),
            label,
            lane=lane,
            rank=ln.rank,
            device=ln.device,
            rows=n,
            lane_kind=int(ln.kind),
            collapsed_by_default=n > self.fold_rows_over,
        )

    def _index(self, node: _Node, chain: list[str]) -> None:
        self._chain[node.key] = list(chain)
        for c in node.children:
            self._index(c, [*chain, node.key])

    def _walk(self) -> list[_Node]:
        out: list[_Node] = []

        def rec(n: _Node) -> None:
            out.append(n)
            for c in n.children:
                rec(c)

        for r in self.roots:
            rec(r)
        return out

    # queries -----------------------------------------------------------------------------------------------
    def default_collapsed(self) -> set[str]:
        """Keys collapsed when a trace opens: the profiler's own lanes and lanes with very many rows."""
        return {n.key for n in self._walk() if n.collapsed_by_default}

    def group_keys(self) -> list[str]:
        """Keys of every group, top to bottom."""
        return [n.key for n in self._walk() if n.kind == RowKind.GROUP]

    def foldable_keys(self) -> list[str]:
        """Keys of every group and every lane with more than one row."""
        return [n.key for n in self._walk() if n.kind == RowKind.GROUP or (n.kind == RowKind.EVENTS and n.rows > 1)]

    def label_of(self, key: str) -> str:
        """The label of a group or lane."""
        for n in self._walk():
            if n.key == key:
                return n.label
        return key

    def rank_keys(self, rank: int) -> list[str]:
        """The keys of a rank's group and of its GPU and process groups (not its profiler's own lanes)."""
        prefix = f"r{rank}/"
        mine = [n.key for n in self._walk() if n.kind == RowKind.GROUP]
        return [k for k in mine if (k == f"r{rank}" or k.startswith(prefix)) and k != f"{prefix}other"]

    def keys_hiding(self, lane: int, depth: int = 0) -> list[str]:
        """The keys that must not be collapsed for row ``depth`` of ``lane`` to be shown."""
        key = lane_key(lane)
        out = list(self._chain.get(key, []))
        if depth > 0:
            out.append(key)
        return out

    def util_keys_hiding(self, rank: int, device: int) -> list[str]:
        """The keys that must not be collapsed for a GPU's utilization strip to be shown."""
        return list(self._chain.get(util_key(rank, device), []))

    def notes(self) -> list[str]:
        """Sentences about what is missing, shown above the lanes."""
        t = self.trace
        if not len(t):
            return ["This trace holds no events (see the warnings in panel 6, Findings)."]
        if not any(n.kind == RowKind.GROUP and "/gpu" in n.key for n in self._walk()):
            return ["No GPU activity was recorded in this profile: only CPU threads are shown."]
        return []

    def rows(self, collapsed: set[str] | frozenset[str]) -> list[DisplayRow]:
        """The lines shown, top to bottom, when the groups and lanes in ``collapsed`` are closed."""
        out: list[DisplayRow] = [DisplayRow(RowKind.NOTE, f"note:{i}", s, 0) for i, s in enumerate(self.notes())]

        def rec(n: _Node, level: int) -> None:
            if n.kind == RowKind.GROUP:
                folded = n.key in collapsed
                out.append(
                    DisplayRow(RowKind.GROUP, n.key, n.label, level, rank=n.rank, device=n.device, folded=folded)
                )
                if not folded:
                    for c in n.children:
                        rec(c, level + 1)
            elif n.kind in (RowKind.UTIL, RowKind.MEMORY):
                out.append(DisplayRow(n.kind, n.key, n.label, level, rank=n.rank, device=n.device, series=n.series))
            else:
                folded = n.rows > 1 and n.key in collapsed
                shown = 1 if folded else n.rows
                for d in range(shown):
                    out.append(
                        DisplayRow(
                            RowKind.EVENTS,
                            n.key,
                            n.label if d == 0 else "",
                            level,
                            lane=n.lane,
                            depth=d,
                            rank=n.rank,
                            device=n.device,
                            rows_in_lane=n.rows,
                            folded=folded,
                            lane_kind=n.lane_kind,
                        )
                    )

        for r in self.roots:
            rec(r, 0)
        return out
