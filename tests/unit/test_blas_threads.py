"""gputop-trace's own process asks for one BLAS thread (numpy's OpenBLAS threads spin on every core for a while
after numpy is imported, and gputop-trace does no linear algebra); the user's choice wins, and the programs it
starts get the environment as the user had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gputop_trace import blas_threads
from gputop_trace.ncu.drilldown import NcuCommand
from gputop_trace.ncu.runner import NcuRunner
from tests.paths import SAMPLES

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")

_CLI = """
import json, os, sys
from gputop_trace.cli.main import main
from gputop_trace import blas_threads
code = main(["kernels", sys.argv[1], "--json"])
print(json.dumps({"ours": os.environ.get("OPENBLAS_NUM_THREADS"),
                  "child": blas_threads.user_env().get("OPENBLAS_NUM_THREADS"), "numpy_first": "numpy" in sys.modules}))
"""


def _cli(sample: str, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in blas_threads.VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", _CLI, sample], capture_output=True, text=True, check=True, env={**clean, **env}
    )
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_the_command_line_runs_with_one_blas_thread_and_its_children_with_the_users_setting() -> None:
    # (numpy was imported by the command, after the setting)
    assert _cli(SAMPLE, {}) == {"ours": "1", "child": None, "numpy_first": True}
    # a user who chose keeps the choice, here and in the programs started
    assert _cli(SAMPLE, {"OPENBLAS_NUM_THREADS": "4"}) == {"ours": "4", "child": "4", "numpy_first": True}


def test_user_env_drops_only_what_was_set_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    monkeypatch.setattr(blas_threads, "_set_here", {})
    blas_threads.single_blas_thread()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1"
    assert "OPENBLAS_NUM_THREADS" not in blas_threads.user_env()
    command = NcuCommand(argv=("ncu",), report_path="r", log_path="l", launch_skip=0, kernel_base="k", kernel_name="k")
    runner_env = NcuRunner(command).env
    assert runner_env is not None and "OPENBLAS_NUM_THREADS" not in runner_env  # ncu runs the user's program
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")  # changed since (by the user's code): theirs, kept
    assert blas_threads.user_env()["OPENBLAS_NUM_THREADS"] == "8"
