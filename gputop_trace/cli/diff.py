"""``gputop-trace diff BASE TEST``: two runs compared: whether they can be, the verdict on step time (beyond the
runs' own step-to-step noise or not), and where the difference comes from; as text, ``--json``, ``--csv``, or in
the app (``--view``)."""

from __future__ import annotations

import argparse
import math
import sys
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common
from gputop_trace.errors import TraceError
from gputop_trace.units import plural

if TYPE_CHECKING:
    from rich.console import Console

    from gputop_trace.analysis.diff.compare import RunDiff

#: Rows shown per category in the text output unless ``--limit`` says otherwise (JSON and CSV list every row).
TABLE_ROWS = 8

_DESCRIPTION = """\
Compare two runs of a workload: BASE (before a change) and TEST (after). Each is a trace file or a folder of
per-rank traces, in any supported format (a Kineto run against an nsys run of the same workload too).

1. Comparability: GPU model and count, world size, format, steps, the overlap of the kernel names; each
   difference with what it weakens.
2. The verdict on step time: steps matched by name (else by position), warm-up steps left out, the median
   change with a 95 % bootstrap confidence interval from the steps' own spread: beyond noise or not. Without
   step ranges the whole spans are compared, and no verdict is given.
3. Where the difference comes from: GPU busy vs idle, kernels (names normalised: template arguments and Triton
   hash suffixes left out), launching operators and ranges, annotation ranges, idle causes and copy kinds,
   each ranked by its per-step change with its own noise; whole-run totals are exact."""


def register(sub: Any) -> None:
    """Add the ``diff`` parser."""
    p = sub.add_parser(
        "diff",
        help="compare two runs: was the speed-up real or noise? (text, --json, --csv or --view)",
        description=_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("base", metavar="BASE", help="the run before the change: a trace file or a folder of rank traces")
    p.add_argument("test", metavar="TEST", help="the run after the change: a trace file or a folder of rank traces")
    group = p.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="print JSON (see 'JSON output' in the README)")
    group.add_argument("--csv", action="store_true", help="print the attribution rows as CSV")
    group.add_argument("--view", action="store_true", help="open both runs in the app's Diff view")
    p.add_argument(
        "--limit", type=int, metavar="N", help=f"rows per category in the text output (default {TABLE_ROWS})"
    )
    p.add_argument("--no-cache", action="store_true", help="parse the traces again instead of using the cache")
    p.add_argument("--no-python", action="store_true", help="leave out Kineto python_function events (faster)")
    p.add_argument("--max-memory", type=common.size_arg, metavar="SIZE", help="memory each run may use (e.g. 12GB)")
    p.set_defaults(func=run)


def compare(args: argparse.Namespace) -> RunDiff:
    """Load both runs (an error names the side) and compare them."""
    from gputop_trace.analysis.diff.compare import diff_runs
    from gputop_trace.load.runs import load_run, same_inputs

    opts = {
        "max_memory": args.max_memory,
        "use_cache": not args.no_cache,
        "include_python": not args.no_python,
    }
    base = load_run("BASE", [args.base], **opts)
    test = load_run("TEST", [args.test], **opts)
    return diff_runs(base, test, identical=same_inputs([args.base], [args.test]))


def run(args: argparse.Namespace) -> int:
    """Load, compare, print (or open the app)."""
    if args.view:
        return _view(args)
    from gputop_trace.report.diff import diff_document

    d = compare(args)
    doc = diff_document(d, [args.base], [args.test])
    if args.json:
        common.emit_json(doc)
    elif args.csv:
        from gputop_trace.report.diff import CSV_COLUMNS, csv_rows
        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv(csv_rows(doc), CSV_COLUMNS))
    else:
        render(doc, limit=TABLE_ROWS if args.limit is None else max(args.limit, 0))
    return 0


def _view(args: argparse.Namespace) -> int:
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        raise TraceError(
            "gputop-trace diff --view needs an interactive terminal (stdin and stdout must be a TTY). For output a "
            "script can read, use 'gputop-trace diff BASE TEST --json'."
        )
    from gputop_trace.tui.diff_app import DiffApp

    app = DiffApp(
        [args.base],
        [args.test],
        max_memory=args.max_memory,
        use_cache=not args.no_cache,
        include_python=not args.no_python,
    )
    app.run()
    return int(app.return_code or 0)


# ---- text ----------------------------------------------------------------------------------------------------
def _signed_ns(ns: int | None) -> str:
    from gputop_trace.units import format_ns

    if ns is None:
        return "—"
    return ("+" if ns > 0 else "-" if ns < 0 else "±") + format_ns(abs(ns))


def _share(pct: float | None) -> str:
    return "—" if pct is None or not math.isfinite(pct) else f"{pct:+.0f}%"


def _run_line(con: Console, side: str, src: dict[str, Any], facts: dict[str, Any]) -> None:
    from rich.text import Text

    from gputop_trace.safe_text import clean

    gpus = ", ".join(facts["gpu_models"])
    what = (
        f"{src['format']} · {gpus} × {facts['gpu_count']} · world size {facts['world_size']} · "
        f"{plural(facts['steps'], 'step')}"
    )
    con.print(Text(f"{side}: ", style="bold") + Text(clean(str(src["path"]))) + Text(f"  ({what})", style="dim"))


def _verdict_style(kind: str) -> str:
    return {"faster": "bold green", "slower": "bold red", "identical": "bold"}.get(kind, "bold yellow")


def render(doc: dict[str, Any], *, limit: int) -> None:
    """Print the comparison with Rich."""
    from rich.text import Text

    from gputop_trace.safe_text import clean

    con = common.stdout_console()
    comp = doc["comparability"]
    con.print(Text("gputop-trace diff", style="bold"))
    _run_line(con, "BASE", doc["source"]["base"], comp["base"])
    _run_line(con, "TEST", doc["source"]["test"], comp["test"])
    if comp["differences"]:
        con.print(Text("Comparability:", style="bold yellow"))
        for x in comp["differences"]:
            con.print(
                Text(f"  ! {x['what']}: BASE {clean(x['base'])}, TEST {clean(x['test'])}: ", style="yellow")
                + Text(f"weakens: {clean(x['weakens'])}")
            )
    else:
        con.print(Text(f"Comparable: same GPUs, world size and steps; {comp['kernel_overlap_pct']:.0f} % of the "
                       "kernel names in both runs.", style="dim"))  # fmt: skip
    _render_steps(con, doc)
    v = doc["verdict"]
    con.print(Text("Verdict: ", style="bold") + Text(v["sentence"], style=_verdict_style(v["kind"])))
    _render_rows(con, doc, limit)
    for key, title in (
        ("new_kernels", "New kernels (only in TEST)"),
        ("removed_kernels", "Removed kernels (only in BASE)"),
    ):
        names = doc[key]
        if names:
            shown = ", ".join(clean(n) for n in names[:limit])
            con.print(
                Text(f"{title}: ", style="bold")
                + Text(shown + (f" … ({len(names)} in all)" if len(names) > limit else ""))
            )
    changes = doc["count_changes"]
    if changes:
        parts = [f"{clean(c['name'])} {c['base_count']}→{c['test_count']}" for c in changes[:limit]]
        con.print(Text("Launch counts changed: ", style="bold") + Text(", ".join(parts)))
    for w in doc["warnings"]:
        con.print(Text("warning: ", style="yellow") + Text(clean(w)))


def _render_steps(con: Console, doc: dict[str, Any]) -> None:
    from rich.text import Text

    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    st = doc["steps"]
    for side in ("base", "test"):
        warm = [s["name"] for s in st[side] if s["warmup"]]
        if warm:
            con.print(Text(f"Warm-up steps of {side.upper()} (shown apart, not compared): ", style="dim")
                      + Text(", ".join(f"{clean(n)} {format_ns(s['dur_ns'])}" for n, s in
                                       zip(warm, [s for s in st[side] if s["warmup"]], strict=True))))  # fmt: skip
        cut = [s for s in st[side] if s.get("cut")]
        if cut:
            con.print(Text(f"Steps of {side.upper()} cut to the recording (not compared): ", style="yellow")
                      + Text(", ".join(f"{clean(s['name'])} {format_ns(s['dur_ns'])}" for s in cut)))  # fmt: skip
    if st["whole_span"]:
        con.print(Text("No step ranges: the whole spans are compared.", style="yellow"))
        return
    t = compact_table(f"Steps, matched by {st['matched_by']} ({st['compared']} compared)")
    t.add_column("BASE step", no_wrap=True)
    t.add_column("TEST step", no_wrap=True)
    add_number_columns(t, "BASE", "TEST", "change", width=9)
    for p in st["pairs"]:
        ch = "—" if p["change_pct"] is None else f"{p['change_pct']:+.1f}%"
        t.add_row(clean(p["base"]), clean(p["test"]), format_ns(p["base_ns"]), format_ns(p["test_ns"]), ch)
    con.print(t)


def _render_rows(con: Console, doc: dict[str, Any], limit: int) -> None:
    from rich.text import Text

    from gputop_trace.analysis.diff.attribution import CATEGORIES, CATEGORY_LABELS
    from gputop_trace.analysis.kernels import short_name
    from gputop_trace.cli.tables import add_number_columns, compact_table
    from gputop_trace.safe_text import clean
    from gputop_trace.units import format_ns

    per = "per step, mean of the compared steps" if not doc["steps"]["whole_span"] else "over the whole span"
    con.print(Text(f"Where the difference comes from ({per}; noise = 95 % interval):", style="bold"))
    for cat in CATEGORIES:
        rows = [
            r for r in doc["attribution"][cat] if r["base_count"] or r["test_count"] or r["base_ns"] or r["test_ns"]
        ]
        if not rows:
            continue
        wide = con.width >= 110
        t = compact_table(CATEGORY_LABELS[cat])
        t.add_column("name", overflow="ellipsis", no_wrap=True, max_width=max(20, con.width - (64 if wide else 54)))
        add_number_columns(t, "BASE", "TEST", "Δ/step", "± noise", "share", width=8)
        if wide:
            add_number_columns(t, "Δ total", width=9)
        for r in rows[:limit]:
            name = short_name(r["name"]) if cat == "kernel" else r["name"]
            tag = f" [{r['status']}]" if r["status"] else ""
            noise = "—" if r["noise_ns"] is None else format_ns(r["noise_ns"])
            t.add_row(
                Text(clean(name) + tag, style="bold" if r["beyond_noise"] else ""),
                format_ns(r["step_base_ns"] or 0),
                format_ns(r["step_test_ns"] or 0),
                _signed_ns(r["step_delta_ns"]),
                noise,
                _share(r["share_pct"]),
                *([_signed_ns(r["delta_ns"])] if wide else []),
            )
        con.print(t)
