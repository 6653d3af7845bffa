"""``gputop-trace kernels PATH``: the kernel table (detectors.md §1) as a table, ``--json`` or ``--csv``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.analysis.kernels import KernelRow
    from gputop_trace.model.trace import Trace

#: Rows shown in the terminal table unless ``--limit`` says otherwise (JSON and CSV list every row).
TABLE_ROWS = 30

CSV_COLUMNS = (
    "name",
    "device",
    "rank",
    "count",
    "total_ns",
    "mean_ns",
    "median_ns",
    "min_ns",
    "max_ns",
    "std_ns",
    "pct",
    "grid",
    "block",
    "registers",
    "shared_bytes",
    "launch_ns",
    "raw_name",
)

_DESCRIPTION = """\
One row per kernel name and GPU: launches, total, mean, median, min, max and sample standard deviation of the
duration, and the share of all kernel time, with the most common launch geometry and resources.

Names are the full demangled names (the table shortens them for the screen; --full-names shows them whole).

Reproducing `nsys stats -r cuda_gpu_kern_sum`: run `gputop-trace kernels --merge-devices --json FILE.sqlite`.
That report groups by full demangled name over all GPUs, so --merge-devices does the same and sorts rows as
it does (total time, then fewest instances, then name). Total, Instances, Min and Max are equal to the
nanosecond; Avg, Med and StdDev (sample standard deviation) are rounded to 0.1 ns the way nsys rounds them
(ties away from zero); nsys prints Time (%) with one decimal, the JSON `pct` has three."""


def register(sub: Any) -> None:
    """Add the ``kernels`` parser."""
    p = sub.add_parser(
        "kernels",
        help="the kernel table: time per kernel name and GPU (text, --json or --csv)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    common.add_paths(p, optional=True)
    common.add_output(p)
    common.add_filters(p)
    common.add_inductor_dir(p)
    p.add_argument(
        "--group-by",
        choices=("name", "geometry", "launcher", "region", "node", "source"),
        default="name",
        help="one row per kernel name (default), per name + grid + block, per launching operator / NVTX range "
        "(a CUDA graph's kernels: its replay), per torch.compile region, or per post-grad graph node set / "
        "source line of torch.compile kernels (node and source need --inductor-dir)",
    )
    p.add_argument(
        "--merge-devices",
        action="store_true",
        help="one row per name over all GPUs and ranks, ordered as nsys stats orders them "
        "(reproduces nsys stats -r cuda_gpu_kern_sum)",
    )
    p.add_argument("--limit", type=int, metavar="N", help=f"show only the top N rows (table default: {TABLE_ROWS})")
    p.add_argument("--full-names", action="store_true", help="show full demangled names in the table")
    p.set_defaults(func=run)


def rows(trace: Trace, args: argparse.Namespace) -> list[KernelRow]:
    """The kernel rows the arguments ask for, in output order."""
    from gputop_trace.analysis.kernels import kernel_table

    out = kernel_table(
        trace,
        group_by=args.group_by,
        device=args.device,
        rank=args.rank,
        merge_devices=args.merge_devices,
    )
    if args.merge_devices:
        out.sort(key=lambda r: (-r.total_ns, r.count, r.name))
    return out


def build(trace: Trace, paths: list[str], args: argparse.Namespace) -> dict[str, Any]:
    """The ``kernels`` JSON-contract document."""
    from gputop_trace.analysis.profiler_ranges import profiler_ranges
    from gputop_trace.report.envelope import envelope
    from gputop_trace.report.kernels_json import kernel_row_json
    from gputop_trace.report.profiler_json import profiled_kernel_json

    table = rows(trace, args)
    shown = table if args.limit is None else table[: max(args.limit, 0)]
    prof = profiler_ranges(trace)
    profiled = [
        k
        for k in (prof.kernels if prof else [])
        if (args.device is None or k.device == args.device) and (args.rank is None or k.rank == args.rank)
    ]
    return envelope(
        "kernels",
        trace,
        paths,
        group_by=args.group_by,
        merged_devices=bool(args.merge_devices),
        filters={"device": args.device, "rank": args.rank},
        total_ns=sum(r.total_ns for r in table),
        rows_total=len(table),
        kernels=[kernel_row_json(r) for r in shown],
        mode="range_profiler" if prof is not None and not table else "activity",
        counters=list(prof.metrics) if prof else [],
        profiled_kernels=[
            profiled_kernel_json(k) for k in (profiled if args.limit is None else profiled[: max(args.limit, 0)])
        ],
    )


def run(args: argparse.Namespace) -> int:
    """Load, tabulate, print."""
    if not args.paths:
        from gputop_trace.load.samples import default_sample

        args.paths = [default_sample()]
    if args.group_by in ("node", "source") and not args.inductor_dir:
        from gputop_trace.errors import TraceError

        raise TraceError(
            f"--group-by {args.group_by} needs --inductor-dir DIR: the graph nodes and source lines of "
            "torch.compile's kernels are in its debug output (record with TORCH_COMPILE_DEBUG=1), not in the trace."
        )
    trace = common.load(args)
    if args.json:
        common.emit_json(build(trace, args.paths, args))
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.envelope import to_csv

        doc = build(trace, args.paths, args)
        if doc["mode"] == "range_profiler":
            from gputop_trace.report.profiler_json import profiled_kernel_csv_rows

            cols = ("name", "device", "rank", "ranges", *doc["counters"])
            sys.stdout.write(to_csv(profiled_kernel_csv_rows(doc["profiled_kernels"], doc["counters"]), cols))
            return 0
        sys.stdout.write(to_csv(doc["kernels"], CSV_COLUMNS))
        return 0
    if args.limit is None:
        args.limit = TABLE_ROWS
    render(build(trace, args.paths, args), trace, full_names=args.full_names)
    return 0


#: Table columns with their minimum widths, most important first; columns that do not fit are left out.
_COLUMN_PRIORITY = (
    ("dev", 3),
    ("count", 7),
    ("total", 9),
    ("mean", 9),
    ("%", 5),
    ("median", 9),
    ("max", 9),
    ("min", 9),
    ("std", 9),
    ("block", 9),
    ("grid", 11),
    ("regs", 4),
)
_COLUMN_ORDER = ("dev", "count", "total", "mean", "median", "min", "max", "std", "%", "grid", "block", "regs")


def _columns_that_fit(width: int, merged: bool) -> list[tuple[str, int]]:
    """The numeric columns to show at this terminal width, leaving at least 24 columns for kernel names."""
    chosen: list[tuple[str, int]] = []
    used = 24 + 4
    for c, w in _COLUMN_PRIORITY:
        if c == "dev" and merged:
            continue
        if used + w + 3 > width and len(chosen) >= 3:
            continue
        chosen.append((c, w))
        used += w + 3
    return sorted(chosen, key=lambda cw: _COLUMN_ORDER.index(cw[0]))


def render(doc: dict[str, Any], trace: Trace, *, full_names: bool) -> None:
    """Print the kernel table with Rich."""
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.presentation.name_fitting import fit_names
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns, plural

    con = common.stdout_console()
    src = doc["source"]
    con.print(Text("gputop-trace kernels  ", style="bold") + Text(clean(str(src["path"]))))
    con.print(Text(f"format: {src['format']} — ") + Text(clean(src["producer"])))
    if doc["mode"] == "range_profiler":
        _render_profiled(con, doc, full_names=full_names)
        common.print_warnings(con, trace)
        return
    if not doc["kernels"]:
        con.print(Text("No kernels in this profile (or none match the filters).", style="yellow"))
        common.print_warnings(con, trace)
        return
    shown, total = len(doc["kernels"]), doc["rows_total"]
    title = f"{'All' if shown == total else f'Top {shown} of'} {plural(total, 'kernel row')} by total time"
    merged = doc["merged_devices"]
    cols = _columns_that_fit(con.width, merged)
    t = Table(title=title, title_justify="left")
    name_width = max(20, con.width - sum(w + 3 for _, w in cols) - 4)
    t.add_column(
        "kernel",
        overflow="fold" if full_names else "ellipsis",
        no_wrap=not full_names,
        max_width=None if full_names else name_width,
    )
    for c, w in cols:
        t.add_column(c, justify="right", no_wrap=True, min_width=w)
    shorten = not full_names and doc["group_by"] in ("name", "geometry", "launcher")
    names = [clean(short_name(r["name"]) if shorten else r["name"]) for r in doc["kernels"]]
    if not full_names:  # cut so that names that differ still read differently (nvjet_sm90_ts…_bz_coopA_NNT)
        names = fit_names(names, name_width)
    for r, name in zip(doc["kernels"], names, strict=True):
        cells = {
            "dev": str(r["device"]) if r["device"] is not None else "",
            "count": f"{r['count']:,}",
            "total": format_ns(r["total_ns"]),
            "mean": format_ns(r["mean_ns"]),
            "median": format_ns(r["median_ns"]),
            "min": format_ns(r["min_ns"]),
            "max": format_ns(r["max_ns"]),
            "std": format_ns(r["std_ns"]),
            "%": f"{r['pct']:.1f}",
            "grid": "×".join(str(v) for v in r["grid"]) if r["grid"] else "",
            "block": "×".join(str(v) for v in r["block"]) if r["block"] else "",
            "regs": str(r["registers"]) if r["registers"] is not None else "",
        }
        t.add_row(Text(name), *(cells[c] for c, _ in cols))
    con.print(t)
    con.print(Text(f"total kernel time: {format_ns(doc['total_ns'])}", style="dim"))
    common.print_warnings(con, trace)


def _render_profiled(con: Any, doc: dict[str, Any], *, full_names: bool) -> None:
    """The kernel table of a CUPTI range-profiler trace: ranges per kernel and each counter summed (SI units;
    the heads are the counters' short names, their full names under the table)."""
    from rich.table import Table
    from rich.text import Text

    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.analysis.profiler_ranges import short_metric
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_si

    rows = doc["profiled_kernels"]
    metrics = doc["counters"]
    con.print(
        Text(
            "CUPTI range-profiler trace: one range per profiled kernel with its hardware counters, no kernel "
            "activity (no durations: a range's length is the profiler's replay window).",
            style="yellow",
        )
    )
    t = Table(title=f"{len(rows)} kernel rows by profiled ranges, counters summed per row", title_justify="left")
    t.add_column("kernel", overflow="fold" if full_names else "ellipsis", no_wrap=not full_names)
    for c in ("dev", "ranges", *(short_metric(m) for m in metrics)):
        t.add_column(c, justify="right", no_wrap=True)
    for r in rows:
        name = r["name"] if full_names else short_name(r["name"])
        cells: list[Any] = [Text(clean(name)), str(r["device"]), f"{r['ranges']:,}"]
        cells += [format_si(r["counters"].get(m, 0.0), "").strip() for m in metrics]
        t.add_row(*cells)
    con.print(t)
    con.print(Text("counters: " + ", ".join(metrics), style="dim"))
