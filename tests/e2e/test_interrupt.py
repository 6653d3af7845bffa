"""Ctrl+C while a trace loads: the command exits with code 130 and one short line, never a traceback, and leaves
nothing behind — no temporary files, no half-written cache entry, no worker process still parsing. The same for
``view``: Ctrl+C on its loading screen (in a real terminal, through tmux)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from gputop_trace.load.cache_entry import TMP_PREFIX

EVENT = (
    b'{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.5,"dur":1.5,'
    b'"args":{"device":0,"stream":7,"correlation":%d}}'
)


def _events(n: int) -> bytes:
    return b",\n".join(EVENT % (i % 50, i * 3, i) for i in range(n))


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """About 120 MB of Kineto-style JSON (a second or more to load here)."""
    path = tmp_path_factory.mktemp("big") / "big.json"
    path.write_bytes(b'{"traceEvents":[' + _events(900_000) + b"]}")
    return path


@pytest.fixture(scope="module")
def big_ranks(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two ranks of about 60 MB each: enough data for the loader to parse them in parallel processes."""
    folder = tmp_path_factory.mktemp("ranks")
    body = _events(450_000)
    for r in (0, 1):
        (folder / f"rank{r}.json").write_bytes(
            b'{"distributedInfo":{"rank":%d,"world_size":2},"traceEvents":[' % r + body + b"]}"
        )
    return folder


def _env(tmp: Path, token: str = "") -> dict[str, str]:
    (tmp / "tmp").mkdir(exist_ok=True)
    return {
        **os.environ,
        "GPUTOP_TRACE_CACHE_DIR": str(tmp / "cache"),
        "TMPDIR": str(tmp / "tmp"),
        "GPUTOP_INTERRUPT_TEST": token,
        "COLUMNS": "200",
    }


def _position_in(pid: int, path: Path) -> int:
    """How far process ``pid`` has read into ``path`` (-1 while it does not have the file open)."""
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            if os.readlink(f"/proc/{pid}/fd/{fd}") == str(path):
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    return int(f.readline().split()[1])  # "pos:\t<offset>"
    except (OSError, ValueError, IndexError):
        pass
    return -1


def _processes_with(token: str) -> list[int]:
    """Processes whose environment carries ``token`` (the command and anything it started)."""
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if f"GPUTOP_INTERRUPT_TEST={token}".encode() in f.read():
                    found.append(int(d))
        except OSError:
            continue
    return found


def _assert_interrupted_cleanly(code: int, err: str, tmp: Path) -> None:
    assert code == 130, err
    assert err == "gputop-trace: interrupted\n"
    assert sorted(os.listdir(tmp / "tmp")) == []  # no temporary file left
    cache = tmp / "cache"
    assert not cache.exists() or not [e for e in os.listdir(cache) if e.startswith(TMP_PREFIX)]


@pytest.mark.skipif(not os.path.exists("/proc/self/fdinfo"), reason="watches /proc/PID/fdinfo to interrupt mid-load")
@pytest.mark.parametrize("fraction", [0.0, 0.5, 0.9])
def test_ctrl_c_while_summary_loads(big_trace: Path, tmp_path: Path, fraction: float) -> None:
    size = big_trace.stat().st_size
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputop_trace", "summary", str(big_trace)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path),
    )
    end = time.monotonic() + 60
    while proc.poll() is None and _position_in(proc.pid, big_trace) < fraction * size and time.monotonic() < end:
        time.sleep(0.002)  # until the loader has read that far into the file
    assert proc.poll() is None, "the load finished before it could be interrupted"
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    _assert_interrupted_cleanly(proc.returncode, err, tmp_path)
    assert out == ""


@pytest.mark.skipif(not os.path.exists("/proc/self/environ"), reason="finds leftover processes through /proc")
def test_ctrl_c_while_ranks_load_in_parallel_stops_every_worker(big_ranks: Path, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputop_trace", "summary", str(big_ranks)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(tmp_path, token),
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    files = sorted(big_ranks.iterdir())

    def worker_reading() -> bool:
        return any(_position_in(pid, f) > 0 for pid in _processes_with(token) if pid != proc.pid for f in files)

    end = time.monotonic() + 60
    while proc.poll() is None and not worker_reading() and time.monotonic() < end:
        time.sleep(0.005)  # until a worker process is parsing a rank
    assert proc.poll() is None and worker_reading()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl+C in a terminal does: the whole foreground group
    _, err = proc.communicate(timeout=60)
    _assert_interrupted_cleanly(proc.returncode, err, tmp_path)
    end = time.monotonic() + 10
    while _processes_with(token) and time.monotonic() < end:
        time.sleep(0.05)
    assert _processes_with(token) == [], "a worker process outlived Ctrl+C"


@pytest.mark.slow
def test_ctrl_c_on_the_loading_screen_of_view(big_trace: Path, tmp_path: Path) -> None:
    if not shutil.which("tmux"):
        pytest.fail("tmux is needed for this test (apt-get install tmux)")
    exe = Path(sys.executable).parent / "gputop-trace"
    socket = f"gputop-intr-{uuid.uuid4().hex[:8]}"
    status = tmp_path / "status"
    env = {**_env(tmp_path), "TERM": "xterm-256color"}
    for var in ("NO_COLOR", "COLUMNS", "LINES"):
        env.pop(var, None)

    def tmux(*args: str) -> str:
        return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, check=True, env=env,
                              timeout=20).stdout  # fmt: skip

    try:
        tmux("-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "100", "-y", "30")
        tmux("set-option", "-t", "t", "remain-on-exit", "on")
        # the exit code is written by a wrapper; the command reaches it as positional parameters, not parsed
        tmux("respawn-pane", "-k", "-t", "t", "--", "sh", "-c", '"$@"; echo $? > "$0"', str(status),
             str(exe) if exe.exists() else "gputop-trace", "view", str(big_trace))  # fmt: skip
        end = time.monotonic() + 30
        while "Opening big.json" not in tmux("capture-pane", "-p", "-t", "t") and time.monotonic() < end:
            time.sleep(0.02)
        assert "Esc cancels" in tmux("capture-pane", "-p", "-t", "t")
        tmux("send-keys", "-t", "t", "C-c")
        end = time.monotonic() + 30
        while not (status.exists() and status.read_text().strip()) and time.monotonic() < end:
            time.sleep(0.05)
        assert status.read_text().strip() == "130"
        assert "Traceback" not in tmux("capture-pane", "-p", "-t", "t", "-S", "-200")
        assert sorted(os.listdir(tmp_path / "tmp")) == []
    finally:
        subprocess.run(["tmux", "-L", socket, "kill-server"], capture_output=True, check=False)
