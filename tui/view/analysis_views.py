"""The analyses' results turned into what the panels and the timeline show: gap marks for the GPU busy strips,
and rows for the Gaps, Transfers, Ranges and Findings panels. Built in the analyses worker (some walk every gap
or copy once); no Textual. Times are int64 ns from the trace start."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from gputop_trace.analysis.findings.assemble import Finding
from gputop_trace.analysis.findings.compiled import cause_fix
from gputop_trace.analysis.gaps.attribution import BREAKDOWN_KEYS
from gputop_trace.analysis.gaps.causes import CAUSE_LABELS, CAUSE_SHORT, CAUSES
from gputop_trace.analysis.gaps.detect import DeviceGaps, Gap
from gputop_trace.analysis.transfers import FLAG_TITLES, FLAGS, TransferReport, direction_label, host_memory_label
from gputop_trace.safe_text import clean
from gputop_trace.tui.view.timeline_data import GapMarks, TimelineData
from gputop_trace.tui.view.timeline_math import RowData
from gputop_trace.units import format_bytes, format_ns, plural

#: Panels list at most this many rows (the longest gaps, the most exposed copies); the note says so.
MAX_ROWS = 2000


def cause_short(cause: str) -> str:
    """A cause id as a few words."""
    return CAUSE_SHORT.get(cause, CAUSE_LABELS.get(cause, cause))


@dataclass(frozen=True)
class FindingItem:
    """One row of the Findings panel: a finding (``priority`` ≥ 1, its place in the list) or a loader warning
    (``priority`` 0)."""

    priority: int
    title: str
    detail: str
    time_ns: int = 0
    share: float = 0.0
    event: int = -1
    interval: tuple[int, int] | None = None
    gpu: tuple[int, int] | None = None


# ---- gaps ---------------------------------------------------------------------------------------------------------
def gap_marks(devices: list[DeviceGaps]) -> dict[tuple[int, int], GapMarks]:
    """The reported gaps of every GPU as marks for its busy strip, labelled with the cause first (what a narrow
    label keeps): ``data loading 5.01ms``."""
    by_gpu: dict[tuple[int, int], list[DeviceGaps]] = {}
    for dg in devices:
        by_gpu.setdefault((dg.rank, dg.device), []).append(dg)
    out: dict[tuple[int, int], GapMarks] = {}
    for key, parts in by_gpu.items():
        starts = np.concatenate([p.columns.start_ns for p in parts])
        durs = np.concatenate([p.columns.dur_ns for p in parts])
        causes = np.concatenate([p.columns.cause for p in parts])
        order = np.argsort(starts, kind="stable")
        starts, durs, causes = starts[order], durs[order], causes[order]
        if len(starts) > 1:  # two processes on one GPU may report overlapping holes: keep a disjoint row
            keep = np.concatenate(([True], starts[1:] >= np.maximum.accumulate(starts + durs)[:-1]))
            starts, durs, causes = starts[keep], durs[keep], causes[keep]
        labels = tuple(
            f"{cause_short(CAUSES[int(c)])} {format_ns(int(d), sep='')}"
            for d, c in zip(durs.tolist(), causes.tolist(), strict=True)
        )
        row = RowData.from_intervals(np.full(len(starts), -1, dtype=np.int64), starts, starts + durs)
        out[key] = GapMarks(row, labels)
    return out


@dataclass(frozen=True)
class GapItem:
    """One row of the Gaps panel."""

    gap: Gap
    next_label: str
    launch_label: str
    fix: str = ""  # what to do, worded for what the program already does (torch.compile, CUDA graphs)


def gap_items(data: TimelineData, devices: list[DeviceGaps], limit: int = MAX_ROWS) -> tuple[list[GapItem], int]:
    """The ``limit`` longest reported gaps over every GPU, longest first, and how many there are in all."""
    total = sum(len(dg.columns) for dg in devices)
    gaps: list[Gap] = []
    for dg in devices:
        gaps.extend(dg.longest(limit))
    gaps.sort(key=lambda g: (-g.dur_ns, g.start_ns, g.rank, g.device))
    gaps = gaps[:limit]
    t = data.trace
    prog = data.program()
    items = []
    for g in gaps:
        nxt = data.label(g.next_op) if g.next_op >= 0 else ""
        launch = clean(t.event_name(g.launch_event)) if g.launch_event >= 0 else ""
        items.append(GapItem(g, nxt, launch, cause_fix(g.cause, prog, g.words)))
    return items, total


def gap_summary(devices: list[DeviceGaps]) -> list[str]:
    """One line per GPU: idle share and the causes of its reported gaps, largest first."""
    lines = []
    multi = len({d.rank for d in devices}) > 1
    for dg in devices:
        label = dg.trace.device_label(dg.rank, dg.device)
        where = f"rank {dg.rank} {label}" if multi else label
        causes = sorted((c for c in dg.by_cause.values() if c.count), key=lambda c: -c.total_ns)
        parts = ", ".join(f"{cause_short(c.cause)} {format_ns(c.total_ns)} ({c.count})" for c in causes)
        line = (
            f"{where}: idle {format_ns(dg.idle_ns)} of {format_ns(dg.span_ns)} ({dg.idle_pct:.0f}%); "
            f"{plural(len(dg.columns), 'gap')} ≥ {format_ns(dg.threshold_ns)}"
        )
        if parts:
            line += f": {parts}"
        if dg.launch_bound:
            line += " · launch-bound"
        lines.append(line)
    return lines


def gap_details(data: TimelineData, g: Gap) -> list[tuple[str, str]]:
    """The details-pane rows of a gap."""
    t = data.trace
    rows: list[tuple[str, str]] = [
        (
            g.words.noun,
            f"rank {g.rank} · {t.device_label(g.rank, g.device)}"
            if len(t.meta.ranks) > 1
            else t.device_label(g.rank, g.device),
        ),
        ("when", f"{format_ns(g.start_ns, precision=6)} for {format_ns(g.dur_ns)}"),
        ("cause", g.cause_label),
        ("why", clean(g.detail)),
        ("fix", cause_fix(g.cause, data.program(), g.words)),
    ]
    if g.range_name:
        rows.append(("inside", clean(g.range_name)))
    if g.next_op >= 0:
        rows.append(("ended by", f"{data.label(g.next_op)} at {format_ns(int(t.start_ns[g.next_op]), precision=6)}"))
    if g.launch_event >= 0:
        ls = int(t.start_ns[g.launch_event])
        rows.append(("launched", f"{clean(t.event_name(g.launch_event))} at {format_ns(ls, precision=6)} (host side)"))
    spent = [(k, v) for k, v in g.breakdown_ns.items() if v > 0]
    if spent:
        order = {k: i for i, k in enumerate(BREAKDOWN_KEYS)}
        spent.sort(key=lambda kv: order.get(kv[0], 99))
        rows.append(
            (
                "host thread",
                " · ".join(f"{k} {format_ns(v)}" for k, v in spent) + f" of a {format_ns(g.window_ns)} window",
            )
        )
    return rows


# ---- transfers ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CopyItem:
    """One row of the Transfers panel: a memcpy or memset."""

    event: int
    rank: int
    device: int
    stream: int
    start_ns: int
    dur_ns: int
    direction: str
    host_memory: str
    bytes: int
    exposed_ns: int
    flags: tuple[str, ...]
    range_name: str


def copy_items(report: TransferReport, limit: int = MAX_ROWS) -> tuple[list[CopyItem], int]:
    """The ``limit`` copies to look at first — flagged ones, then by exposed time, then by length — and how many
    copies there are."""
    cols = report.columns
    n = len(cols)
    if not n:
        return [], 0
    # flagged copies (something to fix) first, then by exposed time, then by length
    flagged = (cols.flags != 0).astype(np.int64)
    order = np.lexsort((cols.event, -cols.overlap_ns - cols.exposed_ns, -cols.exposed_ns, -flagged))[:limit]
    t = report.trace
    ranges = report.range_events
    items = []
    for i in order.tolist():
        e = int(cols.event[i])
        ln = t.lanes[int(t.lane[e])]
        fl = int(cols.flags[i])
        rng = int(ranges[i])
        items.append(
            CopyItem(
                event=e,
                rank=ln.rank,
                device=ln.device,
                stream=ln.stream,
                start_ns=int(t.start_ns[e]),
                dur_ns=int(t.dur_ns[e]),
                direction=direction_label(int(cols.direction[i]), bool(cols.is_memset[i])),
                host_memory=host_memory_label(int(cols.host_kind[i])) or "",
                bytes=int(cols.bytes[i]),
                exposed_ns=int(cols.exposed_ns[i]),
                flags=tuple(name for bit, name in enumerate(FLAGS) if fl & (1 << bit)),
                range_name=clean(t.event_name(rng)) if rng >= 0 else "",
            )
        )
    return items, n


def transfer_summary(report: TransferReport) -> list[str]:
    """Lines above the table: exposed copy time per GPU, totals per direction, and the flags with their fix."""
    lines = []
    multi = len({d.rank for d in report.devices}) > 1
    per_gpu = ", ".join(
        f"{'rank ' + str(d.rank) + ' ' if multi else ''}{report.trace.device_label(d.rank, d.device)} "
        f"{format_ns(d.exposed_ns)} of "
        f"{format_ns(d.copy_ns)}"
        for d in report.devices
    )
    if per_gpu:
        lines.append(f"exposed copy time (not hidden under kernels): {per_gpu}")
    flags = " · ".join(
        f"⚑ {f.title}: {plural(f.count, 'copy', 'copies')}, {format_ns(f.exposed_ns)} exposed" for f in report.flags
    )
    if flags:
        lines.append(flags)
    dirs = " · ".join(
        f"{r.direction}{' ' + r.host_memory if r.host_memory else ''} {r.count}× {format_bytes(r.bytes)} "
        f"{format_ns(r.time_ns)}"
        for r in report.by_direction
    )
    if dirs:
        lines.append(dirs)
    return lines


def flag_short(flag: str) -> str:
    """A flag id as the table shows it."""
    return {
        "pageable_async": "pageable",
        "sync_copy": "sync copy",
        "copy_on_compute_stream": "on compute stream",
        "sync_memset": "sync memset",
    }.get(flag, FLAG_TITLES.get(flag, flag))


# ---- ranges and findings ------------------------------------------------------------------------------------------
def finding_items(findings: list[Finding]) -> list[FindingItem]:
    """Findings as Findings-panel rows (the order the analysis ranked them)."""
    out = []
    for f in findings:
        gpu = (f.gpu_rank or 0, f.device) if f.device is not None else None
        out.append(
            FindingItem(
                priority=f.priority,
                title=clean(f.title),
                detail=clean(f.detail),
                time_ns=f.time_ns,
                share=f.severity,
                event=f.event,
                interval=f.interval,
                gpu=gpu,
            )
        )
    return out


# ---- what the analyses worker hands over ---------------------------------------------------------------------------
@dataclass(frozen=True)
class GapsView:
    """The gap detector's result with its panel rows and busy-strip marks."""

    devices: list[DeviceGaps]
    items: list[GapItem]
    total: int
    summary: list[str]
    marks: dict[tuple[int, int], GapMarks]


@dataclass(frozen=True)
class TransfersView:
    """The transfer analysis with its panel rows."""

    report: TransferReport
    items: list[CopyItem]
    total: int
    summary: list[str]


def gaps_view(data: TimelineData, devices: list[DeviceGaps]) -> GapsView:
    """Everything the Gaps panel and the busy strips need (run in a worker)."""
    items, total = gap_items(data, devices)
    return GapsView(devices, items, total, gap_summary(devices), gap_marks(devices))


def transfers_view(report: TransferReport) -> TransfersView:
    """Everything the Transfers panel needs (run in a worker)."""
    items, total = copy_items(report)
    return TransfersView(report, items, total, transfer_summary(report))
