"""One BLAS thread for gputop-trace's own process, and the user's environment for the programs it starts.

numpy's BLAS (OpenBLAS in numpy's wheels) starts a thread per core when numpy is imported, and each spins for a
while (about 0.1 s) before it sleeps. gputop-trace does no linear algebra, so those threads only take cores from
the load: on a 2-core machine, a core for the first tens of milliseconds of loading a trace. The command line
calls :func:`single_blas_thread` before anything imports numpy; it sets ``OPENBLAS_NUM_THREADS=1`` only where
the user has not set it. The programs gputop-trace starts (the user's program under ``record`` and ``ncu``,
``nsys export``, ``ncu --import``) get :func:`user_env`: the environment without what was set here, so the user's
program runs with the BLAS threads it would have had.
"""

from __future__ import annotations

import os

#: the variables set here (OpenBLAS reads the first; numpy's wheels use OpenBLAS)
VARIABLES = ("OPENBLAS_NUM_THREADS",)

_set_here: dict[str, str] = {}


def single_blas_thread() -> None:
    """Ask for one BLAS thread, where the user has not chosen (call before numpy is imported)."""
    for name in VARIABLES:
        if name not in os.environ:
            os.environ[name] = "1"
            _set_here[name] = "1"


def user_env() -> dict[str, str]:
    """This process's environment without what :func:`single_blas_thread` set (for the programs it starts)."""
    env = dict(os.environ)
    for name, value in _set_here.items():
        if env.get(name) == value:
            del env[name]
    return env


__all__ = ["VARIABLES", "single_blas_thread", "user_env"]
