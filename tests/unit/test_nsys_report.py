""".nsys-rep input: exported with nsys when it is on PATH (tested with a stand-in nsys script), cached, and a
clear instruction when it is not."""

from __future__ import annotations

import ast
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_file
from gputop_trace.load.nsys_report import cache_dir
from gputop_trace.model.kinds import Kind
from tests.fixtures.nsys_synth import PID, SynthExport

_STAND_IN = """#!{python}
import os, shutil, sys
args = sys.argv[1:]
with open(os.environ["FAKE_NSYS_LOG"], "a") as log:
    log.write(repr(args) + "\\n")
if os.environ.get("FAKE_NSYS_FAIL"):
    sys.stderr.write("Error: could not read the report: unsupported version\\n")
    sys.exit(1)
assert args[:4] == ["export", "--type", "sqlite", "--output"], args
shutil.copyfile(os.environ["FAKE_NSYS_EXPORT"], args[4])
"""


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A .nsys-rep file (opaque bytes), a stand-in ``nsys`` on PATH that "exports" a synthetic export, and a
    private cache folder."""
    ex = SynthExport()
    ex.thread(PID, "python3")
    ex.runtime(100, 200, tid=PID, corr=1, name="cudaLaunchKernel_v7000")
    ex.kernel(300, 900, corr=1, name="my_kernel")
    export = ex.write(tmp_path / "export.sqlite")
    rep = tmp_path / "run.nsys-rep"
    rep.write_bytes(b"\x00QDSTRM\x01" + os.urandom(256))
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nsys"
    script.write_text(_STAND_IN.format(python=sys.executable))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_NSYS_LOG", str(tmp_path / "calls.log"))
    monkeypatch.setenv("FAKE_NSYS_EXPORT", str(export))
    monkeypatch.setenv("GPUTOP_CACHE_DIR", str(tmp_path / "cache"))
    return rep


def calls(tmp_path: Path) -> list[str]:
    log = tmp_path / "calls.log"
    return log.read_text().splitlines() if log.exists() else []


def test_report_is_exported_with_nsys_and_loaded(report: Path, tmp_path: Path) -> None:
    t = load_file(str(report))
    assert t.meta.format == "nsys"
    assert t.meta.source == (str(report),)
    assert [t.event_name(int(i)) for i in t.of_kind(Kind.KERNEL)] == ["my_kernel"]
    cached = t.meta.properties["export_cache"]
    assert cached.startswith(cache_dir()) and os.path.isfile(cached)
    (call,) = calls(tmp_path)
    args = ast.literal_eval(call)
    assert args[:4] == ["export", "--type", "sqlite", "--output"] and args[5:] == [str(report)]
    assert os.path.dirname(args[4]) == cache_dir() and args[4].endswith(".sqlite")
    assert not [f for f in os.listdir(cache_dir()) if f.startswith(".export-")]  # no temporary file left


def test_the_export_is_cached_until_the_report_changes(report: Path, tmp_path: Path) -> None:
    load_file(str(report))
    load_file(str(report))
    assert len(calls(tmp_path)) == 1
    report.write_bytes(report.read_bytes() + b"more")
    load_file(str(report))
    assert len(calls(tmp_path)) == 2


def test_without_nsys_the_error_gives_the_export_command(
    report: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(TraceError) as err:
        load_file(str(report))
    msg = err.value.message
    assert f"nsys export --type sqlite --output {tmp_path}/run.sqlite {report}" in msg
    assert "nsys is not on PATH" in msg
    assert calls(tmp_path) == []


def test_a_failing_nsys_is_reported_with_its_message(report: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_NSYS_FAIL", "1")
    with pytest.raises(TraceError, match=r"nsys could not export .*exit code 1.*unsupported version"):
        load_file(str(report))
    assert not os.listdir(cache_dir())


def test_cli_exit_code_2_without_nsys(report: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PATH": str(tmp_path / "empty-bin"), "COLUMNS": "300"}
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "summary", str(report)],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "nsys export --type sqlite --output" in " ".join(proc.stderr.split())


def test_cli_summary_through_the_stand_in(report: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "gputop_trace", "kernels", "--json", str(report)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert '"name": "my_kernel"' in proc.stdout
