"""No execution from data: nothing from a trace reaches a shell or an interpreter.

- The package source (every module of the wheel) is scanned: no ``shell=True``, ``os.system``, ``os.popen``,
  ``os.exec*``/``os.spawn*``, ``eval``/``exec``, pickle or marshal; every place that starts a process is listed
  here and passes an argument list, never a string.
- A kernel name full of shell and regex metacharacters, read from a trace, becomes exactly one escaped ``-k``
  argument; the command shown to the user pastes back into bash as exactly that argument list; ncu (a stand-in
  that records its argv) receives it untouched, and nothing the name spells out runs.
- ``.nsys-rep`` reports are exported with ``nsys`` (a stand-in) given the paths as separate arguments, the report
  as an absolute path (a name starting with ``-`` is no option), the export written to the user cache folder.
"""

from __future__ import annotations

import ast
import asyncio
import json
import os
import shlex
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import gputop_trace
from gputop_trace.load.loader import load_paths
from gputop_trace.model.kinds import Kind
from gputop_trace.ncu.drilldown import command_for_request, escape_ncu_regex, request_for_event
from gputop_trace.ncu.report_reader import kernels_from_ncu_cli
from gputop_trace.ncu.runner import NcuRunner
from tests.fixtures.nsys_synth import SynthExport
from tests.paths import ROOT

PACKAGE = Path(gputop_trace.__file__).resolve().parent  # gputop_trace/ (parsers, analysis, tui are mapped in)
SOURCE_DIRS = [ROOT / d for d in ("gputop_trace", "parsers", "analysis", "tui")]

#: every call that starts a process: (file, function called) — a new one must be reviewed and added here
PROCESS_CALLS = {
    ("gputop_trace/ncu/runner.py", "asyncio.create_subprocess_exec"),
    ("gputop_trace/ncu/report_reader.py", "subprocess.run"),
    ("gputop_trace/load/nsys_report.py", "subprocess.run"),
}
FORBIDDEN = {
    "os.system",
    "os.popen",
    "os.execv",
    "os.execve",
    "os.execvp",
    "os.execvpe",
    "os.execl",
    "os.execlp",
    "os.spawnv",
    "os.spawnvp",
    "os.spawnl",
    "os.posix_spawn",
    "os.posix_spawnp",
    "pty.spawn",
    "subprocess.getoutput",
    "subprocess.getstatusoutput",
    "asyncio.create_subprocess_shell",
    "eval",
    "exec",
    "compile",
    "pickle.load",
    "pickle.loads",
    "marshal.load",
    "marshal.loads",
    "shelve.open",
}
STARTS_PROCESS = {
    "subprocess.run",
    "subprocess.call",
    "subprocess.check_call",
    "subprocess.check_output",
    "subprocess.Popen",
    "asyncio.create_subprocess_exec",
}


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def _calls() -> list[tuple[str, int, str, ast.Call]]:
    out = []
    for folder in SOURCE_DIRS:
        for path in sorted(folder.rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), rel)):
                if isinstance(node, ast.Call):
                    out.append((rel, node.lineno, _dotted(node.func), node))
    return out


def test_the_source_never_runs_a_shell_or_evaluates_data() -> None:
    calls = _calls()
    assert len(calls) > 1000  # the scan really read the package
    bad = [(f, line, name) for f, line, name, _ in calls if name in FORBIDDEN]
    assert bad == []
    shell = [(f, line) for f, line, _, c in calls for k in c.keywords if k.arg == "shell"]
    assert shell == []
    loads = [(f, line) for f, line, name, c in calls if name.endswith(("np.load", "numpy.load"))
             if not any(k.arg == "allow_pickle" and isinstance(k.value, ast.Constant) and k.value.value is False
                        for k in c.keywords)]  # fmt: skip
    assert loads == [], "numpy.load without allow_pickle=False"


def test_every_process_is_started_from_an_argument_list() -> None:
    sites = {(f, name) for f, _, name, _ in _calls() if name in STARTS_PROCESS}
    assert sites == PROCESS_CALLS
    for f, line, name, call in _calls():
        if name not in STARTS_PROCESS:
            continue
        first = call.args[0] if call.args else None
        # never a literal string, an f-string or string arithmetic: a list, a name bound to one, or *argv
        assert not isinstance(first, (ast.Constant, ast.JoinedStr, ast.BinOp)), (f, line)


#: a function name (no spaces or parentheses, which ncu's function-name base would cut at) made of shell and
#: regex metacharacters
NASTY = "k$IFS;touch${IFS}pwned`touch${IFS}pwned2`|rm${IFS}-rf${IFS}~&x.*+?[2]{3}^\\'\"$HOME>out"
#: what ncu must receive for it: every regex metacharacter escaped with a backslash, nothing else changed
NASTY_K = (
    "regex:^k\\$IFS;touch\\$\\{IFS\\}pwned`touch\\$\\{IFS\\}pwned2`\\|rm\\$\\{IFS\\}-rf\\$\\{IFS\\}~&"
    "x\\.\\*\\+\\?\\[2\\]\\{3\\}\\^\\\\'\"\\$HOME>out$"
)


def _trace_with_kernel(path: Path, name: str) -> Path:
    evs = [
        {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1, "dur": 2,
         "args": {"correlation": 1}},
        {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": 4, "dur": 5,
         "args": {"correlation": 1, "device": 0, "stream": 7}},
    ]  # fmt: skip
    path.write_text(json.dumps({"traceEvents": evs}))
    return path


def test_escaping_by_hand_matches() -> None:
    assert "regex:^" + escape_ncu_regex(NASTY) + "$" == NASTY_K


@pytest.mark.corpus
def test_a_kernel_name_from_a_trace_reaches_ncu_as_one_exact_argument(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    trace = load_paths([str(_trace_with_kernel(tmp_path / "t.json", NASTY))])
    kernel = int(trace.of_kind(Kind.KERNEL)[0])
    request = request_for_event(trace, kernel, str(tmp_path / "t.json"))
    assert request.raw_name == NASTY
    cmd = command_for_request(request, [sys.executable, "-c", "pass"], ncu="ncu")
    k = cmd.argv[cmd.argv.index("-k") + 1]
    assert k == NASTY_K
    assert cmd.argv[cmd.argv.index("--kernel-name-base") + 1] == "function"
    # the line shown to the user pastes back into bash as exactly this argument list
    shown = subprocess.run(["bash", "-c", "printf '%s\\0' " + cmd.display()], capture_output=True, check=True)
    assert shown.stdout.decode().split("\0")[:-1] == list(cmd.argv)
    assert tuple(shlex.split(cmd.display())) == cmd.argv
    # run it: the stand-in ncu records the argv it was given
    result = asyncio.run(NcuRunner(cmd, cwd=str(tmp_path), timeout_s=60).run())
    assert result.returncode == 0
    (received,) = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert received == list(cmd.argv[1:])
    assert not list(tmp_path.rglob("pwned*")) and not Path("out").exists()  # nothing the name spelled out ran


@pytest.mark.corpus
def test_ncu_import_passes_the_report_path_as_one_argument(
    fake_ncu: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import CORPUS

    report = tmp_path / "-o $(touch pwned) ;x.ncu-rep"
    monkeypatch.setenv("FAKE_NCU_IMPORT_STEM", "tc")  # the stand-in replays the corpus pages of tc.ncu-rep
    report.write_bytes((CORPUS / "ncu" / "tc.ncu-rep").read_bytes())
    kernels = kernels_from_ncu_cli("ncu", str(report))
    assert kernels
    calls = [json.loads(line) for line in fake_ncu.read_text().splitlines()]
    assert [c[:2] for c in calls] == [["-i", str(report)], ["-i", str(report)]]
    assert not list(tmp_path.rglob("pwned*"))


FAKE_NSYS = """#!{python}
import json, os, shutil, sys
with open(os.environ["FAKE_NSYS_LOG"], "a") as f:
    f.write(json.dumps(sys.argv[1:]) + "\\n")
args = sys.argv[1:]
shutil.copyfile(os.environ["FAKE_NSYS_EXPORT"], args[args.index("--output") + 1])
"""


def test_nsys_report_export_gets_an_argument_list_and_writes_to_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    nsys = bin_dir / "nsys"
    nsys.write_text(FAKE_NSYS.format(python=sys.executable))
    nsys.chmod(stat.S_IRWXU)
    export = tmp_path / "export.sqlite"
    ex = SynthExport()
    ex.thread(4242, "main")
    ex.gpu(0)
    ex.runtime(1000, 1500, tid=4242, corr=5, name="cudaLaunchKernel_v7000")
    ex.kernel(2000, 3000, corr=5)
    ex.write(export)
    reports = tmp_path / "reports"
    reports.mkdir()
    report = reports / "-rf $(touch pwned);`id`.nsys-rep"
    report.write_bytes(b"NSYS report stand-in")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(tmp_path / "nsys-argv.jsonl"))
    monkeypatch.setenv("FAKE_NSYS_EXPORT", str(export))
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("GPUTOP_TRACE_NO_CACHE", "1")
    monkeypatch.chdir(reports)
    trace = load_paths([report.name])  # a relative name that starts with "-"
    assert trace.count_by_kind()[Kind.KERNEL] == 1
    (argv,) = [json.loads(line) for line in (tmp_path / "nsys-argv.jsonl").read_text().splitlines()]
    assert argv[:4] == ["export", "--type", "sqlite", "--output"]
    assert argv[4].startswith(str(tmp_path / "cache")) and argv[5] == str(report)  # absolute: never an option
    assert sorted(os.listdir(reports)) == [report.name]  # the export went to the cache, not next to the report
    assert not list(tmp_path.rglob("pwned*"))
    assert sqlite3.connect(trace.meta.properties["export_cache"]).execute("SELECT 1").fetchone() == (1,)
