"""What numpy reads from the environment when it is imported, set for gputop-trace's own process; the user's
environment for the programs it starts.

- ``OPENBLAS_NUM_THREADS=1``: numpy's BLAS (OpenBLAS in numpy's wheels) starts a thread per core when numpy is
  imported, and each spins for a while (about 0.1 s) before it sleeps. gputop-trace does no linear algebra, so
  those threads only take cores from the load: on a 2-core machine, a core for the first tens of milliseconds of
  loading a trace.
- ``NUMPY_MADVISE_HUGEPAGE=0``: numpy asks the kernel for transparent huge pages for every array of 4 MiB or more.
  Where the kernel compacts memory to satisfy that advice (``/sys/kernel/mm/transparent_hugepage/defrag`` set to
  ``madvise``, the default of common distributions), an allocation can stall while it does. On this project's
  2-core machine the kernel table, gaps and transfers at 10 M events took 1.7 s or 2.4 s from one run to the next
  with the advice and 1.9 s every time without, and the 1 GB load 2.06 s against 1.81 s (benchmarks/NOTES.md).
  The analyses allocate and free arrays of the trace's length over and over; without the advice each is faulted
  in 4 KiB pages, which costs less here than waiting for compaction.

The command line calls :func:`prepare` before anything imports numpy; it sets each variable only where the user
has not set it. The programs gputop-trace starts (the user's program under ``record`` and ``ncu``, ``nsys
export``, ``ncu --import``) get :func:`user_env`: the environment without what was set here, so the user's
program runs as it would have.
"""

from __future__ import annotations

import os

#: the variables set here, and their values
VARIABLES: dict[str, str] = {"OPENBLAS_NUM_THREADS": "1", "NUMPY_MADVISE_HUGEPAGE": "0"}

_set_here: dict[str, str] = {}


def prepare() -> None:
    """Set :data:`VARIABLES` where the user has not chosen (call before numpy is imported)."""
    for name, value in VARIABLES.items():
        if name not in os.environ:
            os.environ[name] = value
            _set_here[name] = value


def user_env() -> dict[str, str]:
    """This process's environment without what :func:`prepare` set (for the programs it starts)."""
    env = dict(os.environ)
    for name, value in _set_here.items():
        if env.get(name) == value:
            del env[name]
    return env


__all__ = ["VARIABLES", "prepare", "user_env"]
