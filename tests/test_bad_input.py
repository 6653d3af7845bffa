"""Bad input gets one clear paragraph (what, where, what to do), exit code 2 and never a traceback."""

from __future__ import annotations

import builtins
import gzip
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.loader import load_paths


def _cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputop_trace", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )


def _assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    err = " ".join(proc.stderr.split())
    assert err.startswith("gputop-trace: error:"), err
    for n in needles:
        assert n in err, (n, err)


def test_missing_file(tmp_path: Path) -> None:
    _assert_clean_error(_cli("summary", str(tmp_path / "nope.json")), "No such file", "nope.json")


def test_directory_with_no_traces(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("hello")
    _assert_clean_error(_cli("summary", str(tmp_path)), "holds no traces", ".json")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.json"
    p.write_bytes(b"")
    _assert_clean_error(_cli("summary", str(p)), "empty", "record the profile again")


def test_empty_gzip(tmp_path: Path) -> None:
    p = tmp_path / "empty.json.gz"
    p.write_bytes(gzip.compress(b""))
    _assert_clean_error(_cli("summary", str(p)), "not a Chrome trace", "empty")


def test_not_json(tmp_path: Path) -> None:
    p = tmp_path / "notes.json"
    p.write_text("this is a log file, not json\n")
    _assert_clean_error(_cli("summary", str(p)), "notes.json", "not a profile")


def test_json_that_is_not_a_trace(tmp_path: Path) -> None:
    p = tmp_path / "config.json"
    p.write_text('{"model": "gpt", "layers": 12}')
    _assert_clean_error(_cli("summary", str(p)), "not a Chrome trace", "model, layers")


def test_json_array_of_non_events(tmp_path: Path) -> None:
    p = tmp_path / "list.json"
    p.write_text("[1, 2, 3]")
    _assert_clean_error(_cli("summary", str(p)), "none of its 3 trace entries is a usable event")


def test_binary_file(tmp_path: Path) -> None:
    p = tmp_path / "core.bin"
    p.write_bytes(bytes(range(256)) * 4)
    _assert_clean_error(_cli("summary", str(p)), "binary file")


def test_text_file_named_sqlite(tmp_path: Path) -> None:
    p = tmp_path / "report.sqlite"
    p.write_text("not a database")
    _assert_clean_error(_cli("summary", str(p)), "not a SQLite database", "nsys export --type sqlite")


def test_ncu_report_given_to_summary(tmp_path: Path) -> None:
    p = tmp_path / "prof.ncu-rep"
    p.write_bytes(b"NVIDIA Nsight Compute report stand-in")
    _assert_clean_error(_cli("summary", str(p)), "Nsight Compute report", "gputop-trace ncu")


def test_permission_denied_is_explained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "secret.json"
    p.write_text('{"traceEvents": []}')
    real_open = builtins.open

    def deny(file: Any, *a: Any, **k: Any) -> Any:
        if str(file) == str(p):
            raise PermissionError(13, "Permission denied", str(file))
        return real_open(file, *a, **k)

    monkeypatch.setattr(builtins, "open", deny)
    with pytest.raises(TraceError, match=r"Permission denied reading .*secret\.json.*chmod"):
        load_paths([str(p)])


@pytest.mark.skipif(os.geteuid() == 0, reason="root can read a chmod 000 file; the in-process test covers this")
def test_permission_denied_cli(tmp_path: Path) -> None:
    p = tmp_path / "secret.json"
    p.write_text('{"traceEvents": []}')
    p.chmod(0)
    _assert_clean_error(_cli("summary", str(p)), "Permission denied")


def test_unknown_option_exits_2() -> None:
    proc = _cli("summary", "--no-such-option")
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_version_and_help() -> None:
    from gputop_trace import __version__

    proc = _cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"gputop-trace {__version__}"
    proc = _cli("--help")
    assert proc.returncode == 0 and "summary" in proc.stdout


def test_empty_trace_events_loads_with_nothing_to_show(tmp_path: Path) -> None:
    p = tmp_path / "t.json"
    p.write_text('{"traceEvents": []}')
    proc = _cli("summary", str(p))
    assert proc.returncode == 0, proc.stderr
    assert "No GPU activity" in proc.stdout
    assert "holds no events" in proc.stdout
