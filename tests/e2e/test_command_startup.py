"""What a command imports on its way (issue 29): `summary --json` and the other JSON commands run without Textual,
Rich, pandas, Dask or pyarrow, and without the modules a trace does not need (the cross-rank matching for one
rank, the torch.compile debug-output reader without ``--inductor-dir``, the other commands' implementations).
Module presence, checked in a fresh interpreter, not timing (timed asserts do not belong in tests)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from tests.conftest import corpus_file

#: never on the path of a command that writes JSON
HEAVY = ("textual", "rich", "pandas", "dask", "pyarrow", "gputop_trace.tui", "gputop_trace.presentation", "subprocess")
#: nor what a small trace's command does not need: numpy's masked arrays (imported by a plain ``np.unique``,
#: ``np.isin`` or ``np.percentile``: the model's ``distinct``, ``isin`` and ``percentile`` stand in), the thread
#: pools of large loads and the logging they bring
UNNEEDED = ("numpy.ma", "concurrent.futures", "logging")
EPOCH_TRACE = "external/negative_queue_length_values_check/rank0.json.gz"
GPT_TRACE = "kineto/h200_gpt_train_small.json.gz"

#: runs the command in-process with stdout captured, then prints the modules it imported as a JSON list
_PROBE = """
import contextlib, io, json, sys
from gputop_trace.cli.main import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    code = main(sys.argv[1:])
json.loads(out.getvalue())  # the command wrote a whole JSON document
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(*argv: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], capture_output=True, text=True, check=False, env=_env()
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["code"] == 0
    return set(got["modules"])


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "GPUTOP_TRACE_NO_CACHE": "1"}


def _present(modules: set[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


@pytest.mark.corpus
@pytest.mark.parametrize("trace", [EPOCH_TRACE, GPT_TRACE])
def test_summary_json_imports_nothing_heavy(trace: str) -> None:
    mods = _imported("summary", "--json", "--no-cache", corpus_file(trace))
    assert _present(mods, HEAVY) == []
    assert _present(mods, UNNEEDED) == []
    # one rank: no cross-rank matching; no --inductor-dir: no debug-output reader
    assert _present(mods, ("gputop_trace.analysis.ranks.stragglers", "gputop_trace.parsers.inductor_debug")) == []
    # the summary's own work was done (a probe that ran nothing would pass the checks above)
    assert {"gputop_trace.analysis.findings.assemble", "gputop_trace.parsers.chrome.loader"} <= mods


@pytest.mark.corpus
@pytest.mark.parametrize("command", ["kernels", "gaps", "transfers", "ranges", "ops"])
def test_json_commands_import_only_their_analyses(command: str) -> None:
    mods = _imported(command, "--json", "--no-cache", corpus_file(EPOCH_TRACE))
    assert _present(mods, HEAVY) == []
    assert _present(mods, UNNEEDED) == []
    # the findings (and with them every detector) belong to `summary`, not to these commands
    assert _present(mods, ("gputop_trace.analysis.findings.assemble", "gputop_trace.report.summary")) == []


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("command", ["view", "summary", "kernels", "gaps", "record", "ncu"])
def test_a_command_alone_parses_and_helps_as_with_all_commands(command: str) -> None:
    """The parser main() builds for one command (only its own registered) has that command's options and help,
    word for word; an unknown word or an option first gets every command."""
    from gputop_trace.cli.main import build_parser

    alone, full = _commands(build_parser(command)), _commands(build_parser())
    assert list(alone) == [command]
    assert alone[command].format_help() == full[command].format_help()
    for other in ("bogus", "--version", None):
        assert list(_commands(build_parser(other))) == list(full)


def test_an_unknown_command_still_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    from gputop_trace.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["bogus"])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "invalid choice: 'bogus'" in err and "'summary'" in err and "'record'" in err
