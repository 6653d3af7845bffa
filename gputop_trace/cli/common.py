"""Arguments, loading and output helpers shared by the sub-commands."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from gputop_trace.errors import TraceError
from gputop_trace.units import parse_duration_ns, parse_size_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from gputop_trace.model.trace import Trace


def duration_arg(text: str) -> int:
    """argparse type: a duration with units (``50us``, ``1ms``) → ns."""
    try:
        return parse_duration_ns(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def size_arg(text: str) -> int:
    """argparse type: a size with units (``12GB``, ``512MiB``) → bytes."""
    try:
        return parse_size_bytes(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def add_paths(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """The PATH argument(s): files or directories of per-rank traces, and ``--max-memory``."""
    parser.add_argument(
        "paths",
        nargs="*" if optional else "+",
        metavar="PATH",
        help="trace file (.json, .json.gz, .sqlite, .nsys-rep) or directory of per-rank traces",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="parse the trace again instead of reopening it from the columnar cache (~/.cache/gputop-trace)",
    )
    parser.add_argument(
        "--no-python",
        action="store_true",
        help="leave out Kineto python_function events (the Python stack frames of with_stack=True, often most of "
        "the events): a faster load and less memory; GPU times do not change, idle gaps are then blamed on the "
        "enclosing operator or annotation instead of a Python frame. In view, the palette loads them "
        "later",
    )
    parser.add_argument(
        "--max-memory",
        type=size_arg,
        metavar="SIZE",
        help="memory the trace may use (e.g. 12GB); a trace estimated to need more is refused before loading. "
        "Default: the memory available now (MemAvailable, or the container's limit), or $GPUTOP_MAX_MEMORY",
    )


def add_inductor_dir(parser: argparse.ArgumentParser) -> None:
    """``--inductor-dir DIR``: torch.compile's debug output, to map generated kernels to graph nodes and lines."""
    parser.add_argument(
        "--inductor-dir",
        metavar="DIR",
        help="torch.compile's debug output (the folder TORCH_COMPILE_DEBUG=1 writes, or any folder of "
        "output_code.py files from TORCH_LOGS=output_code): each Inductor kernel is mapped to the post-grad "
        "graph nodes and source lines it was generated from",
    )


def add_output(parser: argparse.ArgumentParser, *, csv: bool = True) -> None:
    """``--json`` (and ``--csv``) output switches."""
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--json", action="store_true", help="print JSON (see 'JSON output' in the README)")
    if csv:
        group.add_argument("--csv", action="store_true", help="print CSV")


def add_filters(parser: argparse.ArgumentParser) -> None:
    """``--device`` / ``--rank`` filters."""
    parser.add_argument("--device", type=int, metavar="N", help="only GPU N")
    parser.add_argument("--rank", type=int, metavar="R", help="only rank R")


def stdout_console() -> Console:
    """A Rich console for results (no markup or highlighting of untrusted names). To a pipe or a file, it is
    :data:`~gputop_trace.cli.pipe_output.PIPE_WIDTH` wide and writes no trailing spaces (nothing is cut for a
    terminal that is not there)."""
    from gputop_trace.cli.figure_console import FigureConsole
    from gputop_trace.cli.pipe_output import NoTrailingSpaces, is_terminal, pipe_width

    if is_terminal(sys.stdout):  # a figure and its unit, a count and its noun, wrap together (figure_console.py)
        return FigureConsole(highlight=False, soft_wrap=False)
    out = NoTrailingSpaces(sys.stdout)
    return FigureConsole(highlight=False, soft_wrap=False, width=pipe_width(), file=out)  # type: ignore[arg-type]


def load(args: argparse.Namespace) -> Trace:
    """Load the command's PATH(s), with a progress bar on stderr when it is a terminal. Raises
    :class:`TraceError` up front when they are estimated to need more memory than is available."""
    from gputop_trace.load.loader import load_paths
    from gputop_trace.load.resources import check_paths

    paths: list[str] = list(args.paths)
    use_cache = not getattr(args, "no_cache", False)
    include_python = not getattr(args, "no_python", False)
    check_paths(paths, getattr(args, "max_memory", None))  # before any parsing: refuse what cannot fit
    with load_progress() as progress:
        trace = load_paths(paths, progress=progress, use_cache=use_cache, include_python=include_python)
    return check_filters(_with_inductor(trace, args), args)


@contextlib.contextmanager
def load_progress() -> Iterator[Callable[[int, int, int], None] | None]:
    """A progress callback for a load (``(bytes_done, bytes_total, events)``) drawing a transient bar on stderr
    when it is a terminal; None when it is not."""
    if not sys.stderr.isatty():
        yield None
        return
    from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("loading"),
        BarColumn(),
        DownloadColumn(),
        TextColumn("{task.fields[events]:,} events"),
        TimeElapsedColumn(),
        transient=True,
        console=_stderr_console(),
    ) as bar:
        task = bar.add_task("load", total=None, events=0)

        def progress(done: int, total: int, events: int) -> None:
            bar.update(task, completed=done, total=total or None, events=events)

        yield progress


def _with_inductor(trace: Trace, args: argparse.Namespace) -> Trace:
    """The trace with the ``--inductor-dir`` output attached (when the command has the option)."""
    folder = getattr(args, "inductor_dir", None)
    if not folder:  # the debug-output reader is imported only when there is a folder to read
        return trace
    from gputop_trace.load.inductor import attach_inductor_dir

    return attach_inductor_dir(trace, folder)


def check_filters(trace: Trace, args: argparse.Namespace) -> Trace:
    """``trace``, after checking that ``--device`` / ``--rank`` name a GPU / rank it has: a filter that matches
    nothing is a typo, and an empty table would hide it (a :class:`TraceError` lists what there is). Traces
    with no GPU at all are left to the command, which explains that."""
    from gputop_trace.model.kinds import LaneKind

    device, rank = getattr(args, "device", None), getattr(args, "rank", None)
    gpus = sorted({(ln.rank, ln.device) for ln in trace.lanes if ln.kind != LaneKind.CPU_THREAD and ln.device >= 0})
    if (device is None and rank is None) or not gpus:
        return trace
    ranks = sorted({r for r, _ in gpus} | set(trace.meta.ranks))
    if rank is not None and rank not in ranks:
        raise TraceError(f"--rank {rank}: this trace has no rank {rank}; its ranks are {_listed(ranks)}.")
    if device is not None and not any(d == device and (rank is None or r == rank) for r, d in gpus):
        where = f" on rank {rank}" if rank is not None else ""
        have = sorted({d for r, d in gpus if rank is None or r == rank})
        noun = trace.device_words(rank).noun
        raise TraceError(
            f"--device {device}: this trace has no {noun} {device}{where}; its {noun}s{where} are {_listed(have)}."
        )
    return trace


def _listed(values: list[int]) -> str:
    return ", ".join(map(str, values[:20])) + (f" … ({len(values)} in all)" if len(values) > 20 else "")


def _stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def emit_json(doc: dict[str, Any]) -> None:
    """Print a JSON document to stdout."""
    from gputop_trace.report.envelope import dumps

    sys.stdout.write(dumps(doc) + "\n")


def print_warnings(console: Console, trace: Trace) -> None:
    """The trace's warnings, one per line, in yellow."""
    from rich.text import Text

    from gputop_trace.model.trace import python_left_out
    from gputop_trace.safe_text import clean

    for w in trace.meta.warnings:
        console.print(Text("warning: ", style="yellow") + Text(clean(w)))
    left_out = python_left_out(trace)
    if left_out:
        console.print(
            Text(
                f"note: {left_out:,} python_function events were left out (--no-python): GPU times are the same; "
                "idle gaps are blamed on operators and annotations, not Python frames."
            )
        )


class Stderr:
    """Lines on stderr: through Rich when it is installed, plain text otherwise (a bare GPU box may lack it)."""

    def __init__(self) -> None:
        try:
            from rich.console import Console

            self.console: Any = Console(stderr=True, highlight=False, soft_wrap=True)
        except ImportError:
            self.console = None

    def line(self, text: str, style: str = "", prefix: str = "", prefix_style: str = "") -> None:
        from gputop_trace.safe_text import clean

        if self.console is None:
            print(prefix + clean(text), file=sys.stderr, flush=True)
            return
        from rich.text import Text

        self.console.print(Text(prefix, style=prefix_style) + Text(clean(text), style=style))


def confirm_command(title: str, displays: list[str], assume_yes: bool, err: Stderr, *, what: str) -> bool:
    """Show the exact command lines (``displays``, each as a shell would need it typed) under ``title`` on stderr
    and ask before running them; ``assume_yes`` (``--yes``) answers for scripts. Without a terminal to ask on and
    without ``--yes``, refuses with a :class:`TraceError`."""
    err.line(title, style="bold")
    for display in displays:
        err.line(display, prefix="  ")
    if assume_yes:
        return True
    if not sys.stdin.isatty():
        raise TraceError(
            f"Refusing to run {what} without confirmation: standard input is not a terminal. Check the command above "
            "and pass --yes to run it from a script."
        )
    try:
        answer = input("Run it? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")
