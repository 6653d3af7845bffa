"""The switch of the optional compiled parts (the Chrome scanner, ``parsers/chrome/_fastscan.c``, and the row
packing, ``gputop_trace/model/_rows.c``): ``GPUTOP_PURE_PYTHON=1`` turns every one of them off, so the pure-Python
references run instead. Imports nothing."""

from __future__ import annotations

import os

#: set to 1 (or true, yes) to run the pure-Python references even where the compiled parts are installed
PURE_PYTHON_ENV = "GPUTOP_PURE_PYTHON"


def pure_python_forced() -> bool:
    """Whether :data:`PURE_PYTHON_ENV` asks for the pure-Python references (read at each call)."""
    return os.environ.get(PURE_PYTHON_ENV, "") in ("1", "true", "yes")


__all__ = ["PURE_PYTHON_ENV", "pure_python_forced"]
