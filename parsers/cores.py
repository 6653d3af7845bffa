"""The cores this process may use: its CPU affinity where the system has one (a container or ``taskset`` may give
it fewer than the machine has), else the machine's count."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """How many cores this process may run on (at least 1)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


__all__ = ["usable_cores"]
