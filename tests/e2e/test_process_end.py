"""How a command's process ends (gputop_trace/cli/process_end.py): without Python's teardown, but with every byte
of its output written, its exit code kept, its ``atexit`` handlers run, and another thread still working waited
for (the usual exit then)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.paths import SAMPLES

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")

#: the console script (gputop_trace.cli.main:entry) with the given words; an atexit handler writes a mark to stderr
_ENTRY = """
import atexit, sys, threading, time
atexit.register(lambda: print("atexit ran", file=sys.stderr))
if sys.argv[1] == "--with-thread":
    del sys.argv[1]
    def work():
        time.sleep(0.3)
        print("thread done", file=sys.stderr)
    threading.Thread(target=work).start()
sys.argv = ["gputop-trace", *sys.argv[1:]]
from gputop_trace.cli.main import entry
entry()
"""


def _run(*words: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GPUTOP_TRACE_NO_CACHE": "1"}
    env.pop("GPUTOP_FULL_EXIT", None)
    return subprocess.run([sys.executable, "-c", _ENTRY, *words], capture_output=True, text=True, env=env, check=False)


def test_a_piped_summary_arrives_whole_and_atexit_handlers_run() -> None:
    proc = _run("summary", "--json", SAMPLE)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)  # every byte written before the process ended
    assert doc["findings"]
    assert "atexit ran" in proc.stderr


def test_the_exit_code_of_a_failed_command_is_kept() -> None:
    proc = _run("summary", "--json", "/nonexistent/trace.json")
    assert proc.returncode == 2
    assert "gputop-trace: error:" in proc.stderr and "Traceback" not in proc.stderr
    assert "atexit ran" in proc.stderr


def test_another_thread_still_working_is_waited_for() -> None:
    proc = _run("--with-thread", "summary", "--json", SAMPLE)
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)
    assert "thread done" in proc.stderr and "atexit ran" in proc.stderr
