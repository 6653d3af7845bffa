"""How the command's process ends: without Python's teardown where nothing needs it.

At exit, Python frees every module and every object one by one (a loaded trace's arrays, the analyses' results,
hundreds of modules): 20-40 ms of a ``summary`` as a user times it, with nothing to show for it. When the command
has returned and no other non-daemon thread is running, :func:`end_process` runs the ``atexit`` handlers, flushes
standard output and error, and ends the process at once (``os._exit``) with the command's exit code. Otherwise
(another thread still working, a flush that fails, ``GPUTOP_FULL_EXIT=1``) it exits the usual way
(``sys.exit``), which waits for threads and reports what failed.
"""

from __future__ import annotations

import os
import sys
from typing import NoReturn

#: set to 1 to always exit through Python's teardown (``sys.exit``)
FULL_EXIT_ENV = "GPUTOP_FULL_EXIT"


def end_process(code: int) -> NoReturn:
    """End the process with exit status ``code`` (see the module)."""
    import atexit
    import threading

    main = threading.main_thread()
    others = [t for t in threading.enumerate() if t is not main and t.is_alive() and not t.daemon]
    if others or os.environ.get(FULL_EXIT_ENV, "") in ("1", "true", "yes"):
        sys.exit(code)
    try:
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except BaseException:  # a closed pipe, a failing handler: the usual exit reports it
        sys.exit(code)
    os._exit(code)


__all__ = ["FULL_EXIT_ENV", "end_process"]
