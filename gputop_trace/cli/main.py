"""The ``gputop-trace`` command line: one entry point, one sub-command per module in ``commands/``.

Exit codes: 0 success, 1 findings above ``--fail-on`` thresholds, 2 bad input (a one-paragraph message on
stderr, never a traceback), 130 interrupted, 70 an internal error (a bug: the message says how to report it).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from gputop_trace import __version__, numpy_env
from gputop_trace.cli import command_modules
from gputop_trace.errors import LoadCancelled, TraceError

EXIT_OK, EXIT_FINDINGS, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 70, 130


class _Parser(argparse.ArgumentParser):
    """argparse with exit code 2 and a hint, on every sub-command."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\nRun '{self.prog} --help' for the options.\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The full argument parser (every sub-command registered); with ``only``, the name of a sub-command, just that
    one (what a run of that command needs: its options, help and errors are the same, and building the other
    commands' parsers is left out of its start-up)."""
    parser = _Parser(
        prog="gputop-trace",
        description=(
            "Keyboard-driven terminal timeline browser and analyser for GPU profiles: PyTorch/Kineto and JAX "
            "Chrome traces, Nsight Systems SQLite exports, Nsight Compute reports."
        ),
        epilog="Run 'gputop-trace COMMAND --help' for a command's options. "
        "With no PATH, 'view' opens the bundled sample.",
    )
    parser.add_argument("--version", action="version", version=f"gputop-trace {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in command_modules(only):  # only the chosen command's module is imported; none matching: all
        module.register(sub)
    return parser


def _print_error(message: str) -> None:
    try:
        from rich.console import Console
        from rich.text import Text
    except ImportError:  # a bare GPU box without Rich: plain text
        from gputop_trace.safe_text import clean

        print(f"gputop-trace: error: {clean(message)}", file=sys.stderr)
        return

    from gputop_trace.safe_text import clean

    console = Console(stderr=True, highlight=False, soft_wrap=False)
    console.print(Text("gputop-trace: error: ", style="bold red") + Text(clean(message)))


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    numpy_env.prepare()  # before any command imports numpy (gputop_trace/numpy_env.py)
    words = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(words[0] if words and not words[0].startswith("-") else None)
    args = parser.parse_args(words)
    if not getattr(args, "command", None):
        parser.print_help()
        return EXIT_OK
    try:
        code: int = args.func(args)
        return code
    except TraceError as e:
        _print_error(e.message)
        return EXIT_BAD_INPUT
    except (KeyboardInterrupt, LoadCancelled):
        print("gputop-trace: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except MemoryError:
        _print_error(
            "Ran out of memory. The trace is larger than this machine can hold: close other programs, use a "
            "machine with more memory, or record a shorter profile (fewer steps, no with_stack)."
        )
        return EXIT_BAD_INPUT
    except Exception as e:  # a bug in this program: say so plainly
        if os.environ.get("GPUTOP_DEBUG"):
            import traceback

            traceback.print_exc()
        _print_error(
            f"internal error: {type(e).__name__}: {e}. This is a bug in gputop-trace; please report it with the "
            "command you ran (set GPUTOP_DEBUG=1 to print the traceback)."
        )
        return EXIT_INTERNAL


def entry() -> None:
    """Console-script entry point: the command, then the process ends without Python's teardown where nothing
    needs it (:mod:`gputop_trace.cli.process_end`)."""
    code = main()
    from gputop_trace.cli.process_end import end_process

    end_process(code)


if __name__ == "__main__":  # pragma: no cover
    entry()
