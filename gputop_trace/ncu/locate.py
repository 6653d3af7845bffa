"""Where Nsight Compute is: the one rule for finding the ``ncu`` executable, and its ``ncu_report`` Python module.

Every place that runs ncu or reads a report with it (the command line, the drill-down panel, the report reader)
asks :func:`find_ncu`; :func:`import_ncu_report` looks next to the ncu it finds. Nothing here starts a process.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import sys
from typing import Any


def find_ncu() -> str | None:
    """The ncu executable: ``$GPUTOP_NCU``, ``ncu`` on PATH, ``/usr/local/cuda/bin/ncu``, or the newest
    ``/opt/nvidia/nsight-compute/*/ncu``. None when there is none."""
    explicit = os.environ.get("GPUTOP_NCU")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    on_path = shutil.which("ncu")
    if on_path:
        return on_path
    candidates = ["/usr/local/cuda/bin/ncu", *sorted(glob.glob("/opt/nvidia/nsight-compute/*/ncu"), reverse=True)]
    for c in candidates:
        if os.path.isfile(c) and os.access(c, os.X_OK):
            return c
    return None


def ncu_report_folders(ncu_path: str | None = None) -> list[str]:
    """Folders that may hold ncu's own ``ncu_report.py``, most likely first: ``extras/python`` next to the ncu
    executable (``ncu_path``, else :func:`find_ncu`), then those of the installs in the usual places."""
    candidates = []
    exe = ncu_path or find_ncu()
    if exe:
        candidates.append(os.path.join(os.path.dirname(os.path.realpath(exe)), "extras", "python"))
    candidates += sorted(glob.glob("/opt/nvidia/nsight-compute/*/extras/python"), reverse=True)
    candidates += sorted(glob.glob("/usr/local/cuda*/nsight-compute*/extras/python"), reverse=True)
    return candidates


def import_ncu_report(ncu_path: str | None = None) -> Any | None:
    """The ``ncu_report`` module: the installed package, or the copy inside an ncu install
    (:func:`ncu_report_folders`). None when neither can be imported."""
    with contextlib.suppress(Exception):
        import ncu_report

        return ncu_report
    for folder in ncu_report_folders(ncu_path):
        if os.path.isfile(os.path.join(folder, "ncu_report.py")):
            sys.path.insert(0, folder)
            try:
                import ncu_report

                return ncu_report
            except Exception:
                continue
            finally:
                with contextlib.suppress(ValueError):
                    sys.path.remove(folder)
    return None
