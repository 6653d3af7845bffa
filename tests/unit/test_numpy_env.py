"""gputop-trace's own process asks numpy for one BLAS thread (numpy's OpenBLAS threads spin on every core for a
while after numpy is imported, and gputop-trace does no linear algebra) and for no huge-page advice (allocations
that stall while the kernel compacts memory); the user's choice wins, and the programs it starts get the
environment as the user had it."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from gputop_trace import numpy_env
from gputop_trace.ncu.drilldown import NcuCommand
from gputop_trace.ncu.runner import NcuRunner
from tests.paths import SAMPLES

SAMPLE = str(SAMPLES / "h200_train_step.json.gz")

_CLI = """
import json, os, sys
from gputop_trace.cli.main import main
from gputop_trace import numpy_env
code = main(["kernels", sys.argv[1], "--json"])
import numpy._core.multiarray as multiarray
child = numpy_env.user_env()
print(json.dumps({"ours": [os.environ.get(k) for k in numpy_env.VARIABLES],
                  "child": [child.get(k) for k in numpy_env.VARIABLES],
                  "hugepage_advice": multiarray._get_madvise_hugepage()}))
"""


def _cli(sample: str, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if k not in numpy_env.VARIABLES}
    out = subprocess.run(
        [sys.executable, "-c", _CLI, sample], capture_output=True, text=True, check=True, env={**clean, **env}
    )
    got: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return got


def test_the_command_line_sets_numpy_up_before_importing_it_and_its_children_get_the_users_setting() -> None:
    # numpy, imported by the command after the settings, gives no huge-page advice
    assert _cli(SAMPLE, {}) == {"ours": ["1", "0"], "child": [None, None], "hugepage_advice": False}
    # a user who chose keeps the choice, here and in the programs started
    chose = {"OPENBLAS_NUM_THREADS": "4", "NUMPY_MADVISE_HUGEPAGE": "1"}
    assert _cli(SAMPLE, chose) == {"ours": ["4", "1"], "child": ["4", "1"], "hugepage_advice": True}


def test_user_env_drops_only_what_was_set_here(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in numpy_env.VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(numpy_env, "_set_here", {})
    numpy_env.prepare()
    assert os.environ["OPENBLAS_NUM_THREADS"] == "1" and os.environ["NUMPY_MADVISE_HUGEPAGE"] == "0"
    assert not set(numpy_env.VARIABLES) & set(numpy_env.user_env())
    command = NcuCommand(argv=("ncu",), report_path="r", log_path="l", launch_skip=0, kernel_base="k", kernel_name="k")
    runner_env = NcuRunner(command).env
    assert runner_env is not None and not set(numpy_env.VARIABLES) & set(runner_env)  # ncu runs the user's program
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")  # changed since (by the user's code): theirs, kept
    assert numpy_env.user_env()["OPENBLAS_NUM_THREADS"] == "8"
