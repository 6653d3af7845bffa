"""Bad input gets one clear paragraph (what, where, what to do), exit code 2 and never a traceback: permissions,
options, and what an empty trace shows. Broken files of every kind are cases of tests/test_bad_input_matrix.py."""

from __future__ import annotations

import builtins
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gputop_trace.errors import TraceError
from gputop_trace.load.loader import load_paths
from tests.paths import SAMPLES


def _cli(*args: str, cwd: Path | None = None, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "gputop_trace", *args],
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


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("summary", "secret.json"),
        ("kernels", "secret.json"),
        ("gaps", "secret.json"),
        ("transfers", "secret.json"),
        ("ranges", "secret.json"),
        ("ranks", "secret.json"),
        ("summary", "secret.sqlite"),
        ("ncu", "secret.csv"),
        ("ncu", "secret.ncu-rep"),
        ("fleet", "secret.json"),
    ],
)
def test_permission_denied_cli(tmp_path: Path, command: str, name: str) -> None:
    p = tmp_path / name
    p.write_text('{"traceEvents": []}')
    p.chmod(0)
    prefix: tuple[str, ...] = ()
    if os.geteuid() == 0:  # root reads any file: run the command as root without that right (CI runs as root)
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("running as root, and setpriv (util-linux) is not installed to drop the right to read any file")
        prefix = (setpriv, "--bounding-set=-dac_override,-dac_read_search")
    _assert_clean_error(_cli(command, str(p), prefix=prefix), "ermission denied")


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


@pytest.mark.parametrize("command", ["summary", "kernels", "ncu", "fleet"])
def test_a_pipe_is_refused_at_once_not_waited_on(tmp_path: Path, command: str) -> None:
    """A named pipe (or ``<(...)``, which is one) nobody writes to would block the first open() forever."""
    fifo = tmp_path / "trace.json.gz"
    os.mkfifo(fifo)
    proc = _cli(command, str(fifo))  # _cli's timeout fails the test instead of hanging it
    _assert_clean_error(proc, "is a pipe, not a file", "save it to a file first")


def test_process_substitution_is_explained(tmp_path: Path) -> None:
    sample = SAMPLES / "h200_train_step.json.gz"
    proc = subprocess.run(
        ["bash", "-c", '"$0" -m gputop_trace summary <(cat "$1")', sys.executable, str(sample)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
        check=False,
    )
    _assert_clean_error(proc, "/dev/fd/", "is a pipe, not a file")


def test_standard_input_is_explained() -> None:
    _assert_clean_error(_cli("summary", "-"), "standard input is not supported")
