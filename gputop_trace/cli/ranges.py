"""``gputop-trace ranges PATH``: NVTX / annotation ranges with their CPU time and the GPU time they launched."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.analysis.ranges import RangeRow
    from gputop_trace.model.trace import Trace

DEFAULT_LIMIT = 30
CSV_COLUMNS = (
    "name",
    "domain",
    "count",
    "total_ns",
    "mean_ns",
    "min_ns",
    "max_ns",
    "gpu_ns",
    "gpu_span_ns",
    "gpu_ops",
    "gpu_annotation_ns",
    "max_depth",
    "threads",
)


def register(sub: Any) -> None:
    """Add the ``ranges`` parser."""
    p = sub.add_parser(
        "ranges",
        help="NVTX / record_function / TraceAnnotation ranges with the GPU time they launched",
        description="One row per range name (and NVTX domain): instances, CPU time, deepest nesting level, and the "
        "GPU time projected onto it: the busy time of the GPU ops whose launch call falls inside the range on the "
        "same thread (gpu), their first-start-to-last-end span (gpu span), and on Kineto traces the matching "
        "gpu_user_annotation bands (annot).",
    )
    common.add_paths(p)
    common.add_output(p)
    common.add_filters(p)
    p.add_argument("--name", metavar="TEXT", help="only ranges whose name contains TEXT (case-insensitive)")
    p.add_argument(
        "--exact-names",
        action="store_true",
        help="keep PyTorch emit_nvtx operator ranges apart by call (', seq = N, op_id = M'); by default one row "
        "per operator",
    )
    p.add_argument(
        "--sort",
        choices=("total", "gpu", "count"),
        default="total",
        help="order of the rows: CPU total time (default), GPU time, or instance count",
    )
    p.add_argument(
        "--limit",
        type=int,
        default=DEFAULT_LIMIT,
        metavar="N",
        help=f"rows shown in the table (default {DEFAULT_LIMIT}; 0 = all; --json/--csv list all)",
    )
    p.set_defaults(func=run)


def _sorted(rows: list[RangeRow], key: str) -> list[RangeRow]:
    if key == "gpu":
        return sorted(rows, key=lambda r: (-r.gpu_ns, -r.total_ns, r.name))
    if key == "count":
        return sorted(rows, key=lambda r: (-r.count, -r.total_ns, r.name))
    return rows


def build(trace: Trace, paths: list[str], rows: list[RangeRow]) -> dict[str, Any]:
    """The ``ranges`` JSON document."""
    from gputop_trace.analysis.autograd import autograd_threads
    from gputop_trace.report.analysis_json import autograd_threads_json, range_json
    from gputop_trace.report.envelope import envelope

    return envelope(
        "ranges",
        trace,
        paths,
        ranges=[range_json(r) for r in rows],
        autograd_threads=autograd_threads_json(trace, autograd_threads(trace)),
    )


def run(args: argparse.Namespace) -> int:
    """Load, summarise ranges, print."""
    from gputop_trace.analysis.ranges import range_summary

    trace = common.load(args)
    rows = _sorted(
        range_summary(
            trace,
            rank=args.rank,
            device=args.device,
            name_filter=args.name,
            merge_operator_ids=not args.exact_names,
        ),
        args.sort,
    )
    if args.json:
        common.emit_json(build(trace, args.paths, rows))
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.analysis_json import range_json
        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv([range_json(r) for r in rows], CSV_COLUMNS))
        return 0
    render(trace, rows, args.limit)
    return 0


def render(trace: Trace, rows: list[RangeRow], limit: int) -> None:
    """Print the range table."""
    from rich.text import Text

    from gputop_trace.cli.pipe_output import cut_at
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    con = common.stdout_console()
    if not rows:
        con.print(
            Text("No annotation ranges (NVTX, record_function, TraceAnnotation) in this profile.", style="yellow")
        )
        common.print_warnings(con, trace)
        return
    from gputop_trace.analysis.autograd import autograd_note, autograd_threads

    notes = autograd_note(trace, autograd_threads(trace))
    shown = rows[: limit if limit > 0 else len(rows)]
    has_domain = any(r.domain for r in rows)
    has_annot = any(r.gpu_annotation_ns is not None for r in rows)
    t = compact_table(f"Ranges ({len(shown)} of {len(rows):,})")
    others = 3 + 4 * 7 + 5 + (7 if has_annot else 0) + (12 if has_domain else 0)
    n_cols = 7 + int(has_annot) + int(has_domain)
    room = max(8, con.width - others - 3 * (n_cols - 1))
    t.add_column("range", overflow="ellipsis", no_wrap=True, max_width=room)
    if has_domain:
        t.add_column("domain", overflow="ellipsis", no_wrap=True, max_width=cut_at(con.is_terminal, 12))
    add_number_columns(t, "n", width=3)
    noun = trace.device_words().noun
    add_number_columns(t, "CPU", "mean", noun, "span")
    add_number_columns(t, "depth", width=5)
    if has_annot:
        add_number_columns(t, "annot")
    for r in shown:
        cells: list[Any] = [Text(clean(r.name))]
        if has_domain:
            cells.append(Text(clean(r.domain)))
        cells += [
            f"{r.count:,}",
            format_ns(r.total_ns),
            format_ns(r.mean_ns),
            format_ns(r.gpu_ns),
            format_ns(r.gpu_span_ns),
            str(r.max_depth),
        ]
        if has_annot:
            cells.append(format_ns(r.gpu_annotation_ns) if r.gpu_annotation_ns is not None else "-")
        t.add_row(*cells)
    con.print(t)
    con.print(
        Text(
            f"CPU = total time in the range; {noun} = busy time of the {noun} work launched inside it on its thread"
            + (" (or on the autograd thread running its backward pass)" if notes else "")
            + "; span = first start to last end of that work"
            + ("; annot = Kineto gpu_user_annotation time" if has_annot else "")
            + ".",
            style="dim",
        )
    )
    for note in notes:
        con.print(Text(clean(note) + ".", style="dim"))
    borrowed = [r for r in shown if r.gpu_ops_autograd]
    if borrowed:
        con.print(
            Text(
                f"{noun} ops launched by an autograd thread: "
                + ", ".join(f"{clean(r.name)} {r.gpu_ops_autograd:,} of {r.gpu_ops:,}" for r in borrowed[:6])
                + (f" (+{len(borrowed) - 6} more ranges)" if len(borrowed) > 6 else "")
                + ".",
                style="dim",
            )
        )
    common.print_warnings(con, trace)
