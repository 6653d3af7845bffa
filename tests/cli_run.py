"""Run the command line in-process and capture what it printed."""

from __future__ import annotations

import pytest

from gputop_trace.cli.main import main


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``(exit code, stdout, stderr)`` of ``gputop-trace ARGV``; argparse errors give their exit code."""
    try:
        code = main(list(argv))
    except SystemExit as e:
        code = int(e.code or 0)
    out = capsys.readouterr()
    return code, out.out, out.err
