"""The argument lists ``gputop-trace record`` runs (never through a shell), and where ``nsys`` is.

- :func:`torch_command`: the user's Python runs our launcher (:mod:`gputop_trace.capture.torch_launcher`, by its
  file path) which runs the unmodified script under ``torch.profiler``.
- :func:`nsys_profile_command`: ``nsys profile --trace=cuda,nvtx,osrt`` with CPU sampling and context-switch
  tracing off (they add nothing this tool reads and make the report large) and ``--force-overwrite=true``, writing
  ``BASE.nsys-rep``; the SQLite export is ``nsys export --type sqlite`` on it
  (:func:`gputop_trace.load.nsys_report.export_command`).
"""

from __future__ import annotations

import glob
import os
import shutil
import time
from collections.abc import Sequence

#: The launcher file the user's Python runs.
TORCH_LAUNCHER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_launcher.py")
#: What ``record --nsys`` asks nsys to trace.
NSYS_TRACE = "cuda,nvtx,osrt"
#: Where Nsight Systems is usually installed, when it is not on PATH.
NSYS_PLACES = ("/usr/local/cuda/bin/nsys", "/opt/nvidia/nsight-systems/*/bin/nsys", "/usr/local/cuda-*/bin/nsys")

NSYS_MISSING = (
    "nsys (Nsight Systems) is not installed or not on PATH. Get it with the CUDA toolkit (it lands in "
    "/usr/local/cuda/bin), from https://developer.nvidia.com/nsight-systems, or with your package manager "
    "(apt install nsight-systems-cli from NVIDIA's CUDA repository); then put it on PATH, set GPUTOP_NSYS, or pass "
    "--nsys-path PATH. Without nsys, record a PyTorch trace with: gputop-trace record --torch -- python train.py"
)


def find_nsys(explicit: str | None = None) -> str | None:
    """The nsys executable: ``explicit``, then ``$GPUTOP_NSYS``, then PATH, then :data:`NSYS_PLACES`."""
    for cand in (explicit, os.environ.get("GPUTOP_NSYS")):
        if cand:
            return shutil.which(cand) or (cand if os.access(cand, os.X_OK) else None)
    found = shutil.which("nsys")
    if found:
        return found
    for pattern in NSYS_PLACES:
        for path in sorted(glob.glob(pattern), reverse=True):
            if os.access(path, os.X_OK):
                return path
    return None


def default_output(target: Sequence[str], suffix: str, *, now: float | None = None) -> str:
    """``<script stem>-<YYYYmmdd-HHMMSS><suffix>`` in the current folder."""
    script = next((a for a in target if a.endswith(".py")), target[0] if target else "run")
    stem = os.path.basename(script).rsplit(".", 1)[0] or "run"
    return f"{stem}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}{suffix}"


def is_python(exe: str) -> bool:
    """Whether ``exe`` names a Python interpreter (``python``, ``python3.11``, ``/venv/bin/python``)."""
    return os.path.basename(exe).startswith("python")


def torch_command(
    target: Sequence[str], out: str, *, steps: int = 3, wait: int = 1, warmup: int = 1, with_stack: bool = True
) -> list[str]:
    """``PYTHON torch_launcher.py --out OUT --steps N --wait W --warmup U [--no-stack] -- SCRIPT ARGS...`` for a
    target ``PYTHON SCRIPT ARGS...``. Raises ValueError when the target is not a Python script run by Python."""
    if len(target) < 2 or not is_python(target[0]) or target[1].startswith("-"):
        raise ValueError(
            "record --torch runs a Python script: give it as 'python train.py ARGS...' (python -m and -c are not "
            "supported)"
        )
    if steps < 1 or wait < 0 or warmup < 0:
        raise ValueError("--steps must be 1 or more, --wait and --warmup 0 or more")
    argv = [target[0], TORCH_LAUNCHER, "--out", out, "--steps", str(steps), "--wait", str(wait)]
    argv += ["--warmup", str(warmup)] + ([] if with_stack else ["--no-stack"])
    return [*argv, "--", *target[1:]]


def nsys_profile_command(target: Sequence[str], base: str, nsys: str = "nsys") -> list[str]:
    """``nsys profile`` of ``target`` into ``BASE.nsys-rep`` (``base`` without the suffix)."""
    if not target:
        raise ValueError("the command to profile is empty")
    return [
        nsys,
        "profile",
        f"--trace={NSYS_TRACE}",
        "--sample=none",
        "--cpuctxsw=none",
        "--force-overwrite=true",
        "--output",
        base,
        "--",
        *target,
    ]
