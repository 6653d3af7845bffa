"""``gputop-trace ops PATH``: the operator view, the same rows as ``torch.profiler``'s ``key_averages()``."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from gputop_trace.cli import common

if TYPE_CHECKING:
    from gputop_trace.analysis.operators.table import OpRow
    from gputop_trace.model.trace import Trace

DEFAULT_TOP = 30
SORT_KEYS: dict[str, str] = {
    "self_cpu": "self_cpu_ns",
    "cpu": "cpu_total_ns",
    "self_device": "self_device_ns",
    "device": "device_total_ns",
    "count": "count",
    "cpu_memory": "self_cpu_mem",
    "device_memory": "self_device_mem",
    "flops": "flops",
}


def register(sub: Any) -> None:
    """Add the ``ops`` parser."""
    p = sub.add_parser(
        "ops",
        help="operators as torch.profiler's key_averages(): calls, CPU and device time (total/self), memory, FLOPs",
        description="One row per operator (aten ops, record_function / user annotations, autograd nodes) with the "
        "figures PyTorch's key_averages() gives for the same trace: calls, CPU total and self time, device total "
        "and self time (the kernels, copies and memsets the op launched: self = its own, total = with its "
        "children's), their means, and with profile_memory the memory allocated (total and self, host and "
        "device). With record_shapes: estimated FLOPs / bytes moved from the input shapes, the achieved rate "
        "over the device time against the GPU's peak, and the model FLOPs utilisation of each step (estimates "
        "from shapes, not measurements). --all adds every other key of key_averages (Python frames of with_stack, "
        "CUDA runtime calls, the kernels themselves).",
    )
    common.add_paths(p)
    common.add_output(p)
    p.add_argument("--rank", type=int, metavar="R", help="only rank R")
    p.add_argument(
        "--group-by",
        choices=("name", "shape", "stack"),
        default="name",
        help="one row per operator name (default), per name and input shapes (key_averages(group_by_input_shape="
        "True)), or per name and the 5 innermost Python frames around the call (with_stack)",
    )
    p.add_argument(
        "--sort",
        choices=tuple(SORT_KEYS),
        default="self_cpu",
        help="order of the rows (default self_cpu: self CPU time, as key_averages().table(sort_by="
        "'self_cpu_time_total'))",
    )
    p.add_argument(
        "--top",
        type=int,
        default=DEFAULT_TOP,
        metavar="N",
        help=f"rows shown (default {DEFAULT_TOP}; 0 = all; --json/--csv list all)",
    )
    p.add_argument("--name", metavar="TEXT", help="only operators whose name contains TEXT (case-insensitive)")
    p.add_argument(
        "--all",
        action="store_true",
        help="every key key_averages() has: also Python frames, runtime calls, kernels, copies, GPU annotations",
    )
    p.set_defaults(func=run)


def select(rows: list[OpRow], *, every_key: bool, name: str | None, sort: str) -> list[OpRow]:
    """The rows shown: operators and annotations (every key with ``every_key``), matching ``name``, sorted."""
    from gputop_trace.analysis.operators.table import OPERATOR_KINDS

    out = [r for r in rows if every_key or r.kind in OPERATOR_KINDS]
    if name:
        needle = name.lower()
        out = [r for r in out if needle in r.name.lower()]
    attr = SORT_KEYS[sort]
    return sorted(out, key=lambda r: (-(getattr(r, attr) or 0), -r.self_device_ns, r.name))


def _check_rank(trace: Trace, rank: int | None) -> None:
    """A ``--rank`` the trace does not have is an error that lists the ranks it has."""
    if rank is None:
        return
    from gputop_trace.errors import TraceError

    ranks = sorted({ln.rank for ln in trace.lanes} | set(trace.meta.ranks))
    if rank not in ranks:
        raise TraceError(f"--rank {rank}: this trace has no rank {rank}; its ranks are {', '.join(map(str, ranks))}.")


def run(args: argparse.Namespace) -> int:
    """Load, build the operator table, print."""
    from gputop_trace.analysis.operators.memory import memory_series
    from gputop_trace.analysis.operators.mfu import gpu_name, step_mfu
    from gputop_trace.analysis.operators.table import op_table
    from gputop_trace.analysis.operators.tree import build_op_tree
    from gputop_trace.report import ops_json

    trace = common.load(args)
    _check_rank(trace, args.rank)
    tree = build_op_tree(trace, args.rank)
    rows = op_table(trace, group_by=args.group_by, tree=tree)
    rows = select(rows, every_key=args.all, name=args.name, sort=args.sort)
    gpu = gpu_name(trace, args.rank or 0)
    if args.json:
        steps = [s for s in step_mfu(trace, tree) if args.rank is None or s.rank == args.rank]
        memory = [m for m in memory_series(trace) if args.rank is None or m.rank == args.rank]
        common.emit_json(ops_json.build(trace, args.paths, rows, args.group_by, steps, memory, gpu))
        return 0
    if args.csv:
        import sys

        from gputop_trace.report.envelope import to_csv

        sys.stdout.write(to_csv([ops_json.op_json(r, gpu) for r in rows], ops_json.CSV_COLUMNS))
        return 0
    from gputop_trace.cli.ops_render import render

    render(trace, tree, rows, args, gpu)
    return 0
